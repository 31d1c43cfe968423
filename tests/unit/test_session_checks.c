/* The session API's checks of its arguments: an attention kind outside the
 * enum is an error, not an untouched view returned as success. */
#include <criterion/criterion.h>
#include <string.h>

#include "layer_fixtures.h"
#include "ted/ted.h"

Test(session_checks, attention_kind_outside_the_enum_is_refused)
{
    ted_model *model = NULL;
    ted_session *s = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_model_load(TINY_DIR, &model, &err), TED_OK, "%s", err.message);
    cr_assert_eq(ted_session_new(model, &s, &err), TED_OK, "%s", err.message);
    ted_session_keep_attention(s, true);
    const int *sources[1] = {tiny_src0};
    const int lengths[1] = {TINY_SRC0_LEN};
    cr_assert_eq(ted_session_encode(s, sources, lengths, 1, TINY_STEPS, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(ted_session_step(s, tiny_tgt0, NULL, &err), TED_OK, "%s", err.message);

    ted_attention_view view = {.heads = -7};
    static const int kinds[] = {-1, 3, 1000};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        err = (ted_error){0};
        cr_assert_eq(ted_session_attention(s, (ted_attention_kind)kinds[i], 0, 0, &view, &err),
                     TED_ERR_ARGUMENT, "kind %d accepted", kinds[i]);
        cr_assert(strstr(err.message, "kind") != NULL, "message: %s", err.message);
        cr_assert_eq(view.heads, -7, "the view was written for kind %d", kinds[i]);
    }
    cr_assert_eq(ted_session_attention(s, TED_CROSS_ATTENTION, 0, 0, &view, &err), TED_OK,
                 "%s", err.message);
    ted_session_free(s);
    ted_model_free(model);
}
