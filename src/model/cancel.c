/* ted_cancel: the flag that stops decodes between steps (ted/ted.h). A
 * signal handler may request a stop, so the flag is one lock-free atomic
 * that requesting stores and every step loads. */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "ted/ted.h"

struct ted_cancel {
    atomic_bool requested;
};

ted_status ted_cancel_new(ted_cancel **cancel, ted_error *err)
{
    TED_REQUIRE(cancel, err);
    *cancel = ted_alloc(1, sizeof **cancel, "cancel flag", err);
    if (!*cancel)
        return TED_ERR_NOMEM;
    atomic_init(&(*cancel)->requested, false);
    return TED_OK;
}

void ted_cancel_free(ted_cancel *cancel)
{
    free(cancel);
}

void ted_cancel_request(ted_cancel *cancel)
{
    if (cancel)
        atomic_store(&cancel->requested, true);
}

void ted_cancel_reset(ted_cancel *cancel)
{
    if (cancel)
        atomic_store(&cancel->requested, false);
}

bool ted_cancel_requested(const ted_cancel *cancel)
{
    return cancel && atomic_load_explicit(&((ted_cancel *)cancel)->requested,
                                          memory_order_relaxed);
}
