/* Orders of indices: ted_order_by_key, declared
 * for callers of the library in ted/util.h. */
#ifndef TED_CORE_ORDER_H
#define TED_CORE_ORDER_H

#include "ted/util.h"

#endif
