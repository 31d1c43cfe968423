/* Text in, text out: tokenize, decode in batches of similar length, detokenize. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/tokenizer.h"
#include "model/session.h"

ted_status ted_encode_source(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    int unknown_count = 0;
    ted_status s = ted_tokenize(&m->config, &m->src_vocab, text, strlen(text), ids, count,
                                &unknown_count, err);
    if (unknown)
        *unknown = unknown_count;
    return s;
}

ted_status ted_encode_target(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    ted_config unwrapped = m->config;
    unwrapped.source_bos_eos = false;
    int unknown_count = 0;
    ted_status s = ted_tokenize(&unwrapped, &m->tgt_vocab, text, strlen(text), ids, count,
                                &unknown_count, err);
    if (unknown)
        *unknown = unknown_count;
    return s;
}

char *ted_decode_target(const ted_model *m, const int *ids, int count)
{
    return ted_detokenize(&m->config, &m->tgt_vocab, ids, count);
}

const char *ted_target_token(const ted_model *m, int id)
{
    const char *t = ted_vocab_token(&m->tgt_vocab, id);
    return t ? t : "";
}

const char *ted_source_token(const ted_model *m, int id)
{
    const char *t = ted_vocab_token(&m->src_vocab, id);
    return t ? t : "";
}

int ted_target_id(const ted_model *m, const char *token)
{
    return ted_vocab_lookup(&m->tgt_vocab, token, strlen(token));
}

void ted_set_threads(int threads)
{
    ted_parallel_set_threads(threads);
}

ted_translate_options ted_translate_default_options(void)
{
    return (ted_translate_options){.batch_size = 32, .max_length = 0};
}

/* A source that tokenizes to nothing, or to BOS EOS alone, translates to
 * the empty string without running the model. */
static bool is_blank(const ted_model *m, int count)
{
    int wrap = m->config.source_bos_eos ? 2 : 0;
    return count <= wrap;
}

typedef struct source_batch {
    int **ids;      /* (count): token ids of each sentence */
    int *lengths;   /* (count) */
    int *order;     /* (ordered): the non-blank sentences, shortest first */
    int ordered;
} source_batch;

typedef struct length_index {
    int length;
    int index;
} length_index;

static int by_length(const void *a, const void *b)
{
    const length_index *x = a, *y = b;
    if (x->length != y->length)
        return (x->length > y->length) - (x->length < y->length);
    return (x->index > y->index) - (x->index < y->index);
}

static void free_sources(source_batch *src, int count)
{
    for (int i = 0; src->ids && i < count; i++)
        free(src->ids[i]);
    free(src->ids);
    free(src->lengths);
    free(src->order);
}

/* Sentences of similar length decode together: less padding, and batches
 * of short sentences finish early. */
static ted_status order_by_length(source_batch *src, ted_error *err)
{
    length_index *keys = ted_alloc(src->ordered, sizeof *keys, "sentence order", err);
    if (!keys)
        return TED_ERR_NOMEM;
    for (int k = 0; k < src->ordered; k++)
        keys[k] = (length_index){src->lengths[src->order[k]], src->order[k]};
    qsort(keys, src->ordered, sizeof *keys, by_length);
    for (int k = 0; k < src->ordered; k++)
        src->order[k] = keys[k].index;
    free(keys);
    return TED_OK;
}

static ted_status tokenize_all(const ted_model *m, const char *const *sources, int count,
                               source_batch *src, int *unknown, ted_error *err)
{
    src->ids = ted_alloc(count, sizeof(int *), "sources", err);
    src->lengths = ted_alloc(count, sizeof(int), "sources", err);
    src->order = ted_alloc(count, sizeof(int), "sources", err);
    if (!src->ids || !src->lengths || !src->order)
        return TED_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        int unknown_words = 0;
        ted_status s = ted_encode_source(m, sources[i], &src->ids[i], &src->lengths[i],
                                         &unknown_words, err);
        if (s)
            return ted_fail_context(err, "sentence %d", i + 1);
        if (unknown)
            unknown[i] = unknown_words;
        if (!is_blank(m, src->lengths[i]))
            src->order[src->ordered++] = i;
    }
    return order_by_length(src, err);
}

/* Decodes sentences order[first .. first + n) together and writes their
 * text into outputs. */
static ted_status translate_batch(ted_session *session, const source_batch *src, int first,
                                  int n, int max_length, char **outputs, ted_error *err)
{
    const ted_model *m = session->model;
    const int **ids_of = ted_alloc(n, sizeof *ids_of, "batch", err);
    int **decoded = ted_alloc(n, sizeof *decoded, "batch", err);
    int *lengths = ted_alloc(3 * (size_t)n, sizeof(int), "batch", err);
    ted_status s = ids_of && decoded && lengths ? TED_OK : TED_ERR_NOMEM;
    if (!s) {
        int *max_lengths = lengths + n, *output_lengths = lengths + 2 * n;
        for (int k = 0; k < n; k++) {
            int i = src->order[first + k];
            ids_of[k] = src->ids[i];
            lengths[k] = src->lengths[i];
            max_lengths[k] = ted_max_target_length(m, lengths[k], max_length);
        }
        s = ted_greedy_decode(session, ids_of, lengths, max_lengths, n, decoded,
                              output_lengths, err);
        for (int k = 0; k < n && !s; k++) {
            int i = src->order[first + k];
            outputs[i] = ted_decode_target(m, decoded[k], output_lengths[k]);
            if (!outputs[i])
                s = ted_fail(err, TED_ERR_NOMEM, "sentence %d: out of memory", i + 1);
        }
        for (int k = 0; k < n; k++)
            free(decoded[k]);
    }
    free(ids_of);
    free(decoded);
    free(lengths);
    return s;
}

ted_status ted_translate(const ted_model *m, const char *const *sources, int count,
                         const ted_translate_options *options, char **outputs, int *unknown,
                         ted_error *err)
{
    ted_translate_options o = options ? *options : ted_translate_default_options();
    if (o.batch_size < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: batch size %d", o.batch_size);
    for (int i = 0; i < count; i++)
        outputs[i] = NULL;

    source_batch src = {0};
    ted_session *session = NULL;
    ted_status s = tokenize_all(m, sources, count, &src, unknown, err);
    if (!s)
        s = ted_session_new(m, &session, err);
    for (int first = 0; !s && first < src.ordered; first += o.batch_size) {
        int n = src.ordered - first < o.batch_size ? src.ordered - first : o.batch_size;
        s = translate_batch(session, &src, first, n, o.max_length, outputs, err);
    }
    for (int i = 0; !s && i < count; i++)
        if (!outputs[i] && !(outputs[i] = calloc(1, 1)))
            s = ted_fail(err, TED_ERR_NOMEM, "out of memory");
    if (s)
        for (int i = 0; i < count; i++) {
            free(outputs[i]);
            outputs[i] = NULL;
        }
    ted_session_free(session);
    free_sources(&src, count);
    return s;
}
