/* ted_cancel: a decode whose flag is requested stops at its next step or
 * batch with TED_ERR_CANCELLED, and what it ran on stays usable. The
 * references are PyTorch's: the tiny model's teacher-forced logits and its
 * greedy decode (tests/unit/layer_fixtures.h), and the toy model's
 * translation of "the dog sleeps .". Under the sanitized build (make check
 * SAN=1) LeakSanitizer checks that a cancelled call leaves nothing
 * allocated. */
#include <criterion/criterion.h>
#include <string.h>

#include "decode.h"
#include "float_check.h"
#include "layer_fixtures.h"
#include "ted/ted.h"

#define TOY_DIR "models/toy-en-fr"

static ted_model *load(const char *dir)
{
    ted_model *model = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_model_load(dir, &model, &err), TED_OK, "%s: %s", dir, err.message);
    return model;
}

static ted_cancel *new_cancel(void)
{
    ted_cancel *cancel = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_cancel_new(&cancel, &err), TED_OK, "%s", err.message);
    cr_assert(!ted_cancel_requested(cancel));
    return cancel;
}

static ted_session *watching_session(const ted_model *model, const ted_cancel *cancel)
{
    ted_session *s = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_new(model, &s, &err), TED_OK, "%s", err.message);
    ted_session_watch(s, cancel);
    return s;
}

/* Step t of the tiny model's source 0, fed its target token t, against
 * PyTorch's logits. */
static void step_matches_pytorch(ted_session *s, int t)
{
    const float *logits = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_step(s, &tiny_tgt0[t], &logits, &err), TED_OK, "step %d: %s", t,
                 err.message);
    float_diff d = max_abs_diff(logits, tiny_logits0 + (size_t)t * TINY_TGT_VOCAB,
                                TINY_TGT_VOCAB);
    cr_assert(d.max <= 1e-4, "step %d: max abs diff %.3g from PyTorch", t, d.max);
}

Test(cancel, a_requested_step_fails_and_the_session_goes_on)
{
    ted_model *model = load(TINY_DIR);
    ted_cancel *cancel = new_cancel();
    ted_session *s = watching_session(model, cancel);
    const int *ids[1] = {tiny_src0};
    int length = TINY_SRC0_LEN;
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(s, ids, &length, 1, TINY_STEPS, &err), TED_OK);
    step_matches_pytorch(s, 0);

    ted_cancel_request(cancel);
    cr_assert(ted_cancel_requested(cancel));
    const float *logits = NULL;
    cr_assert_eq(ted_session_step(s, &tiny_tgt0[1], &logits, &err), TED_ERR_CANCELLED);
    cr_assert(strstr(err.message, "cancelled before step 2"), "%s", err.message);
    cr_assert_str_eq(ted_status_name(TED_ERR_CANCELLED), "cancelled");
    cr_assert_eq(ted_session_position(s), 1, "the cancelled step moved the session");
    cr_assert_eq(ted_session_encode(s, ids, &length, 1, TINY_STEPS, &err), TED_ERR_CANCELLED);
    cr_assert(strstr(err.message, "cancelled before the encoder"), "%s", err.message);

    /* withdrawn: the decode goes on where it stopped */
    ted_cancel_reset(cancel);
    for (int t = 1; t < TINY_STEPS; t++)
        step_matches_pytorch(s, t);
    ted_session_free(s);
    ted_cancel_free(cancel);
    ted_model_free(model);
}

typedef struct stop_at {
    ted_cancel *cancel;
    int length;   /* request the stop once a step of this length is reported */
    int longest;  /* the longest step reported */
} stop_at;

static void stop_at_length(void *data, const ted_beam_step *step)
{
    stop_at *at = data;
    if (step->length > at->longest)
        at->longest = step->length;
    if (step->length >= at->length)
        ted_cancel_request(at->cancel);
}

/* The tiny model's greedy decode runs to its limit of 11 tokens: beam
 * search asked to stop after 3 reports no step after the third, and the
 * same session then decodes PyTorch's greedy tokens. */
Test(cancel, beam_search_stops_between_steps)
{
    ted_model *model = load(TINY_DIR);
    ted_cancel *cancel = new_cancel();
    ted_session *s = watching_session(model, cancel);
    int max_length = TINY_GREEDY0_LEN;
    const int *ids[1] = {tiny_src0};
    int length = TINY_SRC0_LEN;
    stop_at at = {cancel, 3, 0};
    ted_beam_trace trace = {stop_at_length, &at};
    ted_beam_params params = {.beam_size = 2, .length_penalty = 0.0f};
    ted_hypothesis h[1];
    ted_error err = {0};
    cr_assert_eq(decode_beam(s, BATCH(ids, &length, &max_length, 1), &params, 1, &trace, h, &err),
                 TED_ERR_CANCELLED, "%s", err.message);
    cr_assert_eq(at.longest, 3, "steps went on to length %d", at.longest);
    cr_assert_null(h[0].ids, "a cancelled decode left a hypothesis");
    cr_assert_eq(h[0].length, 0);

    ted_cancel_reset(cancel);
    cr_assert_eq(decode_greedy(s, BATCH(ids, &length, &max_length, 1), h, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(h[0].length, TINY_GREEDY0_LEN);
    cr_assert_arr_eq(h[0].ids, tiny_greedy0, sizeof(int) * TINY_GREEDY0_LEN);
    ted_hypotheses_free(h, 1);
    ted_session_free(s);
    ted_cancel_free(cancel);
    ted_model_free(model);
}

typedef struct progress_stop {
    ted_cancel *cancel;
    int calls;
    int done;
} progress_stop;

static void stop_after_a_batch(void *data, int done, int total)
{
    (void)total;
    progress_stop *p = data;
    p->calls++;
    p->done = done;
    ted_cancel_request(p->cancel);
}

enum { SENTENCES = 96, BATCH_SIZE = 8 };

/* Translates SENTENCES copies of one sentence, BATCH_SIZE a batch, on
 * `workers`, the progress callback requesting the stop after the first
 * batch: the call fails with nothing to free, before the last batch. */
static void translate_stops(const ted_model *model, ted_cancel *cancel, int workers)
{
    const char *sources[SENTENCES];
    for (int i = 0; i < SENTENCES; i++)
        sources[i] = "the black cat eats the small bird .";
    progress_stop p = {cancel, 0, 0};
    ted_translate_options o = ted_translate_model_options(model);
    o.batch_size = BATCH_SIZE;
    o.workers = workers;
    o.decode.strategy = TED_DECODE_BEAM;
    o.decode.beam.beam_size = 4;
    o.progress = stop_after_a_batch;
    o.progress_data = &p;
    ted_translate_call call = {&o, cancel};
    static ted_translation out[SENTENCES];
    ted_error err = {0};
    ted_cancel_reset(cancel);
    cr_assert_eq(ted_translate_n_best_cancellable(model, sources, SENTENCES, &call, out, NULL,
                                                  &err),
                 TED_ERR_CANCELLED, "%d workers: %s", workers, err.message);
    cr_assert(strstr(err.message, "cancelled"), "%s", err.message);
    cr_assert_lt(p.done, SENTENCES, "%d workers: all %d sentences done", workers, p.done);
    if (workers == 1)
        cr_assert_eq(p.calls, 1, "batches went on after the stop");
    for (int i = 0; i < SENTENCES; i++)
        cr_assert(!out[i].text && !out[i].hypothesis.ids, "sentence %d left allocated", i);
}

Test(cancel, translate_stops_between_batches)
{
    ted_model *model = load(TOY_DIR);
    ted_cancel *cancel = new_cancel();
    translate_stops(model, cancel, 1);
    translate_stops(model, cancel, 2);

    /* the ids function, its flag requested: nothing decodes */
    int *ids = NULL, count = 0;
    ted_error err = {0};
    cr_assert_eq(ted_encode_source(model, "the dog sleeps .", &ids, &count, NULL, &err), TED_OK);
    const int *const all[1] = {ids};
    ted_translation out[1];
    ted_translate_call call = {NULL, cancel};
    cr_assert_eq(ted_translate_ids_cancellable(model, all, &count, 1, &call, out, &err),
                 TED_ERR_CANCELLED, "%s", err.message);

    /* withdrawn: the same flag lets a translation run to its end */
    ted_cancel_reset(cancel);
    cr_assert_eq(ted_translate_ids_cancellable(model, all, &count, 1, &call, out, &err), TED_OK,
                 "%s", err.message);
    cr_assert_str_eq(out[0].text, "le chien dort .");
    ted_translations_free(out, 1);
    ted_free(ids);
    ted_cancel_free(cancel);
    ted_model_free(model);
}

Test(cancel, null_arguments)
{
    ted_error err = {0};
    cr_assert_eq(ted_cancel_new(NULL, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "cancel is NULL"), "%s", err.message);
    ted_cancel_request(NULL);
    ted_cancel_reset(NULL);
    cr_assert(!ted_cancel_requested(NULL));
    ted_cancel_free(NULL);
    ted_session_watch(NULL, NULL);
    ted_model *model = load(TOY_DIR);
    ted_translation out[1];
    const char *text = "the dog";
    cr_assert_eq(ted_translate_n_best_cancellable(model, &text, 1, NULL, out, NULL, &err),
                 TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "call is NULL"), "%s", err.message);
    ted_model_free(model);
}
