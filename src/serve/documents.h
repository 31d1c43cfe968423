/* The texts of a request as documents (document/document.h): paragraphs
 * cut into sentences ("split_sentences": true) or HTML pages ("format":
 * "html"). Their sentences, one document after another, are the job's
 * sentences (serve/job.h), decoded with every other request's in the
 * running batch; each document is then put back together around its
 * sentences' translations. /v1/translate and the LibreTranslate endpoint
 * share it. */
#ifndef TED_SERVE_DOCUMENTS_H
#define TED_SERVE_DOCUMENTS_H

#include "document/document.h"
#include "serve/job.h"

typedef struct serve_documents {
    document **documents;    /* (count) */
    int count;
    const char **sentences;  /* (total): every document's, in order */
    int *first;              /* (count + 1): document i's are [first[i], first[i + 1]) */
    int total;
} serve_documents;

/* Parses texts[0..count) as documents. TED_ERR_INPUT names the text at
 * fault ("text[2]: byte 14: ..."); on failure *d is empty. */
ted_status serve_documents_parse(const char *const *texts, int count,
                                 const document_options *options, serve_documents *d,
                                 ted_error *err);

/* A message of serve_job_new about sentence j ("text[j]: ...") made to name
 * its document and its sentence in it ("text[i], sentence k: ..."). */
void serve_documents_name_sentence(const serve_documents *d, ted_error *err);

/* Document i rebuilt with the k-th hypothesis of each of its sentences,
 * from `job`, whose sentences are d's. *out malloc'ed. */
ted_status serve_documents_render(const serve_documents *d, const serve_job *job, int i, int k,
                                  char **out, ted_error *err);

/* {"translations": [...]}: one string per document, its best hypotheses.
 * malloc'ed; NULL when out of memory. */
char *serve_documents_answer(const serve_documents *d, const serve_job *job);

void serve_documents_free(serve_documents *d);

#endif
