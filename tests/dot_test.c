/* SPDX-License-Identifier: Apache-2.0 */
/* dot_test.c - blocks of dot products (tsm_qt_rows, kernels/dot) against brute-force
 * sums on the working series, on the backend under test.
 *
 * The reference rebuilds the working series from the raw input by its definition
 * (stats.h: t[k] - c for finite t[k], c the mean of the finite values; 0 for NaN and
 * +-Inf) and sums QT[i][j] = sum_k w[i+k] w[j+k] in long double. Tolerance: a sum of m
 * products agrees to |got - ref| <= 4 m eps sum_k |w[i+k] w[j+k]| (eps = DBL_EPSILON;
 * the standard bound of recursive summation, with room for fused or separate
 * multiply-adds and for the shift c being rounded differently). Every output element
 * is poisoned before the call and checked; the guard after the block must stay
 * untouched. */
#include "testutil.h"

#include "dot.h"
#include "stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 7 /* poisoned elements after each block that must not be written */

/* The working series of raw[0..n-1] by stats.h's definition. Caller frees. */
static double *working_series(const double *raw, size_t n) {
    double sum = 0.0, *w = malloc(n * sizeof *w);
    size_t finite = 0;
    assert_non_null(w);
    for (size_t k = 0; k < n; k++)
        if (isfinite(raw[k]))
            sum += raw[k], finite++;
    double c = finite ? sum / (double)finite : 0.0;
    for (size_t k = 0; k < n; k++)
        w[k] = isfinite(raw[k]) ? raw[k] - c : 0.0;
    return w;
}

/* Computes the block (i0, rows, j0, len) of raw's QT on the ctx under test, with the
 * statistics computed on stats_ctx (the same ctx, or the other backend's), and checks
 * every element against the brute-force sums. */
static void check_block_on(tsm_ctx *ctx, tsm_ctx *stats_ctx, const double *raw, size_t n, size_t m,
                           size_t i0, size_t rows, size_t j0, size_t len) {
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(stats_ctx, raw, n, m, &s), TSM_OK);
    double *w = working_series(raw, n);
    for (size_t k = 0; k < n; k++) /* the series the kernels use is the defined one */
        if (!isfinite(raw[k]) && s->t[k] != 0.0)
            fail_msg("seed %llu: working series at %zu is %g for a non-finite input, want 0",
                     (unsigned long long)tu_seed, k, s->t[k]);
    size_t total = rows * len;
    double *got = malloc((total + GUARD) * sizeof *got);
    assert_non_null(got);
    for (size_t q = 0; q < total + GUARD; q++)
        got[q] = NAN;
    tsm_status st = tsm_qt_rows(ctx, s, i0, rows, j0, len, got);
    if (st != TSM_OK)
        fail_msg("seed %llu: qt_rows(n=%zu m=%zu i0=%zu rows=%zu j0=%zu len=%zu): %s: %s",
                 (unsigned long long)tu_seed, n, m, i0, rows, j0, len, tsm_status_name(st),
                 tsm_ctx_error(ctx));
    for (size_t r = 0; r < rows; r++)
        for (size_t q = 0; q < len; q++) {
            size_t i = i0 + r, j = j0 + q;
            long double ref = 0.0L, mag = 0.0L;
            for (size_t k = 0; k < m; k++) {
                long double p = (long double)w[i + k] * (long double)w[j + k];
                ref += p;
                mag += fabsl(p);
            }
            double g = got[r * len + q], tol = 4.0 * (double)m * DBL_EPSILON * (double)mag;
            if (!(fabs(g - (double)ref) <= tol))
                fail_msg("seed %llu: n=%zu m=%zu: QT[%zu][%zu] = %.17g, want %.17Lg (tolerance "
                         "%g)",
                         (unsigned long long)tu_seed, n, m, i, j, g, ref, tol);
        }
    for (size_t q = total; q < total + GUARD; q++)
        if (!isnan(got[q]))
            fail_msg("qt_rows wrote past its block (element %zu of %zu)", q, total);
    free(got);
    free(w);
    tsm_stats_destroy(&s);
}

static void check_block(const double *raw, size_t n, size_t m, size_t i0, size_t rows, size_t j0,
                        size_t len) {
    tsm_ctx *ctx = tu_ctx();
    check_block_on(ctx, ctx, raw, n, m, i0, rows, j0, len);
    tsm_ctx_destroy(&ctx);
}

/* The whole matrix of a random walk, and blocks whose sizes and offsets are not
 * multiples of anything a backend tiles by; m below and above the GPU's k chunk. */
static void test_random_walks(void **state) {
    (void)state;
    static const size_t shapes[][2] = {{700, 40}, {400, 131}, {300, 3}, {520, 200}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        size_t n = shapes[c][0], m = shapes[c][1], N = n - m + 1;
        tu_case_seed(100 + c);
        double *t = tu_series(n);
        check_block(t, n, m, 0, N, 0, N);
        check_block(t, n, m, 17, 13, 5, N - 5);
        check_block(t, n, m, N / 3, 9, N / 2, 129);
        free(t);
    }
}

/* NaN and infinite stretches: the working series has zeros there, and QT is the dot
 * product of that series (finite everywhere). */
static void test_nonfinite_stretches(void **state) {
    (void)state;
    tu_case_seed(7);
    size_t n = 900, m = 64, N = n - m + 1;
    double *t = tu_series(n);
    tu_fill(t, 100, 80, NAN);
    tu_fill(t, 400, 1, INFINITY);
    tu_fill(t, 600, 30, -INFINITY);
    tu_fill(t, 700, 50, 3.0); /* and a constant stretch */
    check_block(t, n, m, 0, N, 0, N);
    free(t);
}

/* Edge sizes: n = m (one subsequence), n = m + 1, one row, one column, the last row
 * and column, a block wider than one GPU tile row by one. */
static void test_edge_sizes(void **state) {
    (void)state;
    tu_case_seed(9);
    double *t = tu_series(1000);
    check_block(t, 50, 50, 0, 1, 0, 1);
    check_block(t, 51, 50, 0, 2, 0, 2);
    check_block(t, 1000, 20, 0, 1, 0, 981);
    check_block(t, 1000, 20, 980, 1, 0, 981);
    check_block(t, 1000, 20, 0, 981, 980, 1);
    check_block(t, 1000, 20, 3, 8, 11, 1);
    check_block(t, 1000, 20, 5, 1, 852, 129);
    check_block(t, 1000, 3, 970, 28, 969, 29);
    free(t);
}

/* A block larger than the GPU's 64 MiB device buffer (several pieces of rows), and
 * statistics computed on the CPU backend used by the backend under test (on CUDA:
 * without device copies of the series). */
static void test_large_and_cross_backend(void **state) {
    (void)state;
    tu_case_seed(21);
    size_t n = 20002, m = 3, N = n - m + 1;
    double *t = tu_series(n);
    check_block(t, n, m, 0, 450, 0, N);
    tsm_ctx *ctx = tu_ctx(), *cpu = NULL;
    assert_int_equal(tsm_ctx_new(&cpu, TSM_BACKEND_CPU, NULL), TSM_OK);
    check_block_on(ctx, cpu, t, 3000, 100, 10, 70, 0, 2901);
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* Blocks outside the matrix fail with a message; empty blocks do nothing. */
static void test_invalid(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_case_seed(3);
    double *t = tu_series(100), out[4] = {1, 2, 3, 4};
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, 100, 10, &s), TSM_OK); /* N = 91 */
    assert_int_equal(tsm_qt_rows(ctx, s, 90, 2, 0, 1, out), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(tsm_qt_rows(ctx, s, 0, 1, 91, 1, out), TSM_EINVAL);
    assert_int_equal(tsm_qt_rows(ctx, s, 0, 1, 0, 92, out), TSM_EINVAL);
    assert_int_equal(tsm_qt_rows(ctx, s, 0, 1, 0, 1, NULL), TSM_EINVAL);
    assert_int_equal(tsm_qt_rows(ctx, NULL, 0, 1, 0, 1, out), TSM_EINVAL);
    assert_int_equal(tsm_qt_rows(ctx, s, 91, 0, 0, 91, out), TSM_OK);
    assert_int_equal(tsm_qt_rows(ctx, s, 0, 91, 91, 0, NULL), TSM_OK);
    assert_true(out[0] == 1 && out[3] == 4);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walks), cmocka_unit_test(test_nonfinite_stretches),
        cmocka_unit_test(test_edge_sizes),   cmocka_unit_test(test_large_and_cross_backend),
        cmocka_unit_test(test_invalid),
    };
    return TU_RUN_GROUP("dot", tests, NULL, NULL);
}
