/* How ted_translate_ids splits its sentences into batches and spreads them
 * over workers: the batches' sizes, seen through the progress callback
 * (called once a batch), against sizes worked out by hand from the rule of
 * ted.h (sentences sorted by length; at most batch_size sentences and at
 * most max_batch_tokens source tokens, padding counted: sentences x the
 * longest; a longer sentence alone); and the translations of token
 * batches on several workers against each sentence decoded alone. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ted/ted.h"

#define MODEL_DIR "models/toy-en-fr"

enum { SENTENCES = 40, N_BEST = 2, MAX_STEPS = 16 };

static ted_model *model;

static void load_model(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_model_load(MODEL_DIR, &model, &err), TED_OK, "%s", err.message);
}

static void free_model(void)
{
    ted_model_free(model);
}

TestSuite(batches, .init = load_model, .fini = free_model);

/* The progress callback's calls: the sentences done after each batch. */
typedef struct progress_log {
    pthread_mutex_t lock;
    int done[SENTENCES + 1];
    int calls;
} progress_log;

static void record(void *data, int done, int total)
{
    progress_log *p = data;
    (void)total;
    pthread_mutex_lock(&p->lock);
    if (p->calls <= SENTENCES)
        p->done[p->calls++] = done;
    pthread_mutex_unlock(&p->lock);
}

/* Translates sentences of the given source lengths (ids of one word
 * repeated) and checks the batch sizes, in the order decoded. */
static void check_batches(const int *lengths, int count, ted_translate_options o,
                          const int *sizes, int batches)
{
    int *ids[SENTENCES];
    for (int i = 0; i < count; i++) {
        ids[i] = malloc(sizeof(int) * lengths[i]);
        for (int k = 0; k < lengths[i]; k++)
            ids[i][k] = 5 + (i + k) % 7;
    }
    progress_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
    o.progress = record;
    o.progress_data = &log;
    o.max_length = 3;
    ted_translation out[SENTENCES];
    ted_error err = {0};
    cr_assert_eq(ted_translate_ids(model, (const int *const *)ids, lengths, count, &o, out,
                                   &err), TED_OK, "%s", err.message);
    cr_assert_eq(log.calls, batches, "%d batches, expected %d", log.calls, batches);
    for (int b = 0, done = 0; b < batches; b++) {
        done += sizes[b];
        cr_assert_eq(log.done[b], done, "batch %d: %d done, expected %d", b, log.done[b], done);
    }
    ted_translations_free(out, count);
    for (int i = 0; i < count; i++)
        free(ids[i]);
}

Test(batches, hold_at_most_max_batch_tokens_padding_counted)
{
    /* sorted: 3 3 4 | 5 5 | 5 | 9 | 12: three of 4 tokens are 12, a fourth
     * sentence of 5 would make 20; two of 5 are 10, three 15; 5 + 9 makes
     * 2 x 9 = 18; 12 fits alone */
    static const int lengths[] = {12, 3, 5, 9, 3, 5, 4, 5};
    static const int sizes[] = {3, 2, 1, 1, 1};
    ted_translate_options o = ted_translate_default_options();
    o.max_batch_tokens = 12;
    check_batches(lengths, 8, o, sizes, 5);
}

Test(batches, the_padding_counts)
{
    /* 3 3 | 6: the three make 3 x 6 = 18 tokens with padding, 12 without */
    static const int lengths[] = {6, 3, 3};
    static const int sizes[] = {2, 1};
    ted_translate_options o = ted_translate_default_options();
    o.max_batch_tokens = 12;
    check_batches(lengths, 3, o, sizes, 2);
}

Test(batches, a_sentence_longer_than_the_bound_goes_alone)
{
    static const int lengths[] = {7, 3, 30, 3};
    static const int sizes[] = {2, 1, 1};  /* 3 3 | 7 | 30 */
    ted_translate_options o = ted_translate_default_options();
    o.max_batch_tokens = 6;
    check_batches(lengths, 4, o, sizes, 3);
}

Test(batches, batch_size_bounds_the_sentences_too)
{
    static const int lengths[] = {4, 4, 4, 4, 4, 4, 4};
    static const int sizes[] = {3, 3, 1};
    ted_translate_options o = ted_translate_default_options();
    o.max_batch_tokens = 1000;
    o.batch_size = 3;
    check_batches(lengths, 7, o, sizes, 3);
}

Test(batches, without_a_token_bound_batch_size_alone)
{
    static const int lengths[] = {40, 3, 3, 20, 9};
    static const int sizes[] = {2, 2, 1};
    ted_translate_options o = ted_translate_default_options();
    o.batch_size = 2;
    check_batches(lengths, 5, o, sizes, 3);
}

Test(batches, every_batch_reported_once_with_workers)
{
    static const int lengths[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    ted_translate_options o = ted_translate_default_options();
    o.batch_size = 1;
    o.workers = 3;
    int sizes[12];
    for (int i = 0; i < 12; i++)
        sizes[i] = 1;  /* done rises by one a call, whichever worker calls */
    check_batches(lengths, 12, o, sizes, 12);
}

Test(batches, options_refused)
{
    ted_translate_options o = ted_translate_default_options();
    ted_error err = {0};
    o.workers = 0;
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "workers"), "%s", err.message);
    o = ted_translate_default_options();
    o.max_batch_tokens = -1;
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "batch tokens"), "%s", err.message);
}

Test(batches, workers_for_a_small_model)
{
    /* the toy model's decoder layer: d_model 128, d_ff 512 */
    cr_assert_eq(ted_translate_workers(model, 1), 1);
    cr_assert_eq(ted_translate_workers(model, 2), 2);
    cr_assert_eq(ted_translate_workers(model, 16), 16);
}

/* The first SENTENCES lines of the toy model's test set. */
static int read_sentences(char **lines)
{
    FILE *f = fopen(MODEL_DIR "/test.en", "r");
    cr_assert_not_null(f);
    char buffer[1024];
    int n = 0;
    while (n < SENTENCES && fgets(buffer, sizeof buffer, f)) {
        buffer[strcspn(buffer, "\n")] = '\0';
        lines[n++] = strdup(buffer);
    }
    fclose(f);
    return n;
}

static void translate(char **lines, int n, ted_translate_options o, ted_translation *out)
{
    ted_error err = {0};
    cr_assert_eq(ted_translate_n_best(model, (const char *const *)lines, n, &o, out, NULL,
                                      &err), TED_OK, "%s", err.message);
}

/* Token batches on three workers give each sentence's hypotheses exactly as
 * decoding it alone does, for greedy decoding, beam search and sampling. */
Test(batches, token_batches_on_workers_as_each_sentence_alone)
{
    char *lines[SENTENCES];
    int n = read_sentences(lines);
    lines[7][0] = '\0';  /* a blank line among them */
    static ted_translation alone[SENTENCES * N_BEST], batched[SENTENCES * N_BEST];
    for (int strategy = 0; strategy < 3; strategy++) {
        ted_translate_options o = ted_translate_default_options();
        o.max_length = MAX_STEPS;
        if (strategy == 1) {
            o.decode.strategy = TED_DECODE_BEAM;
            o.decode.beam.beam_size = 3;
            o.decode.n_best = N_BEST;
        } else if (strategy == 2) {
            o.decode.strategy = TED_DECODE_SAMPLE;
            o.decode.sampling.seed = 7;
            o.decode.n_best = N_BEST;
        }
        ted_translate_options one = o, many = o;
        one.batch_size = 1;
        many.max_batch_tokens = 60;
        many.batch_size = 4096;
        many.workers = 3;
        translate(lines, n, one, alone);
        translate(lines, n, many, batched);
        int total = n * o.decode.n_best;
        for (int i = 0; i < total; i++) {
            const ted_hypothesis *a = &alone[i].hypothesis, *b = &batched[i].hypothesis;
            cr_assert_str_eq(batched[i].text, alone[i].text, "strategy %d, %d", strategy, i);
            cr_assert_eq(b->length, a->length, "strategy %d, hypothesis %d", strategy, i);
            for (int k = 0; k < a->length; k++)
                cr_assert_eq(b->ids[k], a->ids[k], "strategy %d, hypothesis %d", strategy, i);
            cr_assert_eq(b->log_prob, a->log_prob, "strategy %d, hypothesis %d", strategy, i);
        }
        ted_translations_free(alone, total);
        ted_translations_free(batched, total);
    }
    for (int i = 0; i < n; i++)
        free(lines[i]);
}
