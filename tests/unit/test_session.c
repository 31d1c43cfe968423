/* Decoding sessions over two tiny exported models (tests/data/tiny-model,
 * post-norm ReLU, 2 heads; tests/data/tiny-model-prenorm, pre-norm GELU,
 * 4 heads) against PyTorch: teacher-forced logits one step at a time, alone
 * and in a padded batch, across ted_session_select(); the kept attention
 * weights; every input error; greedy decoding against the tutorial's
 * greedy_decode; and model directories that are wrong in one way each.
 * Reference values: tests/unit/layer_fixtures.h (tools/make_layer_fixtures.py).
 * Tolerances: TOL_COMPOSED (1e-4) against PyTorch; TOL_OP (1e-5) between
 * ted's own batch-1 and batched results and for attention rows' sums. */
#include <cJSON.h>
#include <criterion/criterion.h>

#include "decode.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "float_check.h"
#include "io/config.h"
#include "layer_fixtures.h"
#include "model/session_hooks.h"
#include "model_dir.h"
#include "ted/rows.h"
#include "ted/ted.h"

enum { STEPS = TINY_STEPS, VOCAB = TINY_TGT_VOCAB };

typedef struct tiny_model {
    const char *dir;
    const float *logits[2];   /* (STEPS, VOCAB) per source */
    const int *greedy[2];
    int greedy_length[2];
} tiny_model;

static const tiny_model tiny_models[] = {
    {TINY_DIR, {tiny_logits0, tiny_logits1}, {tiny_greedy0, tiny_greedy1},
     {TINY_GREEDY0_LEN, TINY_GREEDY1_LEN}},
    {TINY_PRE_DIR, {tiny_pre_logits0, tiny_pre_logits1}, {tiny_pre_greedy0, tiny_pre_greedy1},
     {TINY_PRE_GREEDY0_LEN, TINY_PRE_GREEDY1_LEN}},
};
#define MODEL_COUNT (int)(sizeof tiny_models / sizeof tiny_models[0])

static const int *const sources[2] = {tiny_src0, tiny_src1};
static const int source_lengths[2] = {TINY_SRC0_LEN, TINY_SRC1_LEN};
static const int *const targets[2] = {tiny_tgt0, tiny_tgt1};

static ted_session *new_session(const ted_model *model)
{
    ted_session *session = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_new(model, &session, &err), TED_OK, "%s", err.message);
    return session;
}

/* ids, lengths (count <= 4): the sources of sentences which[0..count). */
static void pick_sources(const int *which, int count, const int **ids, int *lengths)
{
    cr_assert_leq(count, 4);
    for (int k = 0; k < count; k++) {
        ids[k] = sources[which[k]];
        lengths[k] = source_lengths[which[k]];
    }
}

/* Encodes the sentences `which[0..batch)` (0 or 1) with room for STEPS steps. */
static void encode(ted_session *s, const int *which, int batch)
{
    const int *ids[4];
    int lengths[4];
    pick_sources(which, batch, ids, lengths);
    ted_error err = {0};
    ted_status status = ted_session_encode(s, ids, lengths, batch, STEPS, &err);
    cr_assert_eq(status, TED_OK, "encode: %s", err.message);
}

/* One teacher-forced step: row b feeds target which[b]'s token at the
 * session's position; returns the logits (batch, VOCAB). */
static const float *step(ted_session *s, const int *which, int batch)
{
    int tokens[4];
    int t = ted_session_position(s);
    cr_assert_lt(t, STEPS);
    for (int b = 0; b < batch; b++)
        tokens[b] = targets[which[b]][t];
    const float *logits = NULL;
    ted_error err = {0};
    ted_status status = ted_session_step(s, tokens, &logits, &err);
    cr_assert_eq(status, TED_OK, "step %d: %s", t, err.message);
    cr_assert_not_null(logits);
    return logits;
}

/* Row `row` of `logits` against PyTorch's logits of sentence `sentence` at
 * step t; returns the max abs diff. */
static double check_row(const tiny_model *m, const float *logits, int row, int sentence, int t,
                        const char *what)
{
    const float *want = m->logits[sentence] + (size_t)t * VOCAB;
    float_diff d = max_abs_diff(logits + (size_t)row * VOCAB, want, VOCAB);
    cr_assert(d.max <= TOL_COMPOSED,
              "%s: %s, row %d (sentence %d), step %d: max abs diff %.3g > %.0e at id %zu "
              "(got %.9g, PyTorch %.9g)",
              m->dir, what, row, sentence, t, d.max, TOL_COMPOSED, d.index,
              (double)logits[(size_t)row * VOCAB + d.index], (double)want[d.index]);
    return d.max;
}

/* ted's batch-1 logits of sentence `sentence`: (STEPS, VOCAB). */
static void batch1_logits(const ted_model *model, int sentence, float *out)
{
    ted_session *s = new_session(model);
    encode(s, &sentence, 1);
    for (int t = 0; t < STEPS; t++)
        memcpy(out + (size_t)t * VOCAB, step(s, &sentence, 1), sizeof(float) * VOCAB);
    ted_session_free(s);
}

/* ---- loading ------------------------------------------------------------ */

/* ted_config_get_view gives what tests/data/tiny-model/config.yaml says. */
Test(session, config_view_reads_config_yaml)
{
    ted_model *model = load(TINY_DIR);
    ted_config_view v = ted_config_get_view(ted_model_config(model));
    cr_assert(v.model.d_model == 16 && v.model.heads == 2 && v.model.query_size == 8);
    cr_assert(v.model.encoder_layers == 2 && v.model.decoder_layers == 2 && v.model.d_ff == 32);
    cr_assert(v.model.src_vocab_size == 12 && v.model.tgt_vocab_size == 14);
    cr_assert(v.model.max_positions == 64 && v.model.activation == TED_ACTIVATION_RELU);
    cr_assert(v.model.positional_layout == TED_POSITIONS_INTERLEAVED);
    cr_assert(!v.model.norm_first && v.model.scale_embedding && !v.model.tied_output);
    cr_assert(v.tokens.tokenizer == TED_TOKENIZER_WHITESPACE && v.tokens.unk_id == 0);
    cr_assert(v.tokens.pad_id == 1 && v.tokens.bos_id == 2 && v.tokens.eos_id == 3);
    cr_assert(v.tokens.decoder_start_id == 2 && v.tokens.source_bos && v.tokens.source_eos);
    cr_assert_str_eq(v.files.weights, "model.safetensors");
    cr_assert_str_eq(v.files.src_vocab, "vocab.src");
    cr_assert_str_eq(v.files.tgt_vocab, "vocab.tgt");
    cr_assert_str_eq(v.files.src_spm, "");
    cr_assert_str_eq(v.files.merges, "");
    cr_assert_str_eq(v.files.shortlist, "");
    ted_model_free(model);
}

Test(session, load_tiny_model)
{
    ted_model *model = load(TINY_DIR);
    const ted_config *c = ted_model_config(model);
    cr_assert_eq(c->d_model, 16);
    cr_assert_eq(c->heads, 2);
    cr_assert_eq(c->encoder_layers, 2);
    cr_assert_eq(c->decoder_layers, 2);
    cr_assert_eq(c->d_ff, TINY_D_FF);
    cr_assert_eq(c->src_vocab_size, TINY_SRC_VOCAB);
    cr_assert_eq(c->tgt_vocab_size, TINY_TGT_VOCAB);
    cr_assert(c->encoder_final_norm && c->decoder_final_norm && !c->norm_first);
    /* 2 embeddings, 2 x 12 encoder, 2 x 18 decoder, 2 final norms x 2, 2 generator */
    cr_assert_eq(ted_model_tensor_count(model), 2 + 24 + 36 + 4 + 2);
    bool found = false;
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        ted_tensor_info info = ted_model_tensor(model, i);
        if (strcmp(info.name, "generator.weight") == 0) {
            found = true;
            cr_assert_str_eq(info.dtype, "F32");
            cr_assert(info.ndim == 2 && info.shape[0] == VOCAB && info.shape[1] == 16);
            cr_assert_eq(info.bytes, sizeof(float) * VOCAB * 16);
        }
    }
    cr_assert(found, "generator.weight is not listed");
    ted_model_free(model);

    model = load(TINY_PRE_DIR);
    c = ted_model_config(model);
    cr_assert(c->norm_first && c->activation == TED_ACTIVATION_GELU && c->heads == 4);
    cr_assert_float_eq(c->layer_norm_eps, 1e-6f, 1e-12f);
    ted_model_free(model);
}

/* ---- logits against PyTorch -------------------------------------------- */

Test(session, logits_batch_1_match_pytorch)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        double worst = 0.0;
        for (int sentence = 0; sentence < 2; sentence++) {
            float logits[STEPS * VOCAB];
            batch1_logits(model, sentence, logits);
            for (int t = 0; t < STEPS; t++) {
                double d = check_row(m, logits + (size_t)t * VOCAB, 0, sentence, t, "batch 1");
                worst = d > worst ? d : worst;
            }
        }
        cr_log_info("%s: batch 1 logits max abs diff %.3g", m->dir, worst);
        ted_model_free(model);
    }
}

Test(session, logits_batch_2_padded_match_pytorch_and_batch_1)
{
    static const int orders[2][2] = {{0, 1}, {1, 0}};  /* the shorter source padded */
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        float alone[2][STEPS * VOCAB];
        batch1_logits(model, 0, alone[0]);
        batch1_logits(model, 1, alone[1]);
        double worst = 0.0, worst_vs_alone = 0.0;
        for (int o = 0; o < 2; o++) {
            ted_session *s = new_session(model);
            encode(s, orders[o], 2);
            cr_assert_eq(ted_session_batch(s), 2);
            for (int b = 0; b < 2; b++)
                cr_assert_eq(ted_session_source_length(s, b), source_lengths[orders[o][b]]);
            for (int t = 0; t < STEPS; t++) {
                const float *logits = step(s, orders[o], 2);
                for (int b = 0; b < 2; b++) {
                    int sentence = orders[o][b];
                    double d = check_row(m, logits, b, sentence, t, "batch 2");
                    worst = d > worst ? d : worst;
                    float_diff a = max_abs_diff(logits + (size_t)b * VOCAB,
                                                alone[sentence] + (size_t)t * VOCAB, VOCAB);
                    worst_vs_alone = a.max > worst_vs_alone ? a.max : worst_vs_alone;
                    cr_assert(a.max <= TOL_OP,
                              "%s: batch 2 row %d (sentence %d) step %d differs from batch 1 by "
                              "%.3g > %.0e",
                              m->dir, b, sentence, t, a.max, TOL_OP);
                }
            }
            ted_session_free(s);
        }
        cr_log_info("%s: batch 2 logits max abs diff %.3g vs PyTorch, %.3g vs batch 1", m->dir,
                    worst, worst_vs_alone);
        ted_model_free(model);
    }
}

Test(session, a_session_decodes_batch_after_batch)
{
    /* Buffers sized by a bigger first batch are reused for a smaller one. */
    const tiny_model *m = &tiny_models[0];
    ted_model *model = load(m->dir);
    ted_session *s = new_session(model);
    static const int both[2] = {0, 1}, second[1] = {1}, first[1] = {0};
    encode(s, both, 2);
    for (int t = 0; t < STEPS; t++)
        step(s, both, 2);
    encode(s, second, 1);
    cr_assert_eq(ted_session_position(s), 0);
    for (int t = 0; t < STEPS; t++)
        check_row(m, step(s, second, 1), 0, 1, t, "second decode");
    encode(s, first, 1);
    for (int t = 0; t < STEPS; t++)
        check_row(m, step(s, first, 1), 0, 0, t, "third decode");
    ted_session_free(s);
    ted_model_free(model);
}

/* ---- select ------------------------------------------------------------- */

static void select_rows(ted_session *s, const int *rows, int count)
{
    ted_error err = {0};
    ted_status status = ted_session_select(s, rows, count, &err);
    cr_assert_eq(status, TED_OK, "select: %s", err.message);
    cr_assert_eq(ted_session_batch(s), count);
}

Test(session, select_drops_a_row)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        ted_session *s = new_session(model);
        static const int both[2] = {0, 1}, second[1] = {1}, keep[1] = {1};
        encode(s, both, 2);
        for (int t = 0; t < 2; t++)
            step(s, both, 2);
        select_rows(s, keep, 1);
        cr_assert_eq(ted_session_source_length(s, 0), TINY_SRC1_LEN);
        cr_assert_eq(ted_session_position(s), 2);
        for (int t = 2; t < STEPS; t++)
            check_row(m, step(s, second, 1), 0, 1, t, "after dropping row 0");
        ted_session_free(s);
        ted_model_free(model);
    }
}

Test(session, select_swaps_and_duplicates_rows)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        ted_session *s = new_session(model);
        static const int both[2] = {0, 1}, swapped[2] = {1, 0}, twice1[2] = {1, 1};
        static const int twice0[2] = {0, 0}, once1[1] = {1};

        /* swap: row 0 becomes sentence 1, row 1 sentence 0 */
        encode(s, both, 2);
        step(s, both, 2);
        select_rows(s, (const int[]){1, 0}, 2);
        cr_assert_eq(ted_session_source_length(s, 0), TINY_SRC1_LEN);
        cr_assert_eq(ted_session_source_length(s, 1), TINY_SRC0_LEN);
        for (int t = 1; t < STEPS; t++) {
            const float *logits = step(s, swapped, 2);
            check_row(m, logits, 0, 1, t, "swapped");
            check_row(m, logits, 1, 0, t, "swapped");
        }

        /* duplicate: both rows sentence 1, then shrink to one and grow back */
        encode(s, both, 2);
        step(s, both, 2);
        select_rows(s, (const int[]){1, 1}, 2);
        const float *logits = step(s, twice1, 2);
        check_row(m, logits, 0, 1, 1, "duplicated row");
        check_row(m, logits, 1, 1, 1, "duplicated row");
        select_rows(s, (const int[]){0}, 1);
        check_row(m, step(s, once1, 1), 0, 1, 2, "one row of the duplicate");
        select_rows(s, (const int[]){0, 0}, 2);
        for (int t = 3; t < STEPS; t++) {
            logits = step(s, twice1, 2);
            check_row(m, logits, 0, 1, t, "regrown");
            check_row(m, logits, 1, 1, t, "regrown");
        }

        /* duplicate sentence 0 (the longer source) */
        encode(s, both, 2);
        step(s, both, 2);
        step(s, both, 2);
        select_rows(s, (const int[]){0, 0}, 2);
        for (int t = 2; t < STEPS; t++) {
            logits = step(s, twice0, 2);
            check_row(m, logits, 0, 0, t, "sentence 0 twice");
            check_row(m, logits, 1, 0, t, "sentence 0 twice");
        }
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* Rows of two sources that trade places: a row that keeps its source keeps
 * its source's buffers (the encoder-decoder keys and values are not copied
 * into it), and a row that takes another source's gets them. */
Test(session, select_moves_rows_between_sources)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        ted_session *s = new_session(model);
        static const int both[2] = {0, 1}, doubled[4] = {0, 0, 1, 1};
        static const int traded[4] = {1, 0, 0, 1};
        encode(s, both, 2);
        step(s, both, 2);
        select_rows(s, (const int[]){0, 0, 1, 1}, 4);
        const float *logits = step(s, doubled, 4);
        for (int r = 0; r < 4; r++)
            check_row(m, logits, r, doubled[r], 1, "each source twice");
        /* row 0 takes source 1, row 1 stays source 0 from another row of
         * source 0, row 2 takes source 0, row 3 stays */
        select_rows(s, (const int[]){2, 0, 1, 3}, 4);
        for (int t = 2; t < STEPS; t++) {
            logits = step(s, traded, 4);
            for (int r = 0; r < 4; r++)
                check_row(m, logits, r, traded[r], t, "sources traded");
        }
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* A decode with more rows but fewer steps than the one before: the buffers
 * grow for the rows, and the strides must follow this decode's steps, not
 * the capacity left by the longer one, or select() copies the caches
 * askew. */
Test(session, a_bigger_batch_after_a_longer_decode_selects_right)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        ted_session *s = new_session(model);
        const int *ids[1] = {tiny_src0};
        int lengths[1] = {TINY_SRC0_LEN};
        ted_error err = {0};
        cr_assert_eq(ted_session_encode(s, ids, lengths, 1, 3 * STEPS, &err), TED_OK, "%s",
                     err.message);
        static const int first[1] = {0}, both[2] = {0, 1}, three[3] = {1, 0, 1};
        step(s, first, 1);
        encode(s, both, 2);  /* STEPS steps, 2 rows */
        const float *logits = step(s, both, 2);
        check_row(m, logits, 0, 0, 0, "after a longer decode");
        check_row(m, logits, 1, 1, 0, "after a longer decode");
        select_rows(s, (const int[]){1, 0, 1}, 3);
        for (int t = 1; t < STEPS; t++) {
            logits = step(s, three, 3);
            for (int b = 0; b < 3; b++)
                check_row(m, logits, b, three[b], t, "selected after a longer decode");
        }
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* ---- attention weights -------------------------------------------------- */

/* Every row of every head sums to 1; keys past `real_keys` weigh exactly 0. */
static void check_view(const ted_attention_view *v, int real_keys, int queries, int keys,
                       const char *what)
{
    cr_assert_eq(v->queries, queries, "%s: %d queries", what, v->queries);
    cr_assert_eq(v->keys, keys, "%s: %d keys", what, v->keys);
    cr_assert_geq(v->stride, v->keys);
    for (int h = 0; h < v->heads; h++)
        for (int i = 0; i < v->queries; i++) {
            const float *row = v->weights + ((size_t)h * v->queries + i) * v->stride;
            double sum = 0.0;
            for (int j = 0; j < v->keys; j++) {
                cr_assert(row[j] >= 0.0f && row[j] <= 1.0f, "%s: head %d query %d key %d: %g",
                          what, h, i, j, (double)row[j]);
                if (j >= real_keys)
                    cr_assert(row[j] == 0.0f, "%s: head %d query %d: padded key %d has %g",
                              what, h, i, j, (double)row[j]);
                sum += row[j];
            }
            cr_assert(fabs(sum - 1.0) <= TOL_OP, "%s: head %d query %d sums to %.9g", what, h,
                      i, sum);
        }
}

static ted_attention_view view(const ted_session *s, ted_attention_kind kind, int layer,
                               int row)
{
    ted_attention_view v = {0};
    ted_error err = {0};
    ted_status status = ted_session_attention(s, kind, layer, row, &v, &err);
    cr_assert_eq(status, TED_OK, "attention kind %d layer %d row %d: %s", (int)kind, layer,
                 row, err.message);
    cr_assert_not_null(v.weights);
    return v;
}

/* Sentences 0 and 1, encoded together, at every step: each row of every
 * view sums to 1 and its padding weighs 0. */
static void check_views_at_every_step(const tiny_model *m, const ted_config *c,
                                      ted_session *s)
{
    static const int both[2] = {0, 1};
    int S = TINY_SRC0_LEN;
    ted_error err = {0};
    ted_attention_view v;
    cr_assert_eq(ted_session_attention(s, TED_CROSS_ATTENTION, 0, 0, &v, &err),
                 TED_ERR_ARGUMENT, "decoder attention before any step");
    for (int l = 0; l < c->encoder_layers; l++)
        for (int b = 0; b < 2; b++) {
            v = view(s, TED_ENCODER_SELF_ATTENTION, l, b);
            cr_assert_eq(v.heads, c->heads);
            check_view(&v, source_lengths[b], S, S, "encoder self-attention");
        }
    for (int t = 0; t < STEPS; t++) {
        const float *logits = step(s, both, 2);
        check_row(m, logits, 0, 0, t, "keeping attention");
        check_row(m, logits, 1, 1, t, "keeping attention");
        for (int l = 0; l < c->decoder_layers; l++)
            for (int b = 0; b < 2; b++) {
                v = view(s, TED_DECODER_SELF_ATTENTION, l, b);
                check_view(&v, t + 1, 1, t + 1, "decoder self-attention");
                v = view(s, TED_CROSS_ATTENTION, l, b);
                check_view(&v, source_lengths[b], 1, S, "cross attention");
            }
    }
}

/* The padded row 1 of s has the encoder weights of sentence 1 alone. */
static void check_padded_row_as_alone(const tiny_model *m, ted_model *model, ted_session *s)
{
    const ted_config *c = ted_model_config(model);
    ted_session *alone = new_session(model);
    ted_session_keep_attention(alone, true);
    static const int second[1] = {1};
    encode(alone, second, 1);
    int n = TINY_SRC1_LEN;
    for (int l = 0; l < c->encoder_layers; l++) {
        ted_attention_view a = view(alone, TED_ENCODER_SELF_ATTENTION, l, 0);
        ted_attention_view p = view(s, TED_ENCODER_SELF_ATTENTION, l, 1);
        for (int h = 0; h < c->heads; h++)
            for (int i = 0; i < n; i++) {
                float_diff d = max_abs_diff(p.weights + ((size_t)h * p.queries + i) * p.stride,
                                            a.weights + ((size_t)h * a.queries + i) * a.stride,
                                            n);
                cr_assert(d.max <= TOL_OP,
                          "%s: encoder layer %d head %d query %d: padded row differs from "
                          "the row alone by %.3g",
                          m->dir, l, h, i, d.max);
            }
    }
    ted_session_free(alone);
}

/* A copy of the weights of a view (malloc'ed): (heads, queries, stride). */
static float *saved_weights(const ted_attention_view *v, size_t *count)
{
    *count = (size_t)v->heads * v->queries * v->stride;
    float *copy = malloc(sizeof(float) * *count);
    cr_assert_not_null(copy);
    memcpy(copy, v->weights, sizeof(float) * *count);
    return copy;
}

/* After select keeps row 1 alone, its kept weights follow it to row 0. */
static void check_weights_follow_select(const ted_config *c, ted_session *s)
{
    static const ted_attention_kind kinds[3] = {TED_CROSS_ATTENTION, TED_DECODER_SELF_ATTENTION,
                                                TED_ENCODER_SELF_ATTENTION};
    static const char *const names[3] = {"cross attention after select",
                                         "self-attention after select",
                                         "encoder attention after select"};
    int layers[3] = {c->decoder_layers - 1, c->decoder_layers - 1, c->encoder_layers - 1};
    float *saved[3];
    size_t count[3];
    for (int k = 0; k < 3; k++) {
        ted_attention_view before = view(s, kinds[k], layers[k], 1);
        saved[k] = saved_weights(&before, &count[k]);
    }
    select_rows(s, (const int[]){1}, 1);
    for (int k = 0; k < 3; k++) {
        ted_attention_view after = view(s, kinds[k], layers[k], 0);
        ASSERT_CLOSE(after.weights, saved[k], count[k], 0.0, names[k]);
        free(saved[k]);
    }
}

Test(session, attention_rows_sum_to_1_and_padding_gets_0)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        const ted_config *c = ted_model_config(model);
        ted_session *s = new_session(model);
        ted_session_keep_attention(s, true);
        static const int both[2] = {0, 1};
        encode(s, both, 2);
        check_views_at_every_step(m, c, s);
        check_padded_row_as_alone(m, model, s);
        check_weights_follow_select(c, s);
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* Attention turned on between encode() and step(): the steps still work,
 * and ted_session_attention() either shows valid weights or refuses. */
Test(session, keep_attention_turned_on_after_encode)
{
    /* ted.h: keeping attention "takes effect at the next encode()": the
     * decode already running keeps nothing, its steps are unchanged, and
     * every kind of attention is refused with an argument error. */
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    static const int first[1] = {0};
    encode(s, first, 1);
    ted_session_keep_attention(s, true);
    for (int t = 0; t < 2; t++)
        check_row(&tiny_models[0], step(s, first, 1), 0, 0, t, "attention turned on late");
    static const ted_attention_kind kinds[3] = {TED_ENCODER_SELF_ATTENTION,
                                                TED_DECODER_SELF_ATTENTION,
                                                TED_CROSS_ATTENTION};
    for (int k = 0; k < 3; k++) {
        ted_attention_view v = {0};
        ted_error err = {0};
        cr_assert_eq(ted_session_attention(s, kinds[k], 0, 0, &v, &err), TED_ERR_ARGUMENT,
                     "kind %d: attention turned on after encode() must not be kept yet", k);
        cr_assert(strstr(err.message, "not kept"), "kind %d: message '%s'", k, err.message);
        cr_assert_null(v.weights, "kind %d: weights given though not kept", k);
    }
    /* from the next encode() on, it is */
    encode(s, first, 1);
    step(s, first, 1);
    ted_attention_view v = {0};
    ted_error err = {0};
    cr_assert_eq(ted_session_attention(s, TED_CROSS_ATTENTION, 0, 0, &v, &err), TED_OK, "%s",
                 err.message);
    check_view(&v, TINY_SRC0_LEN, 1, TINY_SRC0_LEN, "attention kept after the next encode");
    ted_session_free(s);
    ted_model_free(model);
}

/* The decoder's kept weights of a session that leaves out the encoder's
 * are those of a session that keeps everything, bit for bit, as are its
 * logits; its encoder view is refused, naming the setting. */
static void check_same_views(const ted_config *c, const ted_session *all,
                             const ted_session *lean, int t)
{
    static const ted_attention_kind kinds[2] = {TED_DECODER_SELF_ATTENTION,
                                                TED_CROSS_ATTENTION};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < c->decoder_layers; l++)
            for (int row = 0; row < 2; row++) {
                ted_attention_view a = view(all, kinds[k], l, row);
                ted_attention_view b = view(lean, kinds[k], l, row);
                cr_assert(a.heads == b.heads && a.queries == b.queries && a.keys == b.keys,
                          "step %d kind %d layer %d row %d: the views' shapes differ", t,
                          (int)kinds[k], l, row);
                for (int h = 0; h < a.heads; h++)
                    cr_assert(!memcmp(a.weights + (size_t)h * a.stride,
                                      b.weights + (size_t)h * b.stride,
                                      (size_t)a.keys * sizeof(float)),
                              "step %d kind %d layer %d row %d head %d: weights differ", t,
                              (int)kinds[k], l, row, h);
            }
}

Test(session, encoder_attention_left_out)
{
    ted_model *model = load(TINY_DIR);
    const ted_config *c = ted_model_config(model);
    ted_session *all = new_session(model), *lean = new_session(model);
    ted_session_keep_attention(all, true);
    ted_session_keep_attention(lean, true);
    ted_session_keep_encoder_attention(lean, false);
    static const int both[2] = {0, 1};
    encode(all, both, 2);
    encode(lean, both, 2);
    size_t vocab = (size_t)c->tgt_vocab_size;
    for (int t = 0; t < STEPS; t++) {
        const float *a = step(all, both, 2), *b = step(lean, both, 2);
        cr_assert(!memcmp(a, b, 2 * vocab * sizeof *a), "step %d: the logits differ", t);
        check_same_views(c, all, lean, t);
    }
    ted_attention_view v = {0};
    ted_error err = {0};
    cr_assert_eq(ted_session_attention(lean, TED_ENCODER_SELF_ATTENTION, 0, 0, &v, &err),
                 TED_ERR_ARGUMENT, "the encoder's weights are given though left out");
    cr_assert(strstr(err.message, "ted_session_keep_encoder_attention"), "message '%s'",
              err.message);
    cr_assert_null(v.weights);
    ted_session_free(all);
    ted_session_free(lean);
    ted_model_free(model);
}

/* ---- errors --------------------------------------------------------------- */

static void expect_error(ted_status got, const ted_error *err, ted_status want,
                         const char *needle, const char *what)
{
    cr_assert_eq(got, want, "%s: status %s, expected %s (%s)", what, ted_status_name(got),
                 ted_status_name(want), err->message);
    cr_assert(strstr(err->message, needle), "%s: message \"%s\" does not mention \"%s\"", what,
              err->message, needle);
}

Test(session, token_id_out_of_range)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    static const int both[2] = {0, 1};
    encode(s, both, 2);
    const float *logits = NULL;
    ted_error err = {0};
    int tokens[2] = {tiny_tgt0[0], VOCAB};
    expect_error(ted_session_step(s, tokens, &logits, &err), &err, TED_ERR_INPUT, "14",
                 "target id 14");
    tokens[1] = -1;
    expect_error(ted_session_step(s, tokens, &logits, &err), &err, TED_ERR_INPUT, "-1",
                 "target id -1");
    cr_assert_eq(ted_session_position(s), 0, "a refused step does not advance");
    for (int t = 0; t < STEPS; t++) {
        logits = step(s, both, 2);
        check_row(&tiny_models[0], logits, 0, 0, t, "after refused steps");
        check_row(&tiny_models[0], logits, 1, 1, t, "after refused steps");
    }
    ted_session_free(s);
    ted_model_free(model);
}

Test(session, source_id_out_of_range)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    int bad[3] = {2, TINY_SRC_VOCAB, 3};
    const int *ids[2] = {tiny_src0, bad};
    int lengths[2] = {TINY_SRC0_LEN, 3};
    ted_error err = {0};
    expect_error(ted_session_encode(s, ids, lengths, 2, STEPS, &err), &err, TED_ERR_INPUT, "12",
                 "source id 12");
    bad[1] = -7;
    expect_error(ted_session_encode(s, ids, lengths, 2, STEPS, &err), &err, TED_ERR_INPUT, "-7",
                 "source id -7");
    ted_session_free(s);
    ted_model_free(model);
}

Test(session, empty_source)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    const int *ids[2] = {tiny_src0, tiny_src1};
    int lengths[2] = {TINY_SRC0_LEN, 0};
    ted_error err = {0};
    expect_error(ted_session_encode(s, ids, lengths, 2, STEPS, &err), &err, TED_ERR_INPUT,
                 "source 1", "empty source");
    cr_assert(strstr(err.message, "empty"), "%s", err.message);
    ted_session_free(s);
    ted_model_free(model);
}

Test(session, more_steps_than_max_steps)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    const int *ids[1] = {tiny_src0};
    int lengths[1] = {TINY_SRC0_LEN};
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(s, ids, lengths, 1, 2, &err), TED_OK, "%s", err.message);
    static const int first[1] = {0};
    step(s, first, 1);
    step(s, first, 1);
    const float *logits = NULL;
    int token = tiny_tgt0[2];
    expect_error(ted_session_step(s, &token, &logits, &err), &err, TED_ERR_ARGUMENT, "2",
                 "third step of 2");
    cr_assert_eq(ted_session_position(s), 2);
    int positions = ted_model_config(model)->max_positions;
    char needle[16];
    snprintf(needle, sizeof needle, "%d", positions + 1);
    expect_error(ted_session_encode(s, ids, lengths, 1, positions + 1, &err), &err,
                 TED_ERR_ARGUMENT, needle, "max_steps past max_positions");
    ted_session_free(s);
    ted_model_free(model);
}

Test(session, select_with_a_bad_row)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    static const int both[2] = {0, 1};
    encode(s, both, 2);
    step(s, both, 2);
    ted_error err = {0};
    expect_error(ted_session_select(s, (const int[]){0, 5}, 2, &err), &err, TED_ERR_ARGUMENT,
                 "5", "select row 5 of 2");
    expect_error(ted_session_select(s, (const int[]){-1}, 1, &err), &err, TED_ERR_ARGUMENT,
                 "-1", "select row -1");
    expect_error(ted_session_select(s, (const int[]){0}, 0, &err), &err, TED_ERR_ARGUMENT, "0",
                 "select no row");
    cr_assert_eq(ted_session_batch(s), 2, "a refused select keeps the batch");
    for (int t = 1; t < STEPS; t++) {
        const float *logits = step(s, both, 2);
        check_row(&tiny_models[0], logits, 0, 0, t, "after refused selects");
        check_row(&tiny_models[0], logits, 1, 1, t, "after refused selects");
    }
    ted_session_free(s);
    ted_model_free(model);
}

/* ---- rows that join late (continuous batching) ------------------------------ */

/* A row that joins late computes what it computes alone: its own
 * positions, its own prefix, its own source. */
#define TOL_JOINED 1e-6

/* Sentences which[0..count) encoded in a session of their own, `encoded`
 * (as a server's encoding thread does), join `s` (ted_session_join). */
static void join_encoded(ted_session *s, ted_session *encoded, const int *which, int count,
                         int max_steps)
{
    const int *ids[4];
    int lengths[4];
    pick_sources(which, count, ids, lengths);
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(encoded, ids, lengths, count, max_steps, &err), TED_OK,
                 "encode: %s", err.message);
    int before = ted_session_batch(s);
    cr_assert_eq(ted_session_join(s, encoded, &err), TED_OK, "join: %s", err.message);
    cr_assert_eq(ted_session_batch(s), before + count);
    cr_assert_eq(ted_session_batch(encoded), 0, "the joined rows leave their session");
    for (int k = 0; k < count; k++) {
        cr_assert_eq(ted_session_row_position(s, before + k), 0);
        cr_assert_eq(ted_session_source_length(s, before + k), lengths[k]);
    }
}

/* One teacher-forced step, row b feeding target which[b]'s token at the
 * row's own position; checks every row against PyTorch and against the
 * sentence decoded alone (`alone[sentence]`, (STEPS, VOCAB)). */
static void step_joined(const tiny_model *m, ted_session *s, const int *which, int batch,
                        float alone[2][STEPS * VOCAB], double *worst)
{
    int tokens[4], t[4];
    cr_assert_leq(batch, 4);
    for (int b = 0; b < batch; b++) {
        t[b] = ted_session_row_position(s, b);
        cr_assert_lt(t[b], STEPS);
        tokens[b] = targets[which[b]][t[b]];
    }
    const float *logits = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_step(s, tokens, &logits, &err), TED_OK, "%s", err.message);
    for (int b = 0; b < batch; b++) {
        check_row(m, logits, b, which[b], t[b], "joined late");
        float_diff d = max_abs_diff(logits + (size_t)b * VOCAB,
                                    alone[which[b]] + (size_t)t[b] * VOCAB, VOCAB);
        cr_assert(d.max <= TOL_JOINED,
                  "%s: row %d (sentence %d) at step %d differs from the sentence alone by "
                  "%.3g > %.0e",
                  m->dir, b, which[b], t[b], d.max, TOL_JOINED);
        *worst = d.max > *worst ? d.max : *worst;
        cr_assert_eq(ted_session_row_position(s, b), t[b] + 1);
    }
}

/* Rows joining and leaving a session, checked step by step (step_joined). */
typedef void (*join_scenario)(const tiny_model *m, ted_model *model, ted_session *s,
                              float alone[2][STEPS * VOCAB], double *worst);

static void run_join_scenario(join_scenario scenario, const char *what)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        float alone[2][STEPS * VOCAB];
        batch1_logits(model, 0, alone[0]);
        batch1_logits(model, 1, alone[1]);
        double worst = 0.0;
        ted_session *s = new_session(model);
        scenario(m, model, s, alone, &worst);
        cr_log_info("%s: %s: max abs diff %.3g vs alone", m->dir, what, worst);
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* Sentence 1 joins sentence 0 after 2 steps, goes on alone after it. */
static void join_late(const tiny_model *m, ted_model *model, ted_session *s,
                      float alone[2][STEPS * VOCAB], double *worst)
{
    ted_session *encoded = new_session(model);
    static const int first[1] = {0}, second[1] = {1}, both[2] = {0, 1}, last[1] = {1};
    encode(s, first, 1);
    step_joined(m, s, first, 1, alone, worst);
    step_joined(m, s, first, 1, alone, worst);
    join_encoded(s, encoded, second, 1, STEPS);  /* row 1 at step 0, row 0 at step 2 */
    cr_assert_eq(ted_session_position(s), 2);
    for (int t = 2; t < STEPS; t++)
        step_joined(m, s, both, 2, alone, worst);
    select_rows(s, (const int[]){1}, 1);  /* row 0 is done; row 1 at step 3 goes on */
    cr_assert_eq(ted_session_position(s), STEPS - 2);
    while (ted_session_row_position(s, 0) < STEPS)
        step_joined(m, s, last, 1, alone, worst);
    ted_session_free(encoded);
}

Test(session, a_row_that_joins_late_decodes_as_it_does_alone)
{
    run_join_scenario(join_late, "rows joined late");
}

/* Sentence 1 with room for 3 steps; sentence 0, longer and with 5 steps,
 * joins, growing the source and step room; then both at once, encoded
 * together, the shorter padded; then rows leave. */
static void join_encoded_and_grow(const tiny_model *m, ted_model *model, ted_session *s,
                                  float alone[2][STEPS * VOCAB], double *worst)
{
    ted_session *encoded = new_session(model);
    const int *ids[1] = {tiny_src1};
    int lengths[1] = {TINY_SRC1_LEN};
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(s, ids, lengths, 1, 3, &err), TED_OK, "%s", err.message);
    static const int one[1] = {1}, rows2[2] = {1, 0}, rows4[4] = {1, 0, 1, 0};
    step_joined(m, s, one, 1, alone, worst);
    join_encoded(s, encoded, (const int[]){0}, 1, STEPS);
    step_joined(m, s, rows2, 2, alone, worst);
    join_encoded(s, encoded, (const int[]){1, 0}, 2, STEPS);
    for (int t = 0; t < 3; t++)
        step_joined(m, s, rows4, 4, alone, worst);
    select_rows(s, (const int[]){2, 3}, 2);
    while (ted_session_row_position(s, 0) < STEPS)
        step_joined(m, s, rows2, 2, alone, worst);
    ted_session_free(encoded);
}

Test(session, rows_encoded_in_another_session_join_as_they_decode_alone)
{
    run_join_scenario(join_encoded_and_grow, "rows encoded elsewhere");
}

/* Rows joining an empty session: a new one, then one emptied by
 * ted_session_clear() once its rows ended, as a server's batch is; the
 * second time with a longer source and more steps than the buffers had. */
static void join_empty_sessions(const tiny_model *m, ted_model *model, ted_session *s,
                                float alone[2][STEPS * VOCAB], double *worst)
{
    ted_session *encoded = new_session(model);
    static const int zero[1] = {0}, one[1] = {1}, rows2[2] = {0, 1};
    join_encoded(s, encoded, one, 1, 3);
    for (int t = 0; t < 3; t++)
        step_joined(m, s, one, 1, alone, worst);
    ted_session_clear(s);
    cr_assert_eq(ted_session_batch(s), 0, "a cleared session has no rows");
    cr_assert_eq(ted_session_position(s), 0, "a cleared session is back at position 0");
    join_encoded(s, encoded, zero, 1, STEPS);
    step_joined(m, s, zero, 1, alone, worst);
    join_encoded(s, encoded, one, 1, STEPS);
    while (ted_session_row_position(s, 0) < STEPS)
        step_joined(m, s, rows2, 2, alone, worst);
    select_rows(s, (const int[]){1}, 1);
    step_joined(m, s, one, 1, alone, worst);
    ted_session_free(encoded);
}

Test(session, rows_join_a_new_or_cleared_session_as_they_decode_alone)
{
    run_join_scenario(join_empty_sessions, "rows joining empty sessions");
}

/* The tiny model and two sessions of it: a batch and the session its rows
 * are encoded in (or another one beside it). */
typedef struct two_sessions {
    ted_model *model;
    ted_session *batch, *other;
} two_sessions;

static two_sessions open_two_sessions(void)
{
    ted_model *model = load(TINY_DIR);
    return (two_sessions){model, new_session(model), new_session(model)};
}

static void close_two_sessions(two_sessions t)
{
    ted_session_free(t.batch);
    ted_session_free(t.other);
    ted_model_free(t.model);
}

/* A session that rows join never encodes: it holds no encoder buffers,
 * (source positions, 7 d_model + d_ff) floats a row fewer than a session
 * that encoded the same rows for as many steps. */
Test(session, a_session_that_rows_join_holds_no_encoder_buffers)
{
    two_sessions t = open_two_sessions();
    ted_session *joined = t.batch, *encoded = t.other;
    static const int both[2] = {0, 1};
    join_encoded(joined, encoded, both, 2, STEPS);
    const int *ids[2];
    int lengths[2];
    pick_sources(both, 2, ids, lengths);
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(encoded, ids, lengths, 2, STEPS, &err), TED_OK, "%s",
                 err.message);
    int rows, source_len, max_steps, rows_e, source_len_e, max_steps_e;
    ted_session_room(joined, &rows, &source_len, &max_steps);
    ted_session_room(encoded, &rows_e, &source_len_e, &max_steps_e);
    cr_assert(rows == rows_e && source_len == source_len_e && max_steps == max_steps_e,
              "laid out alike: %d/%d/%d and %d/%d/%d", rows, source_len, max_steps, rows_e,
              source_len_e, max_steps_e);
    const ted_config *c = ted_model_config(t.model);
    size_t encoder = (size_t)rows * source_len * (7 * c->d_model + c->d_ff) * sizeof(float);
    size_t with = ted_session_buffer_bytes(encoded), without = ted_session_buffer_bytes(joined);
    cr_assert_geq(with, without + encoder, "%zu bytes encoded, %zu joined (encoder: %zu)", with,
                  without, encoder);
    close_two_sessions(t);
}

/* A server's batch, emptied when its rows end (ted_session_empty), keeps
 * its buffers whatever their size: rows that join again fit without a new
 * arena. ted_session_release() gives them back. */
Test(session, an_emptied_batch_keeps_its_buffers_until_released)
{
    two_sessions t = open_two_sessions();
    ted_session *s = t.batch, *encoded = t.other;
    static const int both[2] = {0, 1}, one[1] = {1};
    join_encoded(s, encoded, both, 2, STEPS);
    size_t bytes = ted_session_buffer_bytes(s);
    int rows, source_len, max_steps;
    ted_session_empty(s);
    cr_assert_eq(ted_session_batch(s), 0, "an emptied session has no rows");
    cr_assert_eq(ted_session_buffer_bytes(s), bytes, "its buffers stay");
    join_encoded(s, encoded, one, 1, STEPS);
    ted_session_room(s, &rows, &source_len, &max_steps);
    cr_assert(ted_session_buffer_bytes(s) == bytes && rows == 2,
              "one row joins the room of two: %zu bytes (%zu before), room for %d rows",
              ted_session_buffer_bytes(s), bytes, rows);
    ted_session_release(s);
    cr_assert_eq(ted_session_buffer_bytes(s), 0, "released, it holds nothing");
    close_two_sessions(t);
}

/* Rows joining one at a time: the room for rows, sources and steps grows
 * at least twofold whenever it must grow, so that 8 rows move the buffers
 * 3 times, not 7. */
Test(session, rows_joining_one_at_a_time_double_the_room)
{
    two_sessions t = open_two_sessions();
    ted_session *s = t.batch, *encoded = t.other;
    const int *ids[1] = {tiny_src1};
    int lengths[1] = {TINY_SRC1_LEN}, rows, source_len, max_steps;
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(s, ids, lengths, 1, 2, &err), TED_OK, "%s", err.message);
    ted_session_room(s, &rows, &source_len, &max_steps);
    cr_assert(rows == 1 && source_len == TINY_SRC1_LEN && max_steps == 2);
    /* sentence 0 (7 tokens, 5 steps): the source room doubles to 8, the
     * step room to 4, then 5 */
    join_encoded(s, encoded, (const int[]){0}, 1, STEPS);
    ted_session_room(s, &rows, &source_len, &max_steps);
    cr_assert(rows == 2 && source_len == 2 * TINY_SRC1_LEN && max_steps == STEPS,
              "room for %d rows of %d source positions and %d steps", rows, source_len,
              max_steps);
    static const int want_rows[9] = {0, 1, 2, 4, 4, 8, 8, 8, 8};
    for (int n = 3; n <= 8; n++) {
        join_encoded(s, encoded, (const int[]){n % 2}, 1, STEPS);
        ted_session_room(s, &rows, &source_len, &max_steps);
        cr_assert_eq(rows, want_rows[n], "%d rows: room for %d, not %d", n, rows,
                     want_rows[n]);
        cr_assert(source_len == 2 * TINY_SRC1_LEN && max_steps == STEPS);
    }
    close_two_sessions(t);
}

/* ---- the self-attention caches grow with the steps taken ----------------- */

enum { GROWN_STEPS = 300, GROWN_LIMIT = 1000 };

/* Token fed at step t by row b: a fixed walk over the target vocabulary. */
static int walk_token(int t, int b)
{
    return (7 * t + 3 * b + 1) % VOCAB;
}

/* Steps both sessions GROWN_STEPS times with the same tokens, rows
 * {1, 0, 1} selected at step 40; the logits must be the same bits. In
 * `growing`, the step capacity stays under twice the position (and at
 * least it), from TINY's 32 on. */
static void step_both(ted_session *growing, ted_session *whole)
{
    ted_error err = {0};
    int batch = 2, tokens[3];
    for (int t = 0; t < GROWN_STEPS; t++) {
        if (t == 40) {
            static const int rows[3] = {1, 0, 1};
            select_rows(growing, rows, 3);
            select_rows(whole, rows, 3);
            batch = 3;
        }
        for (int b = 0; b < batch; b++)
            tokens[b] = walk_token(t, b);
        const float *a = NULL, *b = NULL;
        cr_assert_eq(ted_session_step(growing, tokens, &a, &err), TED_OK, "%s", err.message);
        cr_assert_eq(ted_session_step(whole, tokens, &b, &err), TED_OK, "%s", err.message);
        cr_assert(!memcmp(a, b, sizeof(float) * batch * VOCAB),
                  "step %d: the growing session's logits differ from the whole one's", t);
        int rows, source_len, capacity;
        ted_session_room(growing, &rows, &source_len, &capacity);
        cr_assert(capacity >= t + 1 && (capacity <= 32 || capacity < 2 * (t + 1)),
                  "step %d: room for %d steps", t + 1, capacity);
    }
}

/* Two sessions decode the same rows: one whose caches start at 32 steps
 * and double, one laid out for every step from the start (it decoded as
 * far before, and an encode keeps the steps its arena holds). Their
 * logits are the same bits: the caches hold the same numbers, only their
 * capacity differs. max_steps is a bound: past it, step() refuses. */
Test(session, self_attention_caches_grow_with_the_steps_taken)
{
    temp_dir dir = make_model_dir("max_positions: 64", "max_positions: 1000", true);
    ted_model *model = load(dir.path);
    ted_session *growing = new_session(model), *whole = new_session(model);
    const int *ids[2] = {tiny_src0, tiny_src1};
    int lengths[2] = {TINY_SRC0_LEN, TINY_SRC1_LEN}, rows, source_len, capacity;
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(whole, ids, lengths, 2, GROWN_LIMIT, &err), TED_OK);
    for (int t = 0; t < GROWN_STEPS; t++) {
        int tokens[2] = {walk_token(t, 0), walk_token(t, 1)};
        cr_assert_eq(ted_session_step(whole, tokens, NULL, &err), TED_OK, "%s", err.message);
    }
    cr_assert_eq(ted_session_encode(whole, ids, lengths, 2, GROWN_LIMIT, &err), TED_OK);
    ted_session_room(whole, &rows, &source_len, &capacity);
    cr_assert_geq(capacity, GROWN_STEPS, "the re-encoded session holds %d steps", capacity);

    cr_assert_eq(ted_session_encode(growing, ids, lengths, 2, GROWN_LIMIT, &err), TED_OK);
    ted_session_room(growing, &rows, &source_len, &capacity);
    cr_assert_eq(capacity, 32, "an encode for %d steps lays out %d", GROWN_LIMIT, capacity);
    step_both(growing, whole);

    ted_session_release(growing);  /* gives the arena back: the next encode starts small */
    cr_assert_eq(ted_session_encode(growing, ids, lengths, 1, 40, &err), TED_OK);
    for (int t = 0; t < 40; t++) {
        int token = walk_token(t, 0);
        cr_assert_eq(ted_session_step(growing, &token, NULL, &err), TED_OK, "%s", err.message);
    }
    ted_session_room(growing, &rows, &source_len, &capacity);
    cr_assert_eq(capacity, 40, "40 steps of a 40-step decode: room for %d", capacity);
    int token = 1;
    expect_error(ted_session_step(growing, &token, NULL, &err), &err, TED_ERR_ARGUMENT, "40",
                 "a step past max_steps");
    ted_session_free(growing);
    ted_session_free(whole);
    ted_model_free(model);
    remove_model_dir(&dir);
}

Test(session, join_errors)
{
    two_sessions t = open_two_sessions();
    ted_session *s = t.batch, *other = t.other;
    static const int first[1] = {0}, second[1] = {1};
    ted_error err = {0};
    expect_error(ted_session_join(s, other, &err), &err, TED_ERR_ARGUMENT, "no encoded rows",
                 "joining rows never encoded");
    encode(s, first, 1);
    expect_error(ted_session_join(s, s, &err), &err, TED_ERR_ARGUMENT, "another session",
                 "a session joining itself");
    encode(other, second, 1);
    step(other, second, 1);
    expect_error(ted_session_join(s, other, &err), &err, TED_ERR_ARGUMENT, "stepped",
                 "rows that have stepped");
    cr_assert_eq(ted_session_batch(s), 1, "a refused join keeps the batch");
    cr_assert_eq(ted_session_batch(other), 1, "a refused join keeps the joining rows");
    ted_session_keep_attention(other, true);
    encode(other, second, 1);
    expect_error(ted_session_join(s, other, &err), &err, TED_ERR_ARGUMENT, "attention",
                 "joining rows that keep attention");
    ted_session_keep_attention(other, false);
    encode(other, second, 1);
    ted_session_keep_attention(s, true);
    encode(s, first, 1);
    expect_error(ted_session_join(s, other, &err), &err, TED_ERR_ARGUMENT, "attention",
                 "rows joining a session that keeps attention");
    cr_assert_eq(ted_session_batch(s), 1, "a refused join keeps the batch");
    ted_session *empty = new_session(t.model), *plain = new_session(t.model);
    ted_session_keep_attention(empty, true);
    encode(plain, first, 1);
    expect_error(ted_session_join(empty, plain, &err), &err, TED_ERR_ARGUMENT, "attention",
                 "rows joining an empty session that is to keep attention");
    ted_session_free(plain);
    ted_session_free(empty);
    close_two_sessions(t);
}

/* Greedy decoding where each sentence joins when the previous one is
 * half done: the tutorial's greedy_decode tokens (PyTorch), sentence by
 * sentence. */
Test(session, greedy_rows_that_join_late_give_the_tutorials_tokens)
{
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        int eos = ted_model_config(model)->eos_id, bos = ted_model_config(model)->bos_id;
        static const int order[3] = {0, 1, 0};  /* row r decodes sentence order[r] */
        int owner[3], tokens[3], out[3][64], length[3] = {0}, max_length[3];
        for (int r = 0; r < 3; r++)
            max_length[r] = ted_max_target_length(model, source_lengths[order[r]], 0);
        ted_session *s = new_session(model), *encoded = new_session(model);
        encode(s, order, 1);
        int batch = 1, joined = 1;
        owner[0] = 0;
        tokens[0] = bos;
        while (batch > 0) {
            if (joined < 3 && length[joined - 1] == 2) {  /* the last one has 2 tokens */
                join_encoded(s, encoded, order + joined, 1, max_length[joined]);
                owner[batch] = joined;
                tokens[batch++] = bos;
                joined++;
            }
            const float *logits = NULL;
            ted_error err = {0};
            cr_assert_eq(ted_session_step(s, tokens, &logits, &err), TED_OK, "%s",
                         err.message);
            int keep[3], kept = 0;
            for (int b = 0; b < batch; b++) {
                int r = owner[b], next = ted_argmax(logits + (size_t)b * VOCAB, VOCAB);
                out[r][length[r]++] = next;
                if (next != eos && length[r] < max_length[r]) {
                    keep[kept] = b;
                    owner[kept] = r;
                    tokens[kept++] = next;
                }
            }
            if (kept > 0 && kept < batch)
                select_rows(s, keep, kept);
            batch = kept;
            if (batch == 0 && joined < 3) {  /* the batch ran dry: the next starts anew */
                encode(s, order + joined, 1);
                owner[0] = joined++;
                tokens[batch++] = bos;
            }
        }
        for (int r = 0; r < 3; r++) {
            int sentence = order[r], n = m->greedy_length[sentence];
            cr_assert_eq(length[r], n, "%s: row %d (sentence %d): %d tokens, the tutorial %d",
                         m->dir, r, sentence, length[r], n);
            for (int i = 0; i < n; i++)
                cr_assert_eq(out[r][i], m->greedy[sentence][i],
                             "%s: row %d (sentence %d) token %d: %d, the tutorial %d", m->dir,
                             r, sentence, i, out[r][i], m->greedy[sentence][i]);
        }
        ted_session_free(encoded);
        ted_session_free(s);
        ted_model_free(model);
    }
}

/* The rows of one step through the public engine (ted/rows.h); returns
 * how many go on, listed in rows/tokens and selected in the session. */
static int choose_rows(ted_session *s, ted_rows *engine, ted_row *rows, int *tokens, int count)
{
    const float *logits = NULL;
    ted_error err = {0};
    int keep[4], token[4], ended[4], feed[4];
    ted_row next[4];
    cr_assert_eq(ted_session_step(s, tokens, &logits, &err), TED_OK, "%s", err.message);
    ted_rows_step step = {.rows = rows, .count = count, .keep = keep, .next = next,
                          .tokens = feed, .token = token, .ended = ended};
    cr_assert_eq(ted_rows_choose(engine, logits, &step, &err), TED_OK, "%s", err.message);
    int kept = step.kept;
    if (kept > 0)
        select_rows(s, keep, kept);
    for (int k = 0; k < kept; k++) {
        rows[k] = next[k];
        tokens[k] = feed[k];
    }
    return kept;
}

/* The rows engine of ted/rows.h, sentences joining a running session
 * while others decode (as ted serve's batch steps them): greedy rows give
 * the tutorial's greedy_decode tokens (PyTorch), sentence by sentence; a
 * stopped sentence's rows end at the next step. */
Test(session, the_public_rows_engine_gives_the_tutorials_greedy_tokens)
{
    const tiny_model *m = &tiny_models[0];
    ted_model *model = load(m->dir);
    int bos = ted_model_config(model)->bos_id;
    ted_decode_options greedy = {.strategy = TED_DECODE_GREEDY, .n_best = 1};
    static const int order[3] = {0, 1, 0};  /* sentence r decodes source order[r] */
    ted_row_sentence *sentence[3];
    ted_rows *engine = NULL;
    ted_error err = {0};
    int most = 0;  /* the longest max_length */
    cr_assert_eq(ted_rows_new(model, 4, &engine, &err), TED_OK, "%s", err.message);
    for (int r = 0; r < 3; r++) {
        ted_row_sentence_spec spec = {
            .source_ids = sources[order[r]], .source_length = source_lengths[order[r]],
            .max_length = ted_max_target_length(model, source_lengths[order[r]], 0),
            .stream = (uint64_t)r};
        most = spec.max_length > most ? spec.max_length : most;
        cr_assert_eq(ted_row_sentence_new(model, &greedy, &spec, &sentence[r], &err), TED_OK,
                     "%s", err.message);
        cr_assert_eq(ted_row_sentence_samples(sentence[r]), 1);
    }
    ted_session *s = new_session(model), *encoded = new_session(model);
    encode(s, order, 1);
    ted_row rows[4] = {{sentence[0], 0}};
    int tokens[4] = {bos}, batch = 1;
    for (int step = 0; batch > 0; step++) {
        if (step == 2) {  /* sentence 1 joins; sentence 2 too, to be stopped */
            join_encoded(s, encoded, order + 1, 2, most);
            rows[batch] = (ted_row){sentence[1], 0};
            tokens[batch++] = bos;
            rows[batch] = (ted_row){sentence[2], 0};
            tokens[batch++] = bos;
            ted_row_sentence_stop(sentence[2]);
        }
        batch = choose_rows(s, engine, rows, tokens, batch);
    }
    for (int r = 0; r < 2; r++) {
        ted_hypothesis h = {0};
        int n = m->greedy_length[order[r]];
        cr_assert_eq(ted_row_sentence_result(sentence[r], &h, &err), TED_OK, "%s", err.message);
        cr_assert_eq(h.length, n, "sentence %d: %d tokens, the tutorial %d", r, h.length, n);
        for (int i = 0; i < n; i++)
            cr_assert_eq(h.ids[i], m->greedy[order[r]][i], "sentence %d token %d: %d, the tutorial %d",
                         r, i, h.ids[i], m->greedy[order[r]][i]);
        ted_hypotheses_free(&h, 1);
    }
    ted_hypothesis h = {0};
    cr_assert_eq(ted_row_sentence_result(sentence[2], &h, &err), TED_ERR_CANCELLED);
    cr_assert_eq(h.length, 0, "a stopped sentence gives nothing");
    for (int r = 0; r < 3; r++)
        ted_row_sentence_free(sentence[r]);
    ted_rows_free(engine);
    ted_session_free(encoded);
    ted_session_free(s);
    ted_model_free(model);
}

/* ted_rows_choose refuses rows beyond its capacity and a sample that is
 * not its sentence's, before it changes any sentence. */
Test(session, the_public_rows_engine_refuses_rows_it_cannot_take)
{
    ted_model *model = load(tiny_models[0].dir);
    ted_decode_options sample = {.strategy = TED_DECODE_SAMPLE, .n_best = 3,
                                 .sampling = {.temperature = 1.0f, .top_p = 1.0f}};
    ted_row_sentence_spec spec = {.source_ids = sources[0], .source_length = source_lengths[0],
                                  .max_length = 4};
    ted_row_sentence *sentence = NULL;
    ted_rows *engine = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_row_sentence_new(model, &sample, &spec, &sentence, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(ted_row_sentence_samples(sentence), 3);
    cr_assert_eq(ted_rows_new(model, 2, &engine, &err), TED_OK, "%s", err.message);
    static const float logits[VOCAB];
    int keep[4], tokens[4], token[4], ended[4];
    ted_row next[4], rows[1] = {{sentence, 0}};
    ted_rows_step step = {.rows = rows, .count = 1, .keep = keep, .next = next,
                          .tokens = tokens, .token = token, .ended = ended};
    cr_assert_eq(ted_rows_choose(engine, logits, &step, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "draw 3 tokens"), "%s", err.message);
    rows[0].sample = 1;
    cr_assert_eq(ted_rows_choose(engine, logits, &step, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "rows[0].sample 1"), "%s", err.message);
    spec.max_length = 0;
    ted_row_sentence *bad = NULL;
    cr_assert_eq(ted_row_sentence_new(model, &sample, &spec, &bad, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "max_length"), "%s", err.message);
    cr_assert_null(bad);
    ted_rows_free(engine);
    ted_row_sentence_free(sentence);
    ted_model_free(model);
}

/* ---- greedy decoding ------------------------------------------------------ */

static void check_greedy(const tiny_model *m, ted_model *model, const int *which, int batch)
{
    const int *ids[2];
    int lengths[2], max_lengths[2];
    ted_hypothesis h[2];
    for (int b = 0; b < batch; b++) {
        ids[b] = sources[which[b]];
        lengths[b] = source_lengths[which[b]];
        max_lengths[b] = ted_max_target_length(model, lengths[b], 0);
        /* the tutorial: max_len = source tokens + 5, BOS included */
        cr_assert_eq(max_lengths[b], lengths[b] + 4);
    }
    ted_session *s = new_session(model);
    ted_error err = {0};
    ted_status status = decode_greedy(s, BATCH(ids, lengths, max_lengths, batch), h, &err);
    cr_assert_eq(status, TED_OK, "greedy: %s", err.message);
    for (int b = 0; b < batch; b++) {
        int sentence = which[b];
        int n = m->greedy_length[sentence];
        cr_assert_eq(h[b].length, n,
                     "%s: greedy batch %d row %d (sentence %d): %d ids, the tutorial %d",
                     m->dir, batch, b, sentence, h[b].length, n);
        for (int i = 0; i < n; i++)
            cr_assert_eq(h[b].ids[i], m->greedy[sentence][i],
                         "%s: greedy batch %d row %d (sentence %d) id %d: %d, the tutorial %d",
                         m->dir, batch, b, sentence, i, h[b].ids[i], m->greedy[sentence][i]);
    }
    ted_hypotheses_free(h, batch);
    ted_session_free(s);
}

Test(session, greedy_matches_the_tutorial)
{
    static const int first[1] = {0}, second[1] = {1}, both[2] = {0, 1}, swapped[2] = {1, 0};
    for (int k = 0; k < MODEL_COUNT; k++) {
        const tiny_model *m = &tiny_models[k];
        ted_model *model = load(m->dir);
        check_greedy(m, model, first, 1);
        check_greedy(m, model, second, 1);
        check_greedy(m, model, both, 2);
        check_greedy(m, model, swapped, 2);
        ted_model_free(model);
    }
}

/* ---- banned tokens ---------------------------------------------------------- */

/* The first step's logits (BOS fed; PyTorch's) rank `first` then `second`. */
static void first_step_ranking(int *first, int *second)
{
    const float *row = tiny_logits0;  /* step 0 */
    *first = 0;
    for (int v = 1; v < VOCAB; v++)
        if (row[v] > row[*first])
            *first = v;
    *second = *first == 0 ? 1 : 0;
    for (int v = 0; v < VOCAB; v++)
        if (v != *first && row[v] > row[*second])
            *second = v;
}

static bool produces(const ted_hypothesis *h, int count, int id)
{
    for (int i = 0; i < count; i++)
        for (int t = 0; t < h[i].length; t++)
            if (h[i].ids[t] == id)
                return true;
    return false;
}

/* config.yaml bans the token greedy decoding takes first: greedy takes the
 * second best instead (with the model's own log-prob, PyTorch's
 * log-softmax), and neither greedy decoding, beam search nor sampling ever
 * produce it. */
Test(session, banned_tokens_are_never_generated, .timeout = 60)
{
    int first, second;
    first_step_ranking(&first, &second);
    cr_assert_eq(first, tiny_greedy0[0], "greedy takes the best token of the first step");
    char banned[96];
    snprintf(banned, sizeof banned, "max_length_offset: 4\n  banned_ids: [%d]", first);
    temp_dir dir = make_model_dir("max_length_offset: 4", banned, true);
    ted_model *model = load(dir.path);
    ted_session *session = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_new(model, &session, &err), TED_OK, "%s", err.message);
    const int *lengths = source_lengths, max_lengths[2] = {12, 12};
    ted_hypothesis h[2 * 40];
    cr_assert_eq(decode_greedy(session, BATCH(sources, lengths, max_lengths, 2), h, &err), TED_OK,
                 "%s", err.message);
    cr_assert_eq(h[0].ids[0], second);
    double max = tiny_logits0[first], sum = 0.0;
    for (int v = 0; v < VOCAB; v++)
        sum += exp(tiny_logits0[v] - max);
    double want = tiny_logits0[second] - max - log(sum);
    cr_assert(fabs(h[0].log_probs[0] - want) <= TOL_COMPOSED, "log-prob %.7f, PyTorch %.7f",
              h[0].log_probs[0], want);
    cr_assert(!produces(h, 2, first), "greedy");
    ted_hypotheses_free(h, 2);
    ted_beam_params beam = {4, 0.6f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE};
    for (int n = 0; n < 2; n++, beam.length_normalization = TED_LENGTH_POWER) {
        cr_assert_eq(decode_beam(session, BATCH(sources, lengths, max_lengths, 2), &beam, 4, NULL, h, &err), TED_OK, "%s", err.message);
        cr_assert(!produces(h, 2 * 4, first), "beam search");
        ted_hypotheses_free(h, 2 * 4);
    }
    ted_sampling_params hot = {.temperature = 3.0f, .top_k = 0, .top_p = 1.0f, .seed = 5};
    cr_assert_eq(decode_sampling(session, BATCH(sources, lengths, max_lengths, 2), &hot, 40, h, &err), TED_OK, "%s", err.message);
    cr_assert(!produces(h, 2 * 40, first), "sampling");
    ted_hypotheses_free(h, 2 * 40);
    float row[VOCAB];
    memcpy(row, tiny_logits0, sizeof row);
    ted_ban_tokens(model, row);
    for (int v = 0; v < VOCAB; v++)
        cr_assert(v == first ? row[v] == -INFINITY : row[v] == tiny_logits0[v]);
    ted_session_free(session);
    ted_model_free(model);
    remove_model_dir(&dir);
}

/* ---- broken model directories -------------------------------------------- */

/* Writes DIR/model.safetensors: the tiny model's file with its JSON header
 * passed through `edit` (same data section; the header padded with spaces
 * to its old length, so every offset stays valid). */
static void write_edited_weights(const temp_dir *dir, void (*edit)(cJSON *header))
{
    size_t size;
    char *file = read_file(TINY_DIR "/model.safetensors", &size);
    cr_assert_geq(size, 8);
    uint64_t length = 0;
    for (int i = 0; i < 8; i++)
        length |= (uint64_t)(unsigned char)file[i] << (8 * i);
    cr_assert_leq(length, size - 8);
    cJSON *header = cJSON_ParseWithLength(file + 8, (size_t)length);
    cr_assert_not_null(header);
    edit(header);
    char *text = cJSON_PrintUnformatted(header);
    cr_assert_not_null(text);
    size_t text_length = strlen(text);
    cr_assert_leq(text_length, length, "the edited header grew");
    memset(file + 8, ' ', (size_t)length);
    memcpy(file + 8, text, text_length);
    write_file(dir, "model.safetensors", file, size);
    cJSON_free(text);
    cJSON_Delete(header);
    free(file);
}

#define DROPPED_TENSOR "transformer.decoder.layers.1.multihead_attn.out_proj.bias"

static void drop_tensor(cJSON *header)
{
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(header, DROPPED_TENSOR));
    cJSON_DeleteItemFromObjectCaseSensitive(header, DROPPED_TENSOR);
}

static void transpose_generator_shape(cJSON *header)
{
    cJSON *tensor = cJSON_GetObjectItemCaseSensitive(header, "generator.weight");
    cr_assert_not_null(tensor);
    cJSON *shape = cJSON_CreateIntArray((const int[]){16, VOCAB}, 2);
    cr_assert(cJSON_ReplaceItemInObjectCaseSensitive(tensor, "shape", shape));
}

static void expect_load_error(const temp_dir *dir, ted_status want, const char *needle1,
                              const char *needle2, const char *needle3)
{
    static char sentinel;
    ted_model *model = (ted_model *)(void *)&sentinel;  /* a failed load must reset it to NULL */
    ted_error err = {0};
    ted_status got = ted_model_load(dir->path, &model, &err);
    cr_assert_eq(got, want, "status %s, expected %s: %s", ted_status_name(got),
                 ted_status_name(want), err.message);
    cr_assert_null(model);
    const char *needles[3] = {needle1, needle2, needle3};
    for (int i = 0; i < 3; i++)
        if (needles[i])
            cr_assert(strstr(err.message, needles[i]), "message \"%s\" does not mention \"%s\"",
                      err.message, needles[i]);
}

Test(session, load_a_copy_of_the_tiny_model)
{
    temp_dir dir = make_model_dir(NULL, NULL, true);
    ted_model *model = load(dir.path);
    ted_model_free(model);
    remove_model_dir(&dir);
}

Test(session, load_missing_weights_file)
{
    temp_dir dir = make_model_dir("weights: model.safetensors", "weights: missing.safetensors",
                                  true);
    expect_load_error(&dir, TED_ERR_IO, "missing.safetensors", NULL, NULL);
    remove_model_dir(&dir);
}

Test(session, load_weights_missing_a_tensor)
{
    temp_dir dir = make_model_dir(NULL, NULL, false);
    write_edited_weights(&dir, drop_tensor);
    expect_load_error(&dir, TED_ERR_WEIGHTS, DROPPED_TENSOR, NULL, NULL);
    remove_model_dir(&dir);
}

Test(session, load_shape_mismatch_in_the_weights)
{
    temp_dir dir = make_model_dir(NULL, NULL, false);
    write_edited_weights(&dir, transpose_generator_shape);
    expect_load_error(&dir, TED_ERR_WEIGHTS, "generator.weight", "[16, 14]", "[14, 16]");
    remove_model_dir(&dir);
}

Test(session, load_shape_mismatch_with_the_config)
{
    temp_dir dir = make_model_dir("d_ff: 32", "d_ff: 24", true);
    expect_load_error(&dir, TED_ERR_WEIGHTS, "transformer.encoder.layers.0.linear1.weight",
                      "[32, 16]", "[24, 16]");
    remove_model_dir(&dir);
}
