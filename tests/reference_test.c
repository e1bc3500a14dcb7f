/* SPDX-License-Identifier: Apache-2.0 */
/* reference_test.c - the brute-force reference checked on cases whose answers are
 * known in closed form, and against a second, independent formulation (the QT formula
 * of DESIGN 3 in plain loops). A wrong reference would make every other test moot. */
#include "testutil.h"

#include "reference.h"

#include <math.h>
#include <stdlib.h>

/* d2 by the QT formula of DESIGN 3 with naive sums: the definition as written. */
static double formula_d2(const double *t, size_t m, size_t i, size_t j) {
    double si = 0, sj = 0, qi = 0, qj = 0, qt = 0;
    for (size_t k = 0; k < m; k++) {
        si += t[i + k], sj += t[j + k];
        qi += t[i + k] * t[i + k], qj += t[j + k] * t[j + k];
        qt += t[i + k] * t[j + k];
    }
    double mi = si / m, mj = sj / m;
    double sdi = sqrt(qi / m - mi * mi), sdj = sqrt(qj / m - mj * mj);
    double corr = (qt - m * mi * mj) / (m * sdi * sdj);
    corr = corr > 1 ? 1 : (corr < -1 ? -1 : corr);
    return 2.0 * m * (1 - corr);
}

static void test_closed_forms(void **state) {
    (void)state;
    /* x, 3x + 7 (same shape), -x (opposite), constant, NaN */
    double t[] = {1,  4,  2,  8, 3, 12, 7,   3 * 1 + 7, 3 * 4 + 7, 3 * 2 + 7,
                  -1, -4, -2, 5, 5, 5,  NAN, 1,         2};
    const size_t m = 3;
    assert_true(fabs(ref_d2(t, m, 0, 7)) < 1e-12);            /* scaled and shifted copy */
    assert_true(fabs(ref_d2(t, m, 0, 10) - 4.0 * m) < 1e-12); /* negated copy: corr -1 */
    assert_true(ref_d2(t, m, 13, 13) == 0.0);                 /* constant vs constant */
    assert_true(ref_d2(t, m, 13, 0) == (double)m);            /* constant vs normal */
    assert_true(isnan(ref_d2(t, m, 14, 0)));                  /* window with NaN */
    assert_int_equal(ref_kind(t, m, 13), TSM_SUB_CONSTANT);
    assert_int_equal(ref_kind(t, m, 15), TSM_SUB_NONFINITE);
    assert_int_equal(ref_kind(t, m, 0), TSM_SUB_NORMAL);
}

/* The direct z-normalised form and the QT formula agree on random data, and d2 is
 * symmetric. */
static void test_two_formulations(void **state) {
    (void)state;
    tu_case_seed(7);
    const size_t n = 400, m = 16;
    double *t = tu_series(n);
    for (size_t i = 0; i + m <= n; i += 3)
        for (size_t j = 0; j + m <= n; j += 5) {
            double a = ref_d2(t, m, i, j), b = formula_d2(t, m, i, j);
            assert_true(fabs(a - b) <= TU_D2_TOL(m));
            assert_true(a == ref_d2(t, m, j, i));
        }
    free(t);
}

/* A hand-checkable profile: a period-4 signal has exact repeats, except where a spike
 * breaks the pattern; the left profile of the first windows is undefined. */
static void test_profile_shapes(void **state) {
    (void)state;
    const size_t n = 40, m = 4, N = n - m + 1;
    double t[40];
    for (size_t k = 0; k < n; k++)
        t[k] = (double)(k % 4) + (k % 4 == 1 ? 0.5 : 0.0);
    t[20] = 9.0;
    double d[37], ld[37];
    int64_t ix[37], lix[37];
    ref_profile(t, n, m, m, 0, d, ix);
    ref_profile(t, n, m, m, 1, ld, lix);
    for (size_t i = 0; i < N; i++) {
        int touches_spike = i <= 20 && 20 < i + m;
        if (!touches_spike)
            assert_true(d[i] < 1e-6); /* an exact repeat exists */
        else
            assert_true(d[i] > 0.1);
        if (i < m) {
            assert_true(isinf(ld[i]));
            assert_int_equal(lix[i], -1);
        } else {
            assert_true(lix[i] >= 0 && (size_t)lix[i] + m <= i);
        }
    }
    tsm_discord top[2];
    assert_int_equal(ref_topk_discords(d, ix, N, m, 2, top), 2);
    assert_true(top[0].index >= 17 && top[0].index <= 20);
    assert_true(labs((long)(top[1].index - top[0].index)) >= (long)m);
}

/* Motifs: a planted exact copy is the top motif; the greedy pairs do not overlap. */
static void test_motifs(void **state) {
    (void)state;
    tu_case_seed(8);
    const size_t n = 300, m = 10;
    double *t = tu_series(n);
    for (size_t k = 0; k < m; k++)
        t[200 + k] = 2.0 * t[50 + k] - 1.0;
    tsm_motif mo[4];
    size_t c = ref_topk_motifs(t, n, m, m, 4, mo);
    assert_int_equal(c, 4);
    assert_int_equal(mo[0].a, 50);
    assert_int_equal(mo[0].b, 200);
    assert_true(mo[0].distance < 1e-6);
    for (size_t p = 0; p < c; p++) {
        assert_true(mo[p].a < mo[p].b && (size_t)(mo[p].b - mo[p].a) >= m);
        if (p > 0)
            assert_true(mo[p].distance >= mo[p - 1].distance);
        for (size_t q = 0; q < p; q++) {
            int64_t pm[2] = {mo[p].a, mo[p].b}, qm[2] = {mo[q].a, mo[q].b};
            for (int x = 0; x < 2; x++)
                for (int y = 0; y < 2; y++)
                    assert_true(labs((long)(pm[x] - qm[y])) >= (long)m);
        }
    }
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_forms),
        cmocka_unit_test(test_two_formulations),
        cmocka_unit_test(test_profile_shapes),
        cmocka_unit_test(test_motifs),
    };
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
