/* core/order.c: indices ordered by a key, ties by index, worked by hand. */
#include <criterion/criterion.h>

#include "core/order.h"

Test(order, by_key_then_index)
{
    const int keys[] = {5, 2, 9, 2, 5, 1};
    int indices[] = {0, 1, 2, 3, 4, 5};
    ted_error err = {0};
    cr_assert_eq(ted_order_by_key(indices, 6, keys, "test", &err), TED_OK);
    const int want[] = {5, 1, 3, 0, 4, 2};
    for (int i = 0; i < 6; i++)
        cr_expect_eq(indices[i], want[i], "position %d: %d, want %d", i, indices[i], want[i]);
}

Test(order, a_subset_in_any_order)
{
    const int keys[] = {3, 1, 3, 0, 7};
    int indices[] = {4, 2, 0};  /* sentences 1 and 3 left out */
    ted_error err = {0};
    cr_assert_eq(ted_order_by_key(indices, 3, keys, "test", &err), TED_OK);
    cr_expect(indices[0] == 0 && indices[1] == 2 && indices[2] == 4, "%d %d %d", indices[0],
              indices[1], indices[2]);
    cr_expect_eq(ted_order_by_key(indices, 0, keys, "test", &err), TED_OK);
}
