/* SPDX-License-Identifier: Apache-2.0 */
/* robust_test.c - the magnitude view's score against its recent values (stream/robust.h)
 * against its definition by sorting: the median (the mean of the two middle values for
 * an even count) and MAD of the last TSS_ROBUST_HISTORY values, ties, constant and
 * non-finite values, the history's turnover, and Student's t tail (t4) against its
 * closed form at known points. */
#include "testutil.h"

#include "robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of a copy of v[0..n), by sorting. */
static double sorted_median(const double *v, size_t n) {
    double *a = malloc(n * sizeof *a);
    assert_non_null(a);
    memcpy(a, v, n * sizeof *a);
    qsort(a, n, sizeof *a, cmp);
    const double m = n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
    free(a);
    return m;
}

/* Feeds n values drawn by draw(k) and checks every score against the definition. */
static void check_stream(size_t n, double (*draw)(size_t)) {
    tss_robust r = {0};
    double *hist = malloc(n * sizeof *hist), *dev = malloc(TSS_ROBUST_HISTORY * sizeof *dev);
    assert_true(hist && dev);
    size_t held = 0;
    for (size_t k = 0; k < n; k++) {
        const double v = draw(k), unit = 0.05;
        const double got = tss_robust_score(&r, v, unit);
        const size_t h = held < TSS_ROBUST_HISTORY ? held : TSS_ROBUST_HISTORY;
        if (h < TSS_ROBUST_MIN || !isfinite(v)) {
            assert_true(isnan(got));
        } else {
            const double *w = hist + held - h, med = sorted_median(w, h);
            for (size_t j = 0; j < h; j++)
                dev[j] = fabs(w[j] - med);
            const double mad = sorted_median(dev, h);
            const double den = fmax(1.4826 * mad, unit);
            const double want = 1.0 - tss_t4_sf((v - med) / den);
            if (!(fabs(got - want) <= 1e-12))
                fail_msg("seed %llu: value %zu: score %.17g, by definition %.17g",
                         (unsigned long long)tu_seed, k, got, want);
        }
        assert_int_equal(tss_robust_add(&r, v), 0);
        if (isfinite(v))
            hist[held++] = v;
    }
    tss_robust_free(&r);
    free(hist), free(dev);
}

static double noisy(size_t k) {
    (void)k;
    return fabs(tu_normal()) + (tu_uniform() < 0.01 ? 20.0 : 0.0);
}

/* Few distinct values (ties everywhere), a constant run, NaN and infinities. */
static double tied(size_t k) {
    if (k % 97 == 5)
        return NAN;
    if (k % 131 == 7)
        return INFINITY;
    if (k > 1500 && k < 1800)
        return 3.0;
    return (double)(int)(tu_uniform() * 4);
}

static void test_robust_score(void **state) {
    (void)state;
    tu_case_seed(3131);
    check_stream(tu_quick() ? 1500 : 3000, noisy);
    check_stream(2500, tied);
}

/* Student's t with 4 degrees of freedom: P(T >= 0) = 1/2, P(T >= 2.132) = 0.05,
 * P(T >= 4.604) = 0.005, P(T >= 7.173) = 0.001 (tables), symmetric. */
static void test_t4(void **state) {
    (void)state;
    assert_true(fabs(tss_t4_sf(0.0) - 0.5) < 1e-15);
    assert_true(fabs(tss_t4_sf(2.131847) - 0.05) < 1e-6);
    assert_true(fabs(tss_t4_sf(4.604095) - 0.005) < 1e-7);
    assert_true(fabs(tss_t4_sf(7.173182) - 0.001) < 1e-8);
    assert_true(fabs(tss_t4_sf(-2.131847) - 0.95) < 1e-6);
    assert_true(tss_t4_sf(1e6) > 0.0 && tss_t4_sf(1e6) < 1e-20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_robust_score),
        cmocka_unit_test(test_t4),
    };
    return TU_RUN_GROUP("robust", tests, NULL, NULL);
}
