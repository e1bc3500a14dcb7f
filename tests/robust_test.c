/* SPDX-License-Identifier: Apache-2.0 */
/* robust_test.c - the magnitude view's score against its recent values (stream/robust.h)
 * against its definition by sorting (tests/reference: ref_robust): the median (the mean
 * of the two middle values for an even count) and MAD of the last TSS_ROBUST_HISTORY
 * values as of the last refresh, ties, constant and non-finite values, the history's
 * turnover, a history refreshed after a reload, and Student's t tail (t4) against its
 * tabulated values. */
#include "testutil.h"

#include "robust.h"
#include "score_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Feeds n values drawn by draw(k) and checks every score against the definition
 * (tests/reference: ref_robust, by sorting). */
static void check_stream(size_t n, double (*draw)(size_t)) {
    tss_robust r = {0};
    ref_robust ref = {0};
    for (size_t k = 0; k < n; k++) {
        const double v = draw(k), unit = 0.05;
        const double got = tss_robust_score(&r, v, unit), want = ref_robust_score(&ref, v, unit);
        if (!(fabs(got - want) <= 1e-12) && !(isnan(got) && isnan(want)))
            fail_msg("seed %llu: value %zu: score %.17g, by definition %.17g",
                     (unsigned long long)tu_seed, k, got, want);
        assert_int_equal(tss_robust_add(&r, v), 0);
        ref_robust_add(&ref, v);
    }
    /* a history reloaded as it is (a checkpoint of format 4 kept no stats) and
     * refreshed scores as the definition refreshed at that point would */
    tss_robust again = {0};
    for (uint32_t k = 0; k < r.n; k++)
        assert_int_equal(
            tss_robust_add(&again,
                           r.ring[(r.head + TSS_ROBUST_HISTORY - r.n + k) % TSS_ROBUST_HISTORY]),
            0);
    tss_robust_refresh(&again);
    ref.refreshed = ref.n;
    const double v = draw(n);
    const double got = tss_robust_score(&again, v, 0.05), want = ref_robust_score(&ref, v, 0.05);
    assert_true(fabs(got - want) <= 1e-12 || (isnan(got) && isnan(want)));
    tss_robust_free(&again);
    tss_robust_free(&r);
    ref_robust_free(&ref);
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
