/* SPDX-License-Identifier: Apache-2.0 */
/* stats_test.c - sliding statistics, subsequence kinds, the distance conventions and
 * the QT recurrence, against direct two-pass computations. */
#include "testutil.h"

#include "distance.h"
#include "dot.h"
#include "reference.h"
#include "stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* Direct mean and population deviation of x[0..m-1]. */
static void direct_moments(const double *x, size_t m, double *mu, double *sd) {
    double s = 0, v = 0;
    for (size_t k = 0; k < m; k++)
        s += x[k];
    *mu = s / (double)m;
    for (size_t k = 0; k < m; k++)
        v += (x[k] - *mu) * (x[k] - *mu);
    *sd = sqrt(v / (double)m);
}

/* Checks kinds exactly, sigma and mu (in the shifted working coordinates: mu_raw - c,
 * with c recovered from the first finite sample) to 1e-9 relative, plus a few ulps of
 * the values' magnitude: a window whose spread is below that is ill-conditioned for
 * any method (the direct one too). */
static void check_stats(const double *t, size_t n, size_t m) {
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    assert_int_equal(s->N, n - m + 1);
    double shift = NAN;
    for (size_t k = 0; k < n && isnan(shift); k++)
        if (isfinite(t[k]))
            shift = t[k] - s->t[k];
    size_t counts[3] = {0};
    for (size_t i = 0; i < s->N; i++) {
        int kind = ref_kind(t, m, i);
        counts[kind]++;
        if (s->kind[i] != kind)
            fail_msg("seed %llu: n=%zu m=%zu: kind of %zu is %d, want %d",
                     (unsigned long long)tu_seed, n, m, i, s->kind[i], kind);
        if (kind != TSM_SUB_NORMAL) {
            assert_true(s->inv[i] == 0.0);
            continue;
        }
        double mu, sd;
        direct_moments(t + i, m, &mu, &sd);
        double ulps = 64 * DBL_EPSILON * (fabs(mu) + fabs(shift));
        if (fabs(s->sig[i] - sd) > 1e-9 * sd + ulps)
            fail_msg("seed %llu: sigma at %zu: %.17g, want %.17g", (unsigned long long)tu_seed, i,
                     s->sig[i], sd);
        if (fabs(s->mu[i] + shift - mu) > 1e-9 * (sd + fabs(mu)) + ulps)
            fail_msg("seed %llu: mu at %zu: %.17g, want %.17g", (unsigned long long)tu_seed, i,
                     s->mu[i] + shift, mu);
        assert_true(fabs(s->inv[i] * sqrt((double)m) * s->sig[i] - 1.0) < 1e-12);
    }
    assert_int_equal(s->n_normal, counts[TSM_SUB_NORMAL]);
    assert_int_equal(s->n_constant, counts[TSM_SUB_CONSTANT]);
    assert_int_equal(s->n_nonfinite, counts[TSM_SUB_NONFINITE]);
    for (size_t k = 0; k < n; k++)
        assert_true(isfinite(s->t[k])); /* non-finite values become 0 in the working copy */
    tsm_stats_destroy(&s);
    assert_null(s);
    tsm_ctx_destroy(&ctx);
}

static void test_random_walks(void **state) {
    (void)state;
    const size_t ms[] = {3, 8, 64, 257};
    for (size_t q = 0; q < 4; q++) {
        tu_case_seed(10 + q);
        size_t n = 3000 + 17 * q;
        double *t = tu_series(n);
        check_stats(t, n, ms[q]);
        free(t);
    }
}

/* A large offset and a small spread: the case where E[x^2] - mu^2 would cancel. */
static void test_large_offset(void **state) {
    (void)state;
    tu_case_seed(20);
    const size_t n = 5000;
    double *t = tu_series(n);
    for (size_t k = 0; k < n; k++)
        t[k] = 1e6 + 1e-2 * t[k];
    check_stats(t, n, 100);
    free(t);
}

/* Constant plateaus, steps, NaN and +-Inf stretches, n = m and n = m + 1. */
static void test_special_stretches(void **state) {
    (void)state;
    tu_case_seed(30);
    const size_t n = 2000;
    double *t = tu_series(n);
    tu_fill(t, 100, 300, 4.0);
    tu_fill(t, 400, 10, 4.0 + 1e-12); /* a tiny step: not constant */
    tu_fill(t, 900, 7, NAN);
    tu_fill(t, 1200, 1, INFINITY);
    tu_fill(t, 1500, 200, -1.0);
    tu_fill(t, 1600, 1, -INFINITY);
    check_stats(t, n, 16);
    check_stats(t, n, 3);
    check_stats(t, 16, 16);
    check_stats(t, 17, 16);
    free(t);
}

/* Ten million samples: sliding moments with periodic exact restarts stay within
 * 1e-9 of direct computation everywhere checked. */
static void test_long_series_drift(void **state) {
    (void)state;
    tu_case_seed(40);
    const size_t n = 10000000, m = 128;
    double *t = tu_series(n);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    double shift = t[0] - s->t[0];
    for (size_t i = 0; i < s->N; i += 9973) {
        size_t at = i + (i % TSM_STATS_REFRESH == 0); /* not only restart points */
        double mu, sd;
        direct_moments(t + at, m, &mu, &sd);
        assert_true(fabs(s->sig[at] - sd) <= 1e-9 * sd);
        assert_true(fabs(s->mu[at] + shift - mu) <= 1e-9 * (sd + fabs(mu)));
    }
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* Formula (9) from one row to the next equals the direct dot products. */
static void test_qt_recurrence(void **state) {
    (void)state;
    tu_case_seed(50);
    const size_t n = 4000, m = 50;
    double *t = tu_series(n);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    size_t N = s->N;
    double *prev = malloc(N * sizeof *prev), *next = malloc(N * sizeof *next),
           *direct = malloc(N * sizeof *direct);
    tsm_qt_row_direct(s, 0, 0, N, prev);
    for (size_t i = 1; i < 200; i++) {
        next[0] = tsm_dot(s->t + i, s->t, m); /* column 0 */
        tsm_qt_row_next(s, i, 1, N - 1, prev, next + 1);
        tsm_qt_row_direct(s, i, 0, N, direct);
        for (size_t j = 0; j < N; j++)
            if (fabs(next[j] - direct[j]) > 1e-9 * m * (1 + fabs(direct[j]) / m))
                fail_msg("seed %llu: QT[%zu][%zu] = %.17g by recurrence, %.17g direct",
                         (unsigned long long)tu_seed, i, j, next[j], direct[j]);
        double *tmp = prev;
        prev = next, next = tmp;
    }
    free(prev), free(next), free(direct);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* tsm_d2 through QT equals the reference's direct z-normalised distance, and the
 * special conventions are exact. */
static void test_distance(void **state) {
    (void)state;
    tu_case_seed(60);
    const size_t n = 600, m = 20;
    double *t = tu_series(n);
    tu_fill(t, 100, 40, 3.0);
    tu_fill(t, 300, 40, -3.0);
    tu_fill(t, 500, 2, NAN);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    for (size_t i = 0; i < s->N; i += 7)
        for (size_t j = 0; j < s->N; j += 11) {
            double got = tsm_d2(s, i, j, tsm_dot(s->t + i, s->t + j, m));
            double want = ref_d2(t, m, i, j);
            if (isnan(want)) {
                assert_true(isnan(got));
                continue;
            }
            if (s->kind[i] != TSM_SUB_NORMAL || s->kind[j] != TSM_SUB_NORMAL)
                assert_true(got == want); /* exact: 0 or m */
            else if (fabs(got - want) > TU_D2_TOL(m))
                fail_msg("seed %llu: d2(%zu,%zu) = %.17g, want %.17g", (unsigned long long)tu_seed,
                         i, j, got, want);
        }
    assert_true(tsm_d2_special(TSM_SUB_CONSTANT, TSM_SUB_CONSTANT, m) == 0.0);
    assert_true(tsm_d2_special(TSM_SUB_CONSTANT, TSM_SUB_NORMAL, m) == (double)m);
    assert_true(isnan(tsm_d2_special(TSM_SUB_NONFINITE, TSM_SUB_CONSTANT, m)));
    assert_true(tsm_non_self(10, 30, 20) && !tsm_non_self(30, 11, 20));
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

static void test_invalid_shapes(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    double t[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    tsm_stats *s = (tsm_stats *)t; /* must be cleared on failure */
    assert_int_equal(tsm_stats_new(ctx, t, 10, 11, &s), TSM_EINVAL);
    assert_null(s);
    assert_int_equal(tsm_stats_new(ctx, t, 10, 2, &s), TSM_EINVAL);
    assert_int_equal(tsm_stats_new(ctx, t, 0, 3, &s), TSM_EINVAL);
    assert_true(tsm_ctx_error(ctx)[0] != '\0');
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walks),      cmocka_unit_test(test_large_offset),
        cmocka_unit_test(test_special_stretches), cmocka_unit_test(test_long_series_drift),
        cmocka_unit_test(test_qt_recurrence),     cmocka_unit_test(test_distance),
        cmocka_unit_test(test_invalid_shapes),
    };
    return TU_RUN_GROUP("stats", tests, NULL, NULL);
}
