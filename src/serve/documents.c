/* A request's texts as documents (serve/documents.h). */
#include "serve/documents.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ted/util.h"

ted_status serve_documents_parse(const char *const *texts, int count,
                                 const document_options *options, serve_documents *d,
                                 ted_error *err)
{
    size_t room = count > 0 ? (size_t)count : 1;
    *d = (serve_documents){.documents = ted_alloc(room, sizeof *d->documents, "documents", err),
                           .first = ted_alloc(room + 1, sizeof *d->first, "documents", err)};
    ted_status s = d->documents && d->first ? TED_OK : TED_ERR_NOMEM;
    for (int i = 0; !s && i < count; i++, d->count++) {
        if ((s = document_parse(texts[i], strlen(texts[i]), options, &d->documents[i], err)))
            ted_fail_context(err, "text[%d]", i);
        else
            d->total += document_sentence_count(d->documents[i]);
    }
    if (!s && !(d->sentences = ted_alloc(d->total > 0 ? (size_t)d->total : 1,
                                         sizeof *d->sentences, "documents", err)))
        s = TED_ERR_NOMEM;
    for (int i = 0, at = 0; !s && i < count; i++) {
        d->first[i] = at;
        for (int k = 0; k < document_sentence_count(d->documents[i]); k++)
            d->sentences[at++] = document_sentences(d->documents[i])[k];
        d->first[i + 1] = at;
    }
    if (s)
        serve_documents_free(d);
    return s;
}

void serve_documents_name_sentence(const serve_documents *d, ted_error *err)
{
    int j, skip = 0;
    if (!err || sscanf(err->message, "text[%d]: %n", &j, &skip) != 1 || skip == 0 || j < 0 ||
        j >= d->total)
        return;
    int i = 0;
    while (i + 1 < d->count && d->first[i + 1] <= j)
        i++;
    memmove(err->message, err->message + skip, strlen(err->message + skip) + 1);
    ted_fail_context(err, "text[%d], sentence %d", i, j - d->first[i]);
}

ted_status serve_documents_render(const serve_documents *d, const serve_job *job, int i, int k,
                                  char **out, ted_error *err)
{
    int n = d->first[i + 1] - d->first[i], n_best = job->options.decode.n_best;
    const char **texts = ted_alloc(n > 0 ? (size_t)n : 1, sizeof *texts, "translations", err);
    if (!texts)
        return TED_ERR_NOMEM;
    for (int j = 0; j < n; j++)
        texts[j] = job->outputs[(size_t)(d->first[i] + j) * n_best + k].text;
    ted_status s = document_render(d->documents[i], texts, out, NULL, err);
    free(texts);
    return s;
}

char *serve_documents_answer(const serve_documents *d, const serve_job *job)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *all = root ? cJSON_AddArrayToObject(root, "translations") : NULL;
    for (int i = 0; all && i < d->count; i++) {
        char *text = NULL;
        cJSON *item = serve_documents_render(d, job, i, 0, &text, NULL) ? NULL
                                                                         : cJSON_CreateString(text);
        free(text);
        if (!item || !cJSON_AddItemToArray(all, item)) {
            cJSON_Delete(item);
            all = NULL;
        }
    }
    char *json = all ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return json;
}

void serve_documents_free(serve_documents *d)
{
    for (int i = 0; d->documents && i < d->count; i++)
        document_free(d->documents[i]);
    free(d->documents);
    free(d->sentences);
    free(d->first);
    *d = (serve_documents){0};
}
