/* Every public function given NULL where it needs a pointer: a function
 * that returns a status returns TED_ERR_ARGUMENT naming the argument, the
 * others return their "nothing" (0, -1, NULL, "") or do nothing; none
 * crashes. */
#include <criterion/criterion.h>
#include <string.h>

#include "ted/rows.h"
#include "ted/ted.h"
#include "ted/util.h"

#define TOY_DIR "models/toy-en-fr"

static ted_model *model;
static ted_session *session;

static void load(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_model_load(TOY_DIR, &model, &err), TED_OK, "%s", err.message);
    cr_assert_eq(ted_session_new(model, &session, &err), TED_OK, "%s", err.message);
}

static void unload(void)
{
    ted_session_free(session);
    ted_model_free(model);
}

/* The status is TED_ERR_ARGUMENT and the message names `what`. */
#define REFUSED(call, what)                                                                 \
    do {                                                                                    \
        ted_error err = {0};                                                                \
        ted_status s = call;                                                                \
        cr_assert_eq(s, TED_ERR_ARGUMENT, "%s: status %d", #call, (int)s);                  \
        cr_assert(strstr(err.message, what), "%s: \"%s\" does not name %s", #call,          \
                  err.message, what);                                                       \
    } while (0)

TestSuite(null, .init = load, .fini = unload);

Test(null, text_and_ids)
{
    int *ids = NULL, count = 0;
    REFUSED(ted_encode_source(model, NULL, &ids, &count, NULL, &err), "text is NULL");
    REFUSED(ted_encode_source(NULL, "the cat", &ids, &count, NULL, &err), "m is NULL");
    REFUSED(ted_encode_source(model, "the cat", NULL, &count, NULL, &err), "ids is NULL");
    REFUSED(ted_encode_source(model, "the cat", &ids, NULL, NULL, &err), "count is NULL");
    REFUSED(ted_encode_target(model, NULL, &ids, &count, NULL, &err), "text is NULL");
    ted_source source;
    REFUSED(ted_prepare_source(model, NULL, NULL, &source, &err), "text is NULL");
    cr_assert_null(source.ids);
    REFUSED(ted_prepare_source(NULL, "the cat", NULL, &source, &err), "m is NULL");
    REFUSED(ted_prepare_source(model, "the cat", NULL, NULL, &err), "out is NULL");
    cr_assert_eq(ted_target_id(model, NULL), -1);
    cr_assert_eq(ted_target_id(NULL, "le"), -1);
    const char *set = "set", *const *codes = &set;
    cr_assert_eq(ted_model_languages(NULL, TED_SIDE_TARGET, &codes), 0);
    cr_assert_null(codes);
    cr_assert_eq(ted_model_languages(model, TED_SIDE_SOURCE, NULL), 1);  /* en */
    cr_assert_str_eq(ted_target_token(NULL, 3), "");
    cr_assert_str_eq(ted_source_token(NULL, 3), "");
    cr_assert_null(ted_decode_target(model, NULL, 3));
    cr_assert_null(ted_decode_target(NULL, (int[1]){3}, 1));
    cr_assert_null(ted_model_config(NULL));
    cr_assert_null(ted_config_json(NULL));
    ted_config_view view = ted_config_get_view(NULL);
    cr_assert(view.model.d_model == 0 && view.tokens.eos_id == 0);
    cr_assert_str_eq(view.files.weights, "");
    cr_assert_str_eq(view.files.shortlist, "");
    cr_assert_eq(ted_model_tensor_count(NULL), 0);
    cr_assert_null(ted_model_tensor(NULL, 0).name);
    ted_source_free(NULL);
    ted_free(NULL);
}

Test(null, session)
{
    const float *logits;
    int token = 1;
    REFUSED(ted_session_step(session, NULL, &logits, &err), "tokens is NULL");
    REFUSED(ted_session_step(NULL, &token, &logits, &err), "s is NULL");
    REFUSED(ted_session_select(session, NULL, 1, &err), "rows is NULL");
    REFUSED(ted_session_select(NULL, &token, 1, &err), "s is NULL");
    REFUSED(ted_session_encode(NULL, NULL, NULL, 1, 5, &err), "s is NULL");
    REFUSED(ted_session_encode(session, NULL, (int[1]){3}, 1, 5, &err), "empty batch");
    const int *missing[1] = {NULL};
    REFUSED(ted_session_encode(session, missing, (int[1]){3}, 1, 5, &err), "ids is NULL");
    REFUSED(ted_session_join(NULL, session, &err), "s is NULL");
    REFUSED(ted_session_join(session, NULL, &err), "not another session");
    ted_attention_view view;
    REFUSED(ted_session_attention(NULL, TED_CROSS_ATTENTION, 0, 0, &view, &err), "s is NULL");
    REFUSED(ted_session_attention(session, TED_CROSS_ATTENTION, 0, 0, NULL, &err), "view is NULL");
    REFUSED(ted_session_new(NULL, &session, &err), "NULL");
    cr_assert_null(ted_session_model(NULL));
    cr_assert_eq(ted_session_batch(NULL), 0);
    cr_assert_eq(ted_session_position(NULL), 0);
    ted_session_keep_attention(NULL, true);
    ted_session_keep_encoder_attention(NULL, false);
    ted_session_clear(NULL);
    ted_session_free(NULL);
}

Test(null, decoding)
{
    ted_hypothesis h;
    ted_decode_options greedy = {.strategy = TED_DECODE_GREEDY, .n_best = 1};
    int length = 3, max_length = 5, *none = NULL;
    ted_batch batch = {.source_ids = (const int *const *)&none, .source_lengths = &length,
                       .max_lengths = &max_length, .count = 1};
    REFUSED(ted_decode(NULL, &batch, &greedy, NULL, &h, &err), "s is NULL");
    REFUSED(ted_decode(session, NULL, &greedy, NULL, &h, &err), "empty batch");
    REFUSED(ted_decode(session, &batch, NULL, NULL, &h, &err), "no options");
    REFUSED(ted_decode(session, &batch, &greedy, NULL, NULL, &err), "out is NULL");
    REFUSED(ted_decode(session, &batch, &greedy, NULL, &h, &err), "ids is NULL");
    cr_assert_eq(ted_argmax(NULL, 4), -1);
    cr_assert_eq(ted_top_k(NULL, 4, 2, (int[2]){0}, NULL), 0);
    ted_ban_tokens(model, NULL);
    ted_ban_tokens(NULL, (float[4]){0});
    cr_assert_eq(ted_max_target_length(NULL, 4, 0), 0);
    ted_hypotheses_free(NULL, 3);
}

Test(null, translation)
{
    char *out[2] = {NULL, NULL};
    const char *one_missing[2] = {"the cat sleeps .", NULL};
    REFUSED(ted_translate(model, NULL, 2, NULL, out, NULL, &err), "sources is NULL");
    REFUSED(ted_translate(model, one_missing, 2, NULL, out, NULL, &err), "text is NULL");
    cr_assert_null(out[0]);
    cr_assert_null(out[1]);
    REFUSED(ted_translate(NULL, one_missing, 1, NULL, out, NULL, &err), "m is NULL");
    REFUSED(ted_translate(model, one_missing, 1, NULL, NULL, NULL, &err), "outputs is NULL");
    ted_translation t[2];
    REFUSED(ted_translate_n_best(model, NULL, 2, NULL, t, NULL, &err), "sources is NULL");
    REFUSED(ted_translate_ids(model, NULL, (int[1]){3}, 1, NULL, t, &err), "no ids");
    REFUSED(ted_translate_options_check(model, NULL, &err), "o is NULL");
    REFUSED(ted_model_load(NULL, &model, &err), "NULL");
    REFUSED(ted_model_check_weights(NULL, &err), "NULL");
    ted_translations_free(NULL, 2);
}

static ted_status parse_nothing(const char *text, size_t length, const char *name, void *into,
                                ted_error *err)
{
    (void)text, (void)length, (void)name, (void)into, (void)err;
    return TED_OK;
}

Test(null, utilities)
{
    int fd = -1, indices[2] = {1, 0};
    char *text = NULL;
    size_t length = 0;
    const char *problem = NULL;
    REFUSED(ted_open_regular(NULL, &fd, &err), "path is NULL");
    REFUSED(ted_open_regular(TOY_DIR "/config.yaml", NULL, &err), "fd is NULL");
    REFUSED(ted_read_file(NULL, 16, TED_ERR_IO, "a file", &text, &length, &err), "path");
    REFUSED(ted_read_file(TOY_DIR "/config.yaml", 16, TED_ERR_IO, "a file", NULL, &length,
                          &err),
            "text is NULL");
    REFUSED(ted_parse_file(TOY_DIR "/config.yaml", 1 << 20, TED_ERR_IO, "a file", NULL, NULL,
                           &err),
            "parse is NULL");
    REFUSED(ted_parse_file(NULL, 16, TED_ERR_IO, "a file", parse_nothing, NULL, &err), "path");
    REFUSED(ted_order_by_key(NULL, 2, (int[2]){0}, "order", &err), "indices is NULL");
    REFUSED(ted_order_by_key(indices, 2, NULL, "order", &err), "keys is NULL");
    cr_assert_eq(ted_utf8_char(NULL, 4, &problem), 0);
    cr_assert_not_null(problem);
    cr_assert_eq(ted_fail_context(NULL, "x"), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_fail(NULL, TED_ERR_IO, "x"), TED_ERR_IO);
    cr_assert_null(ted_alloc(SIZE_MAX, 2, "x", NULL));
    cr_assert(!ted_same_file(NULL, TOY_DIR));
    cr_assert_eq(fd, -1);
    cr_assert_null(text);
}

Test(null, rows)
{
    ted_decode_options greedy = {.strategy = TED_DECODE_GREEDY, .n_best = 1};
    ted_row_sentence_spec spec = {.max_length = 4};
    ted_row_sentence *sentence = NULL;
    ted_rows *rows = NULL;
    ted_hypothesis h = {0};
    REFUSED(ted_row_sentence_new(NULL, &greedy, &spec, &sentence, &err), "m is NULL");
    REFUSED(ted_row_sentence_new(model, NULL, &spec, &sentence, &err), "o is NULL");
    REFUSED(ted_row_sentence_new(model, &greedy, NULL, &sentence, &err), "spec is NULL");
    REFUSED(ted_row_sentence_new(model, &greedy, &spec, NULL, &err), "sentence is NULL");
    REFUSED(ted_row_sentence_result(NULL, &h, &err), "s is NULL");
    REFUSED(ted_rows_new(NULL, 4, &rows, &err), "m is NULL");
    REFUSED(ted_rows_new(model, 4, NULL, &err), "rows is NULL");
    REFUSED(ted_rows_choose(NULL, NULL, NULL, &err), "r is NULL");
    cr_assert_eq(ted_rows_new(model, 4, &rows, NULL), TED_OK);
    REFUSED(ted_rows_choose(rows, NULL, NULL, &err), "step is NULL");
    REFUSED(ted_rows_choose(rows, NULL, &(ted_rows_step){.count = 1}, &err), "logits is NULL");
    REFUSED(ted_rows_choose(rows, (float[1]){0}, &(ted_rows_step){.count = 1}, &err),
            "rows is NULL");
    cr_assert_eq(ted_row_samples(NULL), 0);
    cr_assert_eq(ted_row_sentence_samples(NULL), 0);
    ted_row_sentence_stop(NULL);
    ted_row_sentence_free(NULL);
    ted_rows_free(rows);
    ted_rows_free(NULL);
    cr_assert_null(sentence);
}
