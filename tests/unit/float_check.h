/* Float comparisons for the layer, attention and session tests: the largest
 * absolute difference between two arrays, asserted against a tolerance with
 * a message naming where it was largest. */
#ifndef TED_TESTS_FLOAT_CHECK_H
#define TED_TESTS_FLOAT_CHECK_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stddef.h>

/* Tolerances (absolute): a single operation against its reference, and a
 * composition of several (attention, a whole model). */
#define TOL_OP 1e-5
#define TOL_COMPOSED 1e-4

typedef struct float_diff {
    double max;    /* largest |actual - expected|; INFINITY if either is NaN */
    size_t index;  /* where */
} float_diff;

static inline float_diff max_abs_diff(const float *actual, const float *expected, size_t n)
{
    float_diff d = {0.0, 0};
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)actual[i] - (double)expected[i]);
        if (isnan(e))
            e = INFINITY;
        if (e > d.max) {
            d.max = e;
            d.index = i;
        }
    }
    return d;
}

/* Asserts max |actual - expected| <= tol over n floats; logs the difference
 * (shown with --verbose). */
#define ASSERT_CLOSE(actual, expected, n, tol, what)                                          \
    do {                                                                                       \
        const float *a_ = (actual), *e_ = (expected);                                          \
        float_diff d_ = max_abs_diff(a_, e_, (n));                                             \
        cr_log_info("%s: max abs diff %.3g", (what), d_.max);                                  \
        cr_assert(d_.max <= (tol),                                                             \
                  "%s: max abs diff %.3g > %.0e at [%zu]: got %.9g, expected %.9g", (what),    \
                  d_.max, (double)(tol), d_.index, (double)a_[d_.index],                       \
                  (double)e_[d_.index]);                                                       \
    } while (0)

#endif
