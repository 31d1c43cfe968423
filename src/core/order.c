/* Orders of indices: a stable order by an integer key. */
#include "core/order.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"

typedef struct keyed {
    int key, index;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

ted_status ted_order_by_key(int *indices, int n, const int *keys, const char *what,
                            ted_error *err)
{
    if (n > 0) {
        TED_REQUIRE(indices, err);
        TED_REQUIRE(keys, err);
    }
    keyed *k = ted_alloc(n > 0 ? n : 1, sizeof *k, what, err);
    if (!k)
        return TED_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        k[i] = (keyed){keys[indices[i]], indices[i]};
    qsort(k, (size_t)(n > 0 ? n : 0), sizeof *k, by_key);
    for (int i = 0; i < n; i++)
        indices[i] = k[i].index;
    free(k);
    return TED_OK;
}
