/* SPDX-License-Identifier: Apache-2.0 */
/* scan_test.c - the shared primitives (kernels/scan): prefix sums, stream compaction and
 * vectorised lower/upper-bound search against plain serial loops, exactly (integers),
 * at sizes 0, 1, 2^k +- 1 and sizes past the CPU's parallel threshold, in place and
 * not, with wrap-around, on 1 and 2 threads. */
#include "testutil.h"

#include "scan.h"

#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = {0, 1, 2, 31, 33, 1023, 1025, 65535, 65537, (1u << 20) + 3};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
/* TSM_TEST_QUICK (sanitizers): up to 65537, still past the kernels' serial cut-off. */
#define N_RUN (tu_quick() ? N_SIZES - 1 : N_SIZES)

static uint64_t rnd(uint64_t n) {
    return (uint64_t)(tu_uniform() * (double)n);
}

/* ---- prefix sums ---------------------------------------------------------------------- */

/* Both kinds, both widths, in place and not, against a serial loop; values large
 * enough that the u32 sums wrap. */
static void test_scan(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_case_seed(3);
    for (size_t q = 0; q < N_RUN; q++) {
        size_t n = sizes[q];
        uint32_t *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4), *w = malloc((n + 1) * 4);
        uint64_t *X = malloc((n + 1) * 8), *Y = malloc((n + 1) * 8), *W = malloc((n + 1) * 8);
        assert_true(x && y && w && X && Y && W);
        for (size_t i = 0; i < n; i++)
            x[i] = (uint32_t)rnd(1u << 31), X[i] = ((uint64_t)x[i] << 31) ^ rnd(1000);
        for (int kind = 0; kind <= 1; kind++)
            for (int t = 1; t <= 2; t++) {
                tsm_ctx_set_threads(ctx, t);
                uint32_t acc = 0, total = 7;
                uint64_t ACC = 0, TOTAL = 7;
                for (size_t i = 0; i < n; i++) {
                    if (kind == TSM_SCAN_INCLUSIVE)
                        acc += x[i], ACC += X[i];
                    w[i] = acc, W[i] = ACC;
                    if (kind == TSM_SCAN_EXCLUSIVE)
                        acc += x[i], ACC += X[i];
                }
                assert_int_equal(tsm_scan_u32(ctx, (tsm_scan_kind)kind, x, y, n, &total), TSM_OK);
                assert_int_equal(total, kind == TSM_SCAN_EXCLUSIVE ? acc : n ? w[n - 1] : 0);
                assert_memory_equal(y, w, n * 4);
                assert_int_equal(tsm_scan_u64(ctx, (tsm_scan_kind)kind, X, Y, n, &TOTAL), TSM_OK);
                assert_true(TOTAL == ACC);
                assert_memory_equal(Y, W, n * 8);
                /* in place, total not asked for */
                memcpy(y, x, n * 4);
                memcpy(Y, X, n * 8);
                assert_int_equal(tsm_scan_u32(ctx, (tsm_scan_kind)kind, y, y, n, NULL), TSM_OK);
                assert_int_equal(tsm_scan_u64(ctx, (tsm_scan_kind)kind, Y, Y, n, NULL), TSM_OK);
                assert_memory_equal(y, w, n * 4);
                assert_memory_equal(Y, W, n * 8);
            }
        free(x), free(y), free(w), free(X), free(Y), free(W);
    }
    tsm_ctx_destroy(&ctx);
}

/* ---- stream compaction ---------------------------------------------------------------- */

/* Flags dense, sparse, none and all; indices, 4- and 8-byte values. */
static void test_select(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_case_seed(4);
    static const double density[] = {0.5, 0.01, 0.0, 1.0};
    for (size_t q = 0; q < N_RUN; q++) {
        size_t n = sizes[q];
        uint8_t *f = malloc(n + 1);
        uint32_t *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4);
        uint64_t *X = malloc((n + 1) * 8), *Y = malloc((n + 1) * 8), *I = malloc((n + 1) * 8);
        assert_true(f && x && y && X && Y && I);
        for (size_t i = 0; i < n; i++)
            x[i] = (uint32_t)rnd(1u << 31), X[i] = ~(uint64_t)i;
        for (size_t dq = 0; dq < 4; dq++) {
            for (size_t i = 0; i < n; i++) /* non-zero flags other than 1 count as set */
                f[i] = tu_uniform() < density[dq] ? (uint8_t)(1 + rnd(255)) : 0;
            for (int t = 1; t <= 2; t++) {
                tsm_ctx_set_threads(ctx, t);
                size_t c32 = 99, c64 = 99, ci = 99, k = 0;
                assert_int_equal(tsm_select_u32(ctx, x, f, n, y, &c32), TSM_OK);
                assert_int_equal(tsm_select_u64(ctx, X, f, n, Y, &c64), TSM_OK);
                assert_int_equal(tsm_select_index(ctx, f, n, I, &ci), TSM_OK);
                for (size_t i = 0; i < n; i++) {
                    if (!f[i])
                        continue;
                    assert_true(k < c32 && k < c64 && k < ci);
                    assert_int_equal(y[k], x[i]);
                    assert_true(Y[k] == X[i]);
                    assert_int_equal(I[k], i);
                    k++;
                }
                assert_int_equal(c32, k);
                assert_int_equal(c64, k);
                assert_int_equal(ci, k);
            }
        }
        free(f), free(x), free(y), free(X), free(Y), free(I);
    }
    tsm_ctx_destroy(&ctx);
}

/* ---- search --------------------------------------------------------------------------- */

/* Serial bounds: the first i with s[i] >= key (lower) or > key (upper). */
static size_t ref_bound(int upper, const uint64_t *s, size_t n, uint64_t key) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (upper ? s[m] <= key : s[m] < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void check_bounds(tsm_ctx *ctx, const uint64_t *S, size_t n, const uint64_t *Kk, size_t nk,
                         const char *what) {
    uint32_t *s = malloc((n + 1) * 4), *k32 = malloc((nk + 1) * 4);
    uint64_t *S2 = malloc((n + 1) * 8), *K2 = malloc((nk + 1) * 8);
    uint64_t *o = malloc((nk + 1) * 8), *o2 = malloc((nk + 1) * 8);
    assert_true(s && k32 && S2 && K2 && o && o2);
    for (size_t i = 0; i < n; i++)
        s[i] = (uint32_t)S[i], S2[i] = S[i] << 30; /* u64: shifted into the high bits */
    for (size_t k = 0; k < nk; k++)
        k32[k] = (uint32_t)Kk[k], K2[k] = Kk[k] << 30;
    for (int t = 1; t <= 2; t++) {
        tsm_ctx_set_threads(ctx, t);
        for (int upper = 0; upper <= 1; upper++) {
            assert_int_equal(tsm_search_u32(ctx, (tsm_bound_kind)upper, s, n, k32, nk, o), TSM_OK);
            for (size_t k = 0; k < nk; k++)
                if (o[k] != ref_bound(upper, S, n, Kk[k]))
                    fail_msg("%s: u32 %s bound of key %zu = %llu in %zu: %llu, want %zu", what,
                             upper ? "upper" : "lower", k, (unsigned long long)Kk[k], n,
                             (unsigned long long)o[k], ref_bound(upper, S, n, Kk[k]));
            assert_int_equal(tsm_search_u64(ctx, (tsm_bound_kind)upper, S2, n, K2, nk, o), TSM_OK);
            for (size_t k = 0; k < nk; k++)
                assert_int_equal(o[k], ref_bound(upper, S, n, Kk[k]));
        }
        assert_int_equal(tsm_search_range_u32(ctx, s, n, k32, nk, o, o2), TSM_OK);
        for (size_t k = 0; k < nk; k++) {
            assert_int_equal(o[k], ref_bound(0, S, n, Kk[k]));
            assert_int_equal(o2[k], ref_bound(1, S, n, Kk[k]));
        }
        assert_int_equal(tsm_search_range_u64(ctx, S2, n, K2, nk, o, o2), TSM_OK);
        for (size_t k = 0; k < nk; k++) {
            assert_int_equal(o[k], ref_bound(0, S, n, Kk[k]));
            assert_int_equal(o2[k], ref_bound(1, S, n, Kk[k]));
        }
    }
    free(s), free(k32), free(S2), free(K2), free(o), free(o2);
}

/* Sorted arrays with duplicates; keys present, absent, below and above everything, in
 * random order and sorted (the windowed path), sparse and dense; both bounds, both
 * widths, and both at once. */
static void test_search(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_case_seed(5);
    for (size_t q = 0; q < N_RUN; q++) {
        size_t n = sizes[q], nk = 3 * n / 2 + 5;
        uint64_t *S = malloc((n + 1) * 8), *Kk = malloc(nk * 8);
        assert_true(S && Kk);
        uint64_t span = n / 3 + 2;
        for (size_t i = 0; i < n; i++)
            S[i] = 10 + rnd(span);
        qsort(S, n, 8, cmp_u64);
        for (size_t k = 0; k < nk; k++)
            Kk[k] = k % 7 == 0 ? rnd(10) : k % 7 == 1 ? 10 + span + rnd(100) : 10 + rnd(span);
        Kk[0] = 0, Kk[nk - 1] = UINT32_MAX;
        check_bounds(ctx, S, n, Kk, nk, "random keys");
        qsort(Kk, nk, 8, cmp_u64);
        check_bounds(ctx, S, n, Kk, nk, "sorted keys");
        /* Few sorted keys (wide windows) with clusters and jumps past the windows. */
        size_t few = nk / 50 + 1;
        for (size_t k = 0; k < few; k++)
            Kk[k] = k < few / 2 ? 10 + k % 3 : 10 + span - (few - k) % 5;
        qsort(Kk, few, 8, cmp_u64);
        check_bounds(ctx, S, n, Kk, few, "clustered sorted keys");
        free(S), free(Kk);
    }
    tsm_ctx_destroy(&ctx);
}

/* Bad arguments fail with TSM_EINVAL and a message; empty inputs are fine. */
static void test_invalid(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    uint32_t x[2] = {1, 2};
    uint64_t o[2];
    size_t c = 5;
    assert_int_equal(tsm_scan_u32(ctx, (tsm_scan_kind)5, x, x, 2, NULL), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(tsm_scan_u32(ctx, TSM_SCAN_INCLUSIVE, NULL, x, 2, NULL), TSM_EINVAL);
    assert_int_equal(tsm_select_index(ctx, NULL, 2, o, &c), TSM_EINVAL);
    assert_int_equal(tsm_select_index(ctx, NULL, 0, NULL, &c), TSM_OK);
    assert_int_equal(c, 0);
    assert_int_equal(tsm_select_u32(ctx, x, (const uint8_t *)"\1\1", 2, x, NULL), TSM_EINVAL);
    assert_int_equal(tsm_search_u32(ctx, (tsm_bound_kind)3, x, 2, x, 2, o), TSM_EINVAL);
    assert_int_equal(tsm_search_u32(ctx, TSM_LOWER_BOUND, NULL, 2, x, 2, o), TSM_EINVAL);
    assert_int_equal(tsm_search_u32(ctx, TSM_LOWER_BOUND, NULL, 0, x, 2, o), TSM_OK);
    assert_int_equal(o[0], 0);
    assert_int_equal(o[1], 0);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_invalid),
    };
    return TU_RUN_GROUP("scan", tests, NULL, NULL);
}
