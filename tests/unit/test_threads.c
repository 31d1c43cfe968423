/* One model shared by several threads: the model is loaded once and is
 * read-only, each thread decodes through sessions of its own, and what every
 * thread gets is exactly what one thread alone gets. Five threads (the main
 * one and four more) translate the same sentences and different ones at
 * once, with greedy decoding, beam search and sampling through
 * ted_translate_n_best, and greedy decoding step by step through their own
 * ted_session. Run once with the matrix products on one thread, once
 * with ted_set_threads(2): then the process-wide worker pool serves one
 * session at a time and the others compute on their own thread, and once
 * more with every other thread on a pool of its own (ted_threads, as each
 * model of ted serve), 2 threads each. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ted/ted.h"

#define MODEL_DIR "models/toy-en-fr"

enum { SENTENCES = 12, THREADS = 4, ROUNDS = 2, STRATEGIES = 3, N_BEST = 2 };

static const char *const sentences[SENTENCES] = {
    "the black cat eats the small bird .",
    "my sister did not see the old green car .",
    "she thinks that the queen will not sing .",
    "the dog sleeps .",
    "the little cat sleeps .",
    "his brother will read a long book .",
    "the zorglub and the cat .",
    "",
    "we did not eat the red apples .",
    "the queen sings and the king sleeps .",
    "their children saw the white horse .",
    "the old man will not drink the water .",
};

/* A call to ted_translate_n_best: `count` sentences from `first` on
 * (wrapping around), decoded with one strategy. */
typedef struct job {
    int strategy, first, count;
} job;

/* What one thread alone gets: the translations of every job of every
 * thread (index 0 is the main thread), and the ids of step-by-step greedy
 * decoding of each sentence. */
typedef struct expected {
    ted_translation translations[THREADS + 1][ROUNDS][STRATEGIES][SENTENCES * N_BEST];
    int *greedy_ids[SENTENCES];
    int greedy_lengths[SENTENCES];
} expected;

static ted_model *model;
static expected *reference;
static bool odd_threads_beside;  /* the odd-numbered threads compute on pools of their own */

static ted_translate_options strategy_options(int strategy)
{
    ted_translate_options o = ted_translate_default_options();
    o.batch_size = 5;  /* several batches of mixed lengths */
    if (strategy == 1) {
        o.decode.strategy = TED_DECODE_BEAM;
        o.decode.beam.beam_size = 3;
        o.decode.n_best = N_BEST;
    } else if (strategy == 2) {
        o.decode.strategy = TED_DECODE_SAMPLE;
        o.decode.sampling.seed = 20240611;
        o.decode.sampling.top_k = 10;
        o.decode.n_best = N_BEST;
    }
    return o;
}

static int n_best_of(int strategy)
{
    return strategy == 0 ? 1 : N_BEST;
}

/* Thread `index`'s job `k` of round `round`: each thread starts at another
 * sentence and decodes all of them or fewer, so at any moment threads decode
 * the same sentences and different ones, in batches of their own. */
static job job_of(int index, int round, int k)
{
    return (job){.strategy = (index + round + k) % STRATEGIES,
                 .first = (index * 5 + round * 3) % SENTENCES,
                 .count = round == 0 ? SENTENCES : SENTENCES - index};
}

static ted_status translate(job j, ted_translation *out, ted_error *err)
{
    const char *batch[SENTENCES];
    for (int i = 0; i < j.count; i++)
        batch[i] = sentences[(j.first + i) % SENTENCES];
    ted_translate_options o = strategy_options(j.strategy);
    return ted_translate_n_best(model, batch, j.count, &o, out, NULL, err);
}

/* Greedy decoding of one sentence alone, through `session`. */
static ted_status greedy_one(ted_session *session, int sentence, int **ids, int *length,
                             ted_error *err)
{
    int *source = NULL, source_length = 0;
    ted_status s = ted_encode_source(model, sentences[sentence], &source, &source_length, NULL,
                                     err);
    if (s)
        return s;
    const int *sources[1] = {source};
    int max_length = ted_max_target_length(model, source_length, 0);
    ted_batch batch = {.source_ids = sources, .source_lengths = &source_length,
                       .max_lengths = &max_length, .count = 1};
    ted_decode_options greedy = {.strategy = TED_DECODE_GREEDY, .n_best = 1};
    ted_hypothesis h;
    s = ted_decode(session, &batch, &greedy, NULL, &h, err);
    free(source);
    if (s)
        return s;
    *ids = h.ids;
    *length = h.length;
    free(h.log_probs);
    return TED_OK;
}

static void load_and_compute_reference(int pool_threads)
{
    ted_set_threads(pool_threads);
    ted_error err = {0};
    cr_assert_eq(ted_model_load(MODEL_DIR, &model, &err), TED_OK, "%s", err.message);
    reference = calloc(1, sizeof *reference);
    cr_assert_not_null(reference);
    for (int t = 0; t <= THREADS; t++)
        for (int round = 0; round < ROUNDS; round++)
            for (int k = 0; k < STRATEGIES; k++)
                cr_assert_eq(translate(job_of(t, round, k), reference->translations[t][round][k],
                                       &err),
                             TED_OK, "%s", err.message);
    ted_session *session = NULL;
    cr_assert_eq(ted_session_new(model, &session, &err), TED_OK, "%s", err.message);
    for (int i = 0; i < SENTENCES; i++)
        cr_assert_eq(greedy_one(session, i, &reference->greedy_ids[i],
                                &reference->greedy_lengths[i], &err),
                     TED_OK, "%s", err.message);
    ted_session_free(session);
    /* The reference is worth comparing against: real translations. */
    job j = job_of(0, 0, 0);
    cr_assert_eq(j.strategy, 0);
    cr_assert_eq(j.first, 0);
    cr_assert_str_eq(reference->translations[0][0][0][0].text,
                     "le chat noir mange le petit oiseau .");
    cr_assert_str_eq(reference->translations[0][0][0][7].text, "");
    cr_assert_gt(reference->greedy_lengths[3], 1);
}

static void free_reference(void)
{
    for (int t = 0; t <= THREADS; t++)
        for (int round = 0; round < ROUNDS; round++)
            for (int k = 0; k < STRATEGIES; k++)
                ted_translations_free(reference->translations[t][round][k], SENTENCES * N_BEST);
    for (int i = 0; i < SENTENCES; i++)
        free(reference->greedy_ids[i]);
    free(reference);
    reference = NULL;
    ted_model_free(model);
    model = NULL;
    ted_set_threads(1);
}

/* What a thread found wrong, for the main thread to report: Criterion's
 * assertions belong to the test's own thread. */
typedef struct worker {
    pthread_t thread;
    int index;
    int checked;       /* translations compared with the reference */
    char failure[2 * TED_ERROR_MESSAGE_SIZE];
} worker;

static bool same_translation(const ted_translation *a, const ted_translation *b)
{
    const ted_hypothesis *x = &a->hypothesis, *y = &b->hypothesis;
    if (strcmp(a->text, b->text) != 0 || x->length != y->length)
        return false;
    return x->length == 0 ||  /* a blank sentence: no ids at all */
           (memcmp(x->ids, y->ids, sizeof *x->ids * (size_t)x->length) == 0 &&
            memcmp(x->log_probs, y->log_probs, sizeof *x->log_probs * (size_t)x->length) == 0);
}

static void *work(void *arg)
{
    worker *w = arg;
    ted_error err = {0};
    ted_threads *pool = NULL;
    if (odd_threads_beside && w->index % 2 == 1) {
        if (ted_threads_new(2, &pool, &err) != TED_OK) {
            snprintf(w->failure, sizeof w->failure, "threads: %s", err.message);
            return NULL;
        }
        ted_threads_use(pool);
    }
    ted_translation out[SENTENCES * N_BEST];
    ted_session *session = NULL;
    if (ted_session_new(model, &session, &err) != TED_OK) {
        snprintf(w->failure, sizeof w->failure, "session: %s", err.message);
        return NULL;
    }
    for (int round = 0; round < ROUNDS && !w->failure[0]; round++) {
        for (int k = 0; k < STRATEGIES && !w->failure[0]; k++) {
            job j = job_of(w->index, round, k);
            int n = n_best_of(j.strategy);
            if (translate(j, out, &err) != TED_OK) {
                snprintf(w->failure, sizeof w->failure, "translate: %s", err.message);
                break;
            }
            const ted_translation *want = reference->translations[w->index][round][k];
            for (int i = 0; i < j.count * n && !w->failure[0]; i++) {
                if (same_translation(&out[i], &want[i]))
                    w->checked++;
                else
                    snprintf(w->failure, sizeof w->failure,
                             "strategy %d, sentence %d, hypothesis %d: '%s', alone '%s'",
                             j.strategy, (j.first + i / n) % SENTENCES, i % n, out[i].text,
                             want[i].text);
            }
            ted_translations_free(out, j.count * n);
        }
        for (int i = 0; i < SENTENCES && !w->failure[0]; i++) {
            int sentence = (w->index + i) % SENTENCES, *ids = NULL, length = 0;
            if (greedy_one(session, sentence, &ids, &length, &err) != TED_OK) {
                snprintf(w->failure, sizeof w->failure, "greedy: %s", err.message);
            } else if (length != reference->greedy_lengths[sentence] ||
                       memcmp(ids, reference->greedy_ids[sentence], sizeof *ids * length) != 0) {
                snprintf(w->failure, sizeof w->failure,
                         "step-by-step greedy of sentence %d: %d tokens, alone %d", sentence,
                         length, reference->greedy_lengths[sentence]);
            } else {
                w->checked++;
            }
            free(ids);
        }
    }
    ted_session_free(session);
    ted_threads_use(NULL);
    ted_threads_free(pool);
    return NULL;
}

static void run_threads(void)
{
    worker workers[THREADS + 1];
    memset(workers, 0, sizeof workers);
    for (int t = 0; t < THREADS; t++) {
        workers[t].index = t + 1;
        cr_assert_eq(pthread_create(&workers[t].thread, NULL, work, &workers[t]), 0);
    }
    work(&workers[THREADS]);  /* the main thread works too, as index 0 */
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_join(workers[t].thread, NULL), 0);
    int expected_checks[THREADS + 1];
    for (int t = 0; t <= THREADS; t++) {
        int checks = 0;
        for (int round = 0; round < ROUNDS; round++) {
            for (int k = 0; k < STRATEGIES; k++) {
                job j = job_of(workers[t].index, round, k);
                checks += j.count * n_best_of(j.strategy);
            }
            checks += SENTENCES;
        }
        expected_checks[t] = checks;
    }
    for (int t = 0; t <= THREADS; t++) {
        cr_expect_str_empty(workers[t].failure, "thread %d: %s", workers[t].index,
                            workers[t].failure);
        cr_expect_eq(workers[t].checked, expected_checks[t], "thread %d compared %d, not %d",
                     workers[t].index, workers[t].checked, expected_checks[t]);
    }
}

Test(threads, sessions_of_one_model_translate_at_once, .timeout = 600)
{
    load_and_compute_reference(1);
    run_threads();
    free_reference();
}

Test(threads, sessions_share_the_worker_pool, .timeout = 600)
{
    load_and_compute_reference(2);
    run_threads();
    free_reference();
}

Test(threads, sessions_compute_on_pools_of_their_own, .timeout = 600)
{
    load_and_compute_reference(2);
    odd_threads_beside = true;
    run_threads();
    free_reference();
}
