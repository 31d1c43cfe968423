/* Orders of indices. */
#ifndef TED_CORE_ORDER_H
#define TED_CORE_ORDER_H

#include "ted/ted.h"

/* Sorts indices[0..n) by keys[index], ascending, an index before a larger
 * one among equal keys: the order in which sentences of these lengths
 * (keys) decode, shortest first. `keys` is read at every index listed.
 * TED_ERR_NOMEM (naming `what`) when the sort's memory cannot be had. */
ted_status ted_order_by_key(int *indices, int n, const int *keys, const char *what,
                            ted_error *err);

#endif
