/* SPDX-License-Identifier: Apache-2.0 */
/* sets_test.c - sorted multiset operations (kernels/sets) against a plain serial merge
 * with the semantics of C++ std::set_intersection / set_union / set_difference /
 * set_symmetric_difference, on the six input shapes of seed 004, heavy duplicates,
 * empty and tiny inputs, sizes around powers of two, unequal sizes (1:1000, also with
 * results large enough to be written past the cache), runs of one key across the cuts
 * between pieces, outputs with room beyond the result (RANGE_SEARCH then writes in place),
 * long stretches of equal pairs (taken in blocks), both key widths, both methods,
 * and 1 and 2 threads. Results are compared exactly
 * (integers: no tolerance). The 2^30-element case runs on the CUDA backend only and says so when it
 * skips. TSM_TEST_QUICK=1 (for compute-sanitizer runs) keeps the sizes up to 1025 and skips the
 * 2^30 case. */
#include "testutil.h"

#include "sets.h"
#include "tu_dev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ctx of the whole run, made by the first case (main has just checked that the
 * backend is available) and kept: a CUDA error that poisons the context then fails the
 * cases after it with its message. A ctx per case would instead fail to open after
 * such an error and report the backend "unavailable", which ctest's skip rule counts as
 * a skip of the whole program. */
static tsm_ctx *the_ctx;

static tsm_ctx *ctx_under_test(void) {
    if (!the_ctx)
        the_ctx = tu_ctx();
    return the_ctx;
}

/* ---- the reference ------------------------------------------------------------------ */

/* op(A, B) by one merge, as std::set_* does it; out has room for na + nb. */
static size_t ref_set(tsm_set_op op, const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                      uint64_t *out) {
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) {
            if (op != TSM_SET_INTERSECT)
                out[k++] = a[i];
            i++;
        } else if (b[j] < a[i]) {
            if (op == TSM_SET_UNION || op == TSM_SET_SYMDIFF)
                out[k++] = b[j];
            j++;
        } else {
            if (op == TSM_SET_INTERSECT || op == TSM_SET_UNION)
                out[k++] = a[i];
            i++, j++;
        }
    }
    if (op != TSM_SET_INTERSECT)
        while (i < na)
            out[k++] = a[i++];
    if (op == TSM_SET_UNION || op == TSM_SET_SYMDIFF)
        while (j < nb)
            out[k++] = b[j++];
    return k;
}

/* The size of op(A, B) by the reference merge. */
static size_t ref_set_size(tsm_set_op op, const uint64_t *a, size_t na, const uint64_t *b,
                           size_t nb) {
    uint64_t *out = malloc((na + nb + 1) * sizeof *out);
    assert_non_null(out);
    size_t k = ref_set(op, a, na, b, nb, out);
    free(out);
    return k;
}

/* ---- inputs ------------------------------------------------------------------------- */

typedef enum {
    SHAPE_RANDOM,    /* seed 004 type 1: uniform on [0, max(na, nb)), sorted: duplicates */
    SHAPE_ODD_EVEN,  /* type 2: A = 1, 3, 5, ...; B = 0, 2, 4, ... */
    SHAPE_DISJOINT,  /* type 3: no duplicates, every A above every B */
    SHAPE_PAIRS,     /* type 4: A = 0, 1, 4, 5, 8, 9, ...; B = 2, 3, 6, 7, ... */
    SHAPE_IDENTICAL, /* type 5: A = B = 1, 2, 3, ... */
    SHAPE_ZEROS,     /* type 6: A = B = 0, 0, 0, ... */
    SHAPE_MOD13,     /* heavy duplicates: uniform values mod 13, sorted */
    SHAPE_LONG_RUNS, /* long runs of a few keys of different lengths in A and B */
    N_SHAPES
} shape;

static const char *const shape_names[N_SHAPES] = {"random",    "odd_even", "disjoint", "pairs",
                                                  "identical", "zeros",    "mod13",    "long_runs"};

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static uint64_t rnd(uint64_t n) {
    return (uint64_t)(tu_uniform() * (double)n);
}

/* Fills x[0..n) with operand `which` (0 = A, 1 = B) of shape s; m = max(na, nb).
 * Values stay below 2^32 so that the same case serves both key widths. */
static void fill(shape s, int which, uint64_t *x, size_t n, size_t m) {
    for (size_t i = 0; i < n; i++) {
        switch (s) {
        case SHAPE_RANDOM: x[i] = rnd(m ? m : 1); break;
        case SHAPE_ODD_EVEN: x[i] = 2 * i + (which == 0); break;
        case SHAPE_DISJOINT: x[i] = which == 0 ? m + i : i; break;
        case SHAPE_PAIRS: x[i] = (i / 2) * 4 + (i & 1) + (which == 0 ? 0 : 2); break;
        case SHAPE_IDENTICAL: x[i] = i + 1; break;
        case SHAPE_ZEROS: x[i] = 0; break;
        case SHAPE_MOD13: x[i] = (uint64_t)(tu_uniform() * 4294967296.0) % 13; break;
        case SHAPE_LONG_RUNS: x[i] = (uint64_t)(tu_uniform() * (which == 0 ? 5 : 7)); break;
        case N_SHAPES: break;
        }
    }
    if (s == SHAPE_RANDOM || s == SHAPE_MOD13 || s == SHAPE_LONG_RUNS)
        qsort(x, n, sizeof *x, cmp_u64);
}

/* The u64 form of a test value: high bits in use, order and equality kept. */
static uint64_t widen(uint64_t v) {
    return (v << 24) + 0xABCDEFu;
}

/* ---- running one operation ------------------------------------------------------------ */

/* Runs op on a and b (values below 2^32) with the given width, method and threads and
 * checks the result, the count-only form and the capacity check against the
 * reference. */
static void check_op(tsm_ctx *ctx, int width, tsm_set_method method, tsm_set_op op,
                     const uint64_t *a, size_t na, const uint64_t *b, size_t nb, const char *what) {
    uint64_t *want = malloc((na + nb + 1) * sizeof *want);
    assert_non_null(want);
    uint64_t *wa = NULL, *wb = NULL;
    const uint64_t *ra = a, *rb = b;
    if (width == 64) { /* the reference runs on the widened values too */
        wa = malloc((na + 1) * sizeof *wa), wb = malloc((nb + 1) * sizeof *wb);
        assert_true(wa && wb);
        for (size_t i = 0; i < na; i++)
            wa[i] = widen(a[i]);
        for (size_t j = 0; j < nb; j++)
            wb[j] = widen(b[j]);
        ra = wa, rb = wb;
    }
    size_t nwant = ref_set(op, ra, na, rb, nb, want);
    size_t cap = nwant + 1, got = 12345;
    void *out = malloc(cap * (width == 64 ? 8 : 4));
    assert_non_null(out);
    tsm_status st;
    if (width == 64) {
        st = tsm_set_with_u64(ctx, method, op, ra, na, rb, nb, out, nwant, &got);
    } else {
        uint32_t *a32 = malloc((na + 1) * 4), *b32 = malloc((nb + 1) * 4);
        assert_true(a32 && b32);
        for (size_t i = 0; i < na; i++)
            a32[i] = (uint32_t)a[i];
        for (size_t j = 0; j < nb; j++)
            b32[j] = (uint32_t)b[j];
        st = tsm_set_with_u32(ctx, method, op, a32, na, b32, nb, out, nwant, &got);
        size_t only = 99;
        if (st == TSM_OK) { /* count only, and one slot too few */
            assert_int_equal(tsm_set_with_u32(ctx, method, op, a32, na, b32, nb, NULL, 0, &only),
                             TSM_OK);
            assert_int_equal(only, nwant);
            if (nwant > 0) {
                size_t need = 0;
                uint32_t *small = malloc(nwant * 4);
                assert_int_equal(
                    tsm_set_with_u32(ctx, method, op, a32, na, b32, nb, small, nwant - 1, &need),
                    TSM_EINVAL);
                assert_int_equal(need, nwant);
                free(small);
            }
            /* the result again, exactly where tsm_set_with_u32 put it the first time */
            st = tsm_set_with_u32(ctx, method, op, a32, na, b32, nb, out, nwant, &got);
        }
        free(a32), free(b32);
    }
    if (st != TSM_OK)
        fail_msg("seed %llu: %s: %s %s u%d (%zu, %zu): %s: %s", (unsigned long long)tu_seed, what,
                 tsm_set_op_name(op), tsm_set_method_name(method), width, na, nb,
                 tsm_status_name(st), tsm_ctx_error(ctx));
    if (got != nwant)
        fail_msg("seed %llu: %s: %s %s u%d (%zu, %zu): %zu elements, want %zu",
                 (unsigned long long)tu_seed, what, tsm_set_op_name(op),
                 tsm_set_method_name(method), width, na, nb, got, nwant);
    for (size_t k = 0; k < nwant; k++) {
        uint64_t v = width == 64 ? ((uint64_t *)out)[k] : ((uint32_t *)out)[k];
        if (v != want[k])
            fail_msg("seed %llu: %s: %s %s u%d (%zu, %zu): element %zu is %llu, want %llu",
                     (unsigned long long)tu_seed, what, tsm_set_op_name(op),
                     tsm_set_method_name(method), width, na, nb, k, (unsigned long long)v,
                     (unsigned long long)want[k]);
    }
    free(out), free(want), free(wa), free(wb);
}

static const tsm_set_method methods[] = {TSM_SET_AUTO, TSM_SET_MERGE_PATH, TSM_SET_RANGE_SEARCH};

/* Every operation, method, width, on 1 and 2 threads (the CUDA backend ignores threads),
 * for one pair of inputs. */
static void check_all(tsm_ctx *ctx, const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                      const char *what) {
    for (int threads = 1; threads <= 2; threads++) {
        tsm_ctx_set_threads(ctx, threads);
        for (int w = 32; w <= 64; w += 32)
            for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
                for (int op = 0; op < TSM_SET_NOPS; op++)
                    check_op(ctx, w, methods[m], (tsm_set_op)op, a, na, b, nb, what);
    }
}

/* A pair of inputs of shape s, sizes na and nb, checked in every configuration. */
static void check_shape(shape s, size_t na, size_t nb) {
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(1000 + 97 * (uint64_t)s + na * 7 + nb);
    uint64_t *a = malloc((na + 1) * sizeof *a), *b = malloc((nb + 1) * sizeof *b);
    assert_true(a && b);
    size_t m = na > nb ? na : nb;
    fill(s, 0, a, na, m);
    fill(s, 1, b, nb, m);
    char what[64];
    snprintf(what, sizeof what, "%s", shape_names[s]);
    check_all(ctx, a, na, b, nb, what);
    free(a), free(b);
}

/* ---- cases -------------------------------------------------------------------------- */

/* The six seed shapes and the duplicate-heavy ones, at sizes 0, 1, 2, 2^k +- 1 (k = 5,
 * 10, 16: the last above the size from which the CPU goes parallel) and one size with
 * many pieces per thread. */
static void test_shapes(void **state) {
    shape s = (shape)(intptr_t)*state;
    static const size_t sizes[] = {0, 1, 2, 31, 33, 1023, 1025, 65535, 65537, 300007};
    size_t nsizes = tu_quick() ? 7 : sizeof sizes / sizeof sizes[0]; /* TSM_TEST_QUICK: <= 1025 */
    for (size_t q = 0; q < nsizes; q++)
        check_shape(s, sizes[q], sizes[q]);
    /* Slightly different sizes, and one side empty. */
    check_shape(s, 1000, 1001);
    check_shape(s, 40000, 39999);
    check_shape(s, 0, 777);
    check_shape(s, 777, 0);
    check_shape(s, 1, 70000);
}

/* Size ratios of 1:1000 and 1000:1 (RANGE_SEARCH territory), and 1:40 near the ratio
 * where AUTO switches, on random and mod-13 inputs. */
static void test_unequal(void **state) {
    (void)state;
    const size_t k = tu_quick() ? 10 : 1; /* TSM_TEST_QUICK: the same ratios, 10x smaller */
    check_shape(SHAPE_RANDOM, 300 / k, 300000 / k);
    check_shape(SHAPE_RANDOM, 300000 / k, 300 / k);
    check_shape(SHAPE_MOD13, 300 / k, 300000 / k);
    check_shape(SHAPE_MOD13, 300000 / k, 300 / k);
    check_shape(SHAPE_RANDOM, 5000 / k, 200000 / k);
    check_shape(SHAPE_IDENTICAL, 100 / k, 100000 / k);
    check_shape(SHAPE_DISJOINT, 100 / k, 100000 / k);
}

/* Size ratios of 1:1000 and 1000:1 large enough that the result goes out past the
 * cache (streaming stores from 32 MiB of output, sets.c STREAM_ABOVE) and the searches
 * of the small side in the large one run in flight together (scan's search_sorted):
 * every operation, both widths, both orders, the default method, 2 threads. The small
 * side has runs of up to three copies, the large one the duplicates of uniform draws. */
static void test_unequal_large(void **state) {
    (void)state;
    if (tu_quick())
        skip(); /* TSM_TEST_QUICK: sizes of up to 1025 only */
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(31);
    const size_t nl = 9000000, ns = nl / 1000;
    uint64_t *s = malloc(ns * sizeof *s), *l = malloc(nl * sizeof *l);
    assert_true(s && l);
    fill(SHAPE_RANDOM, 0, s, ns, nl);
    for (size_t i = 1; i < ns; i++)
        if (rnd(2))
            s[i] = s[i - 1];
    fill(SHAPE_RANDOM, 1, l, nl, nl);
    tsm_ctx_set_threads(ctx, 2);
    for (int w = 32; w <= 64; w += 32)
        for (int op = 0; op < TSM_SET_NOPS; op++) {
            check_op(ctx, w, TSM_SET_AUTO, (tsm_set_op)op, s, ns, l, nl, "1:1000 large");
            check_op(ctx, w, TSM_SET_AUTO, (tsm_set_op)op, l, nl, s, ns, "1000:1 large");
        }
    free(s), free(l);
}

/* Runs of one key long enough to span many pieces, with different multiplicities in A
 * and B, surrounded by distinct keys: the cuts fall inside the runs, so the
 * multiplicities of the pieces must add up exactly. */
static void test_runs_across_cuts(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(77);
    static const size_t runs[][2] = {{50000, 30000}, {30000, 50000}, {1, 90000},
                                     {90000, 1},     {65536, 65536}, {0, 70000}};
    /* TSM_TEST_QUICK: 10x shorter, the runs still cross several GPU tiles */
    const size_t k = tu_quick() ? 10 : 1, edge = 20000 / k;
    for (size_t q = 0; q < sizeof runs / sizeof runs[0]; q++) {
        size_t ca = runs[q][0] / k, cb = runs[q][1] / k, na = edge + ca + edge,
               nb = edge + cb + edge;
        uint64_t *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
        assert_true(a && b);
        for (size_t i = 0; i < edge; i++)
            a[i] = 2 * i, b[i] = 3 * i / 2;
        for (size_t i = 0; i < ca; i++)
            a[edge + i] = 100000;
        for (size_t i = 0; i < cb; i++)
            b[edge + i] = 100000;
        for (size_t i = 0; i < edge; i++)
            a[edge + ca + i] = 100001 + i, b[edge + cb + i] = 100001 + 2 * i;
        check_all(ctx, a, na, b, nb, "run across cuts");
        free(a), free(b);
    }
}

/* The cut itself (tsmi_set_split, used by every backend): for every diagonal of a
 * small duplicate-heavy pair, the operation on the two sides of the cut, concatenated,
 * equals the operation on the whole, and cuts are monotone. */
static void test_split(void **state) {
    (void)state;
    tu_case_seed(5);
    enum { NA = 120, NB = 90 };
    uint64_t a[NA], b[NB], whole[NA + NB], part[NA + NB];
    uint32_t a32[NA], b32[NB];
    for (int trial = 0; trial < 20; trial++) {
        uint64_t span = trial < 10 ? 4 : 40;
        for (size_t i = 0; i < NA; i++)
            a[i] = rnd(span);
        for (size_t j = 0; j < NB; j++)
            b[j] = rnd(span);
        qsort(a, NA, sizeof *a, cmp_u64);
        qsort(b, NB, sizeof *b, cmp_u64);
        for (size_t i = 0; i < NA; i++)
            a32[i] = (uint32_t)a[i];
        for (size_t j = 0; j < NB; j++)
            b32[j] = (uint32_t)b[j];
        size_t pi = 0, pj = 0;
        for (size_t d = 0; d <= NA + NB; d++) {
            size_t i, j, i32, j32;
            tsmi_set_split_u64(a, NA, b, NB, d, &i, &j);
            tsmi_set_split_u32(a32, NA, b32, NB, d, &i32, &j32);
            assert_int_equal(i, i32);
            assert_int_equal(j, j32);
            assert_true(i + j == d || i + j + 1 == d);
            assert_true(i >= pi && j >= pj);
            pi = i, pj = j;
            for (int op = 0; op < TSM_SET_NOPS; op++) {
                size_t nw = ref_set((tsm_set_op)op, a, NA, b, NB, whole);
                size_t n1 = ref_set((tsm_set_op)op, a, i, b, j, part);
                size_t n2 = ref_set((tsm_set_op)op, a + i, NA - i, b + j, NB - j, part + n1);
                if (n1 + n2 != nw || memcmp(part, whole, nw * sizeof *whole) != 0)
                    fail_msg("seed %llu: %s split at d = %zu (%zu, %zu) does not add up",
                             (unsigned long long)tu_seed, tsm_set_op_name((tsm_set_op)op), d, i, j);
            }
        }
    }
}

/* Thread counts 1 and 2 give identical results (also checked against the reference in
 * every case above); here on a size with many pieces and unequal piece costs. */
static void test_threads_identical(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(11);
    size_t n = 200000;
    uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *o1 = malloc(2 * n * 4),
             *o2 = malloc(2 * n * 4);
    assert_true(a && b && o1 && o2);
    uint32_t x = 0, y = 0;
    for (size_t i = 0; i < n; i++) { /* dense stretches and sparse ones */
        x += (i / 10000) % 2 ? (uint32_t)rnd(3) : (uint32_t)rnd(40);
        y += (uint32_t)rnd(7);
        a[i] = x, b[i] = y;
    }
    for (int op = 0; op < TSM_SET_NOPS; op++) {
        size_t c1 = 0, c2 = 0;
        tsm_ctx_set_threads(ctx, 1);
        assert_int_equal(tsm_set_u32(ctx, (tsm_set_op)op, a, n, b, n, o1, 2 * n, &c1), TSM_OK);
        tsm_ctx_set_threads(ctx, 2);
        assert_int_equal(tsm_set_u32(ctx, (tsm_set_op)op, a, n, b, n, o2, 2 * n, &c2), TSM_OK);
        assert_int_equal(c1, c2);
        assert_memory_equal(o1, o2, c1 * 4);
    }
    free(a), free(b), free(o1), free(o2);
}

/* tsm_first_descent: sorted arrays give n; the first descent is found wherever it is,
 * also at a block boundary of the threads and at the very end. */
static void test_first_descent(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    size_t n = 100001, at = 0;
    uint64_t *x = malloc(n * sizeof *x);
    uint32_t *y = malloc(n * sizeof *y);
    assert_true(x && y);
    for (size_t i = 0; i < n; i++)
        x[i] = i / 3, y[i] = (uint32_t)(i / 3);
    tsm_ctx_set_threads(ctx, 2);
    assert_int_equal(tsm_first_descent_u64(ctx, x, n, &at), TSM_OK);
    assert_int_equal(at, n);
    assert_int_equal(tsm_first_descent_u32(ctx, y, 0, &at), TSM_OK);
    assert_int_equal(at, 0);
    static const size_t where[] = {1, 2, 50000, 50001, 77777, 100000};
    for (size_t q = 0; q < sizeof where / sizeof where[0]; q++) {
        size_t w = where[q];
        if (y[w - 1] == 0)
            y[w - 1] = 5; /* y[w - 2] <= 0 < 5: still sorted up to w - 1 */
        y[w] = y[w - 1] - 1;
        for (int t = 1; t <= 2; t++) {
            tsm_ctx_set_threads(ctx, t);
            assert_int_equal(tsm_first_descent_u32(ctx, y, n, &at), TSM_OK);
            assert_int_equal(at, w);
        }
        for (size_t i = 0; i < n; i++) /* sorted again */
            y[i] = (uint32_t)(i / 3);
    }
    free(x), free(y);
}

/* Runs op on a and b (values below 2^32) with an output of room cap >= the result
 * (check_op gives exactly the result's size), filled with a marker first, and checks
 * the result against the reference: room beyond the result lets RANGE_SEARCH write
 * the pieces in place (sets.inc, range_search_cpu). */
static void check_room(tsm_ctx *ctx, int width, tsm_set_method method, tsm_set_op op,
                       const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t cap,
                       const char *what) {
    uint64_t *want = malloc((na + nb + 1) * sizeof *want), *x = malloc((na + 1) * sizeof *x),
             *y = malloc((nb + 1) * sizeof *y), *out = malloc((cap + 1) * sizeof *out);
    assert_true(want && x && y && out);
    for (size_t i = 0; i < na; i++)
        x[i] = width == 64 ? widen(a[i]) : a[i];
    for (size_t j = 0; j < nb; j++)
        y[j] = width == 64 ? widen(b[j]) : b[j];
    size_t nwant = ref_set(op, x, na, y, nb, want), got = 12345;
    assert_true(cap >= nwant);
    memset(out, 0xA5, (cap + 1) * sizeof *out);
    tsm_status st;
    if (width == 64) {
        st = tsm_set_with_u64(ctx, method, op, x, na, y, nb, out, cap, &got);
    } else {
        uint32_t *x32 = malloc((na + 1) * 4), *y32 = malloc((nb + 1) * 4),
                 *o32 = malloc((cap + 1) * 4);
        assert_true(x32 && y32 && o32);
        for (size_t i = 0; i < na; i++)
            x32[i] = (uint32_t)x[i];
        for (size_t j = 0; j < nb; j++)
            y32[j] = (uint32_t)y[j];
        memset(o32, 0xA5, (cap + 1) * 4);
        st = tsm_set_with_u32(ctx, method, op, x32, na, y32, nb, o32, cap, &got);
        for (size_t k = 0; k < nwant && k < cap; k++)
            out[k] = o32[k];
        free(x32), free(y32), free(o32);
    }
    if (st != TSM_OK || got != nwant)
        fail_msg("seed %llu: %s: %s %s u%d (%zu, %zu), room %zu: %s, %zu elements, want %zu",
                 (unsigned long long)tu_seed, what, tsm_set_op_name(op),
                 tsm_set_method_name(method), width, na, nb, cap, tsm_status_name(st), got, nwant);
    for (size_t k = 0; k < nwant; k++)
        if (out[k] != want[k])
            fail_msg("seed %llu: %s: %s %s u%d (%zu, %zu), room %zu: element %zu is %llu, want "
                     "%llu",
                     (unsigned long long)tu_seed, what, tsm_set_op_name(op),
                     tsm_set_method_name(method), width, na, nb, cap, k, (unsigned long long)out[k],
                     (unsigned long long)want[k]);
    free(want), free(x), free(y), free(out);
}

/* RANGE_SEARCH with room for the whole small side (tsm_set_bound's room for an
 * intersection, a difference's when A is the small side): the pieces are written at
 * their offsets in the small side and closed up afterwards. Small sides with runs
 * (across the pieces' cuts too), all keys matched, none matched, sizes from 1; the
 * room exactly the small side's size, the bound, and one less than the small side (the
 * counted path); every operation, both widths, 1 and 2 threads. */
static void test_search_in_place(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(41);
    static const size_t small[] = {1, 2, 17, 999, 2500};
    const size_t nl = tu_quick() ? 20000 : 100000;
    uint64_t *l = malloc(nl * sizeof *l), *s = malloc(2500 * sizeof *s);
    assert_true(l && s);
    fill(SHAPE_RANDOM, 1, l, nl, nl);
    for (size_t q = 0; q < sizeof small / sizeof small[0]; q++) {
        size_t ns = small[q] < nl / 40 ? small[q] : nl / 40;
        for (int kind = 0; kind < 3; kind++) {
            /* 0: random keys with runs of up to 4 copies; 1: keys taken from l (all
             * matched, some runs longer than l's); 2: keys above all of l (none) */
            for (size_t i = 0; i < ns; i++)
                s[i] = kind == 0 ? rnd(nl) : kind == 1 ? l[rnd(nl)] : nl + 1 + rnd(nl);
            qsort(s, ns, sizeof *s, cmp_u64);
            for (size_t i = 1; kind == 0 && i < ns; i++)
                if (rnd(3) == 0)
                    s[i] = s[i - 1];
            for (int threads = 1; threads <= 2; threads++) {
                tsm_ctx_set_threads(ctx, threads);
                for (int w = 32; w <= 64; w += 32)
                    for (int op = 0; op < TSM_SET_NOPS; op++)
                        for (int order = 0; order < 2; order++) {
                            const uint64_t *a = order ? l : s, *b = order ? s : l;
                            size_t na = order ? nl : ns, nb = order ? ns : nl;
                            size_t bound = tsm_set_bound((tsm_set_op)op, na, nb);
                            size_t want = ref_set_size((tsm_set_op)op, a, na, b, nb);
                            size_t rooms[] = {ns, bound, ns - 1};
                            for (int r = 0; r < 3; r++)
                                if (rooms[r] >= want)
                                    check_room(ctx, w, TSM_SET_RANGE_SEARCH, (tsm_set_op)op, a, na,
                                               b, nb, rooms[r], "search in place");
                        }
            }
        }
    }
    free(l), free(s);
}

/* Long stretches of equal pairs (the merge takes them in blocks of EQ_BLOCK = 16 pairs,
 * sets.inc loop_branchy): A = B = 0, 2, 4, ... with a key of B moved by one (B no
 * longer holds it: the stretch ends there) after stretches of 16 * 2^k - 1, 16 * 2^k
 * and 16 * 2^k + 1 pairs (and a random gap), so that stretches end just before, at
 * and just after a block's end, and cross the pieces' cuts; every operation, both
 * widths, the merge method, 1 and 2 threads. */
static void test_equal_stretches(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(43);
    const size_t n = tu_quick() ? 3000 : 150000;
    uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    assert_true(a && b);
    for (int variant = 0; variant < 3; variant++) {
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = 2 * i;
        size_t at = 0;
        for (size_t len = 16; at < n; len = len < 16384 ? 2 * len : 16) {
            /* a stretch of len + (-1, 0, +1) equal pairs, then a differing key */
            at += len + (size_t)variant - 1;
            if (at < n)
                b[at] += 1;
            at += 1 + rnd(3);
        }
        for (int threads = 1; threads <= 2; threads++) {
            tsm_ctx_set_threads(ctx, threads);
            for (int w = 32; w <= 64; w += 32)
                for (int op = 0; op < TSM_SET_NOPS; op++) {
                    check_op(ctx, w, TSM_SET_MERGE_PATH, (tsm_set_op)op, a, n, b, n,
                             "equal stretches");
                    check_op(ctx, w, TSM_SET_MERGE_PATH, (tsm_set_op)op, b, n, a, n - 1,
                             "equal stretches, one shorter");
                }
        }
    }
    free(a), free(b);
}

/* Unsorted input is not checked by the operations, but must not make them read or
 * write out of bounds (the sanitizer build checks this) and the count must match what
 * is written. */
static void test_unsorted_is_safe(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    tu_case_seed(13);
    size_t n = 100000;
    uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *o = malloc(2 * n * 4);
    assert_true(a && b && o);
    for (size_t i = 0; i < n; i++)
        a[i] = (uint32_t)rnd(1000), b[i] = (uint32_t)rnd(1000);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
        for (int op = 0; op < TSM_SET_NOPS; op++) {
            size_t c = 0, c0 = 0;
            tsm_ctx_set_threads(ctx, 2);
            tsm_status st =
                tsm_set_with_u32(ctx, methods[m], (tsm_set_op)op, a, n, b, n, o, 2 * n, &c);
            assert_int_equal(st, TSM_OK);
            assert_int_equal(
                tsm_set_with_u32(ctx, methods[m], (tsm_set_op)op, a, n, b, n, NULL, 0, &c0),
                TSM_OK);
            assert_int_equal(c, c0);
            assert_true(c <= tsm_set_bound((tsm_set_op)op, n, n));
        }
    free(a), free(b), free(o);
}

/* Bad arguments fail with TSM_EINVAL and a message, without touching anything. */
static void test_invalid(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    uint32_t a[3] = {1, 2, 3}, o[6];
    size_t c = 7;
    assert_int_equal(tsm_set_u32(ctx, TSM_SET_UNION, a, 3, a, 3, o, 6, NULL), TSM_EINVAL);
    assert_int_equal(tsm_set_u32(ctx, (tsm_set_op)9, a, 3, a, 3, o, 6, &c), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(c, 0);
    assert_int_equal(tsm_set_u32(ctx, TSM_SET_UNION, NULL, 3, a, 3, o, 6, &c), TSM_EINVAL);
    assert_int_equal(tsm_set_with_u32(ctx, (tsm_set_method)7, TSM_SET_UNION, a, 3, a, 3, o, 6, &c),
                     TSM_EINVAL);
    assert_int_equal(tsm_set_u32(ctx, TSM_SET_UNION, NULL, 0, NULL, 0, o, 6, &c), TSM_OK);
    assert_int_equal(c, 0);
    assert_int_equal(tsm_first_descent_u32(ctx, NULL, 3, &c), TSM_EINVAL);
    /* Names and bounds. */
    tsm_set_op op;
    assert_int_equal(tsm_set_op_parse("symdiff", &op), 0);
    assert_int_equal(op, TSM_SET_SYMDIFF);
    assert_int_equal(tsm_set_op_parse("minus", &op), -1);
    assert_string_equal(tsm_set_op_name(TSM_SET_DIFFERENCE), "difference");
    assert_int_equal(tsm_set_bound(TSM_SET_INTERSECT, 5, 3), 3);
    assert_int_equal(tsm_set_bound(TSM_SET_DIFFERENCE, 5, 3), 5);
    assert_int_equal(tsm_set_bound(TSM_SET_UNION, 5, 3), 8);
    assert_int_equal(tsm_set_bound(TSM_SET_SYMDIFF, SIZE_MAX, 3), SIZE_MAX);
}

/* 2^30 + 1 keys per side (more than one CUB call takes in older CCCL, more than 2^31
 * merged elements) on the GPU: intersection, union and difference of sorted random
 * walks with duplicates against the reference. The CPU backend skips it (the CPU
 * cases above cover its code paths; 16 GiB of host memory and minutes of serial
 * reference make it a GPU-machine test). */
static void test_huge_gpu(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    if (tsm_ctx_backend(ctx) != TSM_BACKEND_CUDA || tu_quick()) {
        print_message("SKIP: the 2^30-element case runs on the CUDA backend only, and not "
                      "with TSM_TEST_QUICK\n");
        skip();
    }
    size_t n = ((size_t)1 << 30) + 1;
    uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *o = malloc(2 * n * 4);
    assert_true(a && b && o);
    uint64_t s = 12345;
    uint32_t x = 0, y = 0;
    for (size_t i = 0; i < n; i++) { /* steps 0..3: duplicates, overlaps, gaps */
        s = s * 6364136223846793005u + 1442695040888963407u;
        x += (uint32_t)(s >> 62);
        y += (uint32_t)(s >> 60) & 3;
        a[i] = x, b[i] = y;
    }
    static const tsm_set_op ops[] = {TSM_SET_INTERSECT, TSM_SET_UNION, TSM_SET_DIFFERENCE};
    for (size_t q = 0; q < 3; q++) {
        size_t got = 0;
        tsm_status st = tsm_set_u32(ctx, ops[q], a, n, b, n, o, 2 * n, &got);
        if (st != TSM_OK)
            fail_msg("%s of 2^30 + 1: %s", tsm_set_op_name(ops[q]), tsm_ctx_error(ctx));
        /* The reference, streamed: merge again and compare as we go. */
        size_t i = 0, j = 0, k = 0;
        tsm_set_op op = ops[q];
        while (i < n || j < n) {
            int take_a = j == n || (i < n && a[i] < b[j]),
                take_b = i == n || (j < n && b[j] < a[i]);
            uint32_t v;
            int emit;
            if (take_a)
                v = a[i++], emit = op != TSM_SET_INTERSECT;
            else if (take_b)
                v = b[j++], emit = op == TSM_SET_UNION;
            else
                v = a[i++], j++, emit = op != TSM_SET_DIFFERENCE;
            if (emit) {
                if (k >= got || o[k] != v)
                    fail_msg("%s of 2^30 + 1: element %zu differs", tsm_set_op_name(op), k);
                k++;
            }
        }
        assert_int_equal(k, got);
    }
    free(a), free(b), free(o);
}

#ifdef TSMINE_HAVE_CUDA
/* Copies x[0..n-1] as keys of the given width into a device allocation where they
 * start off keys in; returns the allocation. */
static void *dev_keys(const uint64_t *x, size_t n, int width, size_t off) {
    const size_t kb = (size_t)width / 8;
    unsigned char *h = calloc(n + off + 1, kb);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) {
        if (width == 64)
            ((uint64_t *)h)[off + i] = x[i];
        else
            ((uint32_t *)h)[off + i] = (uint32_t)x[i];
    }
    void *d = tu_dev_dup(h, (n + off + 1) * kb);
    free(h);
    return d;
}

/* One call of the device entry point of width on a and b (already of that width's
 * range) with the inputs and the output off[0], off[1], off[2] keys past their
 * allocations, checked against the reference. */
static void dev_call(tsm_ctx *ctx, int width, tsm_set_method method, tsm_set_op op,
                     const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                     const size_t off[3]) {
    const size_t kb = (size_t)width / 8;
    uint64_t *want = malloc((na + nb + 1) * 8), zero = 0, count = 0;
    unsigned char *got = malloc((na + nb + off[2] + 1) * kb);
    assert_true(want && got);
    const size_t nwant = ref_set(op, a, na, b, nb, want);
    void *da = dev_keys(a, na, width, off[0]), *db = dev_keys(b, nb, width, off[1]);
    void *dout = dev_keys(NULL, 0, width, nwant + off[2]); /* zeroed room */
    uint64_t *dcount = tu_dev_dup(&zero, sizeof zero);
    tsm_status st = width == 64 ? tsmi_set_u64_dev(ctx, method, op, (const uint64_t *)da + off[0],
                                                   na, (const uint64_t *)db + off[1], nb,
                                                   (uint64_t *)dout + off[2], nwant, dcount)
                                : tsmi_set_u32_dev(ctx, method, op, (const uint32_t *)da + off[0],
                                                   na, (const uint32_t *)db + off[1], nb,
                                                   (uint32_t *)dout + off[2], nwant, dcount);
    if (st != TSM_OK)
        fail_msg("%s %s u%d offsets %zu,%zu,%zu: %s", tsm_set_op_name(op),
                 tsm_set_method_name(method), width, off[0], off[1], off[2], tsm_ctx_error(ctx));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tu_dev_get(&count, dcount, sizeof count);
    assert_int_equal(count, nwant);
    tu_dev_get(got, dout, (nwant + off[2]) * kb);
    for (size_t k = 0; k < nwant; k++) {
        const size_t at = off[2] + k;
        const uint64_t v = width == 64 ? ((uint64_t *)got)[at] : ((uint32_t *)got)[at];
        if (v != want[k])
            fail_msg("%s %s u%d (%zu, %zu) offsets %zu,%zu,%zu: element %zu is %llu, want %llu",
                     tsm_set_op_name(op), tsm_set_method_name(method), width, na, nb, off[0],
                     off[1], off[2], k, (unsigned long long)v, (unsigned long long)want[k]);
    }
    tu_dev_free(da), tu_dev_free(db), tu_dev_free(dout), tu_dev_free(dcount);
    free(want), free(got);
}
#endif

/* The device entry points (tsmi_set_u32_dev / _u64_dev, sets.h) on arrays that start
 * 1 to 3 keys past an allocation: the CUDA kernels load and store 16-byte vectors
 * matched to each array's own alignment, with the partial vectors at the ends taken
 * key by key; the host entry points always pass aligned buffers, so only these calls
 * (and the chunked host path's pieces) reach the unaligned cases. Both methods, every
 * operation, both widths, balanced and 1:1000 sizes, against the reference. */
static void test_device_offsets(void **state) {
    (void)state;
    tsm_ctx *ctx = ctx_under_test();
    if (!tu_on_device(ctx)) {
        print_message("SKIP: device pointers are the CUDA backend's\n");
        skip();
    }
#ifdef TSMINE_HAVE_CUDA
    static const size_t offs[][3] = {{0, 0, 0}, {1, 0, 0}, {0, 3, 0}, {0, 0, 1},
                                     {1, 3, 1}, {2, 1, 3}, {3, 2, 2}};
    static const size_t sizes[][2] = {{5000, 4001}, {3001, 2999}, {9, 9000}, {9000, 9}};
    static const tsm_set_method methods[] = {TSM_SET_MERGE_PATH, TSM_SET_RANGE_SEARCH};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        const size_t na = sizes[z][0], nb = sizes[z][1], m = na > nb ? na : nb;
        const shape sh = z & 1 ? SHAPE_MOD13 : SHAPE_RANDOM;
        tu_case_seed(900 + z);
        uint64_t *a = malloc((na + 1) * 8), *b = malloc((nb + 1) * 8);
        uint64_t *a64 = malloc((na + 1) * 8), *b64 = malloc((nb + 1) * 8);
        assert_true(a && b && a64 && b64);
        fill(sh, 0, a, na, m);
        fill(sh, 1, b, nb, m);
        for (size_t i = 0; i < na; i++)
            a[i] = (uint32_t)a[i], a64[i] = widen(a[i]);
        for (size_t j = 0; j < nb; j++)
            b[j] = (uint32_t)b[j], b64[j] = widen(b[j]);
        for (size_t q = 0; q < sizeof offs / sizeof offs[0]; q++)
            for (int op = 0; op < TSM_SET_NOPS; op++)
                for (size_t mi = 0; mi < 2; mi++) {
                    dev_call(ctx, 32, methods[mi], (tsm_set_op)op, a, na, b, nb, offs[q]);
                    dev_call(ctx, 64, methods[mi], (tsm_set_op)op, a64, na, b64, nb, offs[q]);
                }
        free(a), free(b), free(a64), free(b64);
    }
#endif
}

int main(void) {
    struct CMUnitTest tests[N_SHAPES + 12];
    static char names[N_SHAPES][32];
    size_t nt = 0;
    for (int s = 0; s < N_SHAPES; s++) {
        snprintf(names[s], sizeof names[s], "shape %s", shape_names[s]);
        tests[nt++] = (struct CMUnitTest){names[s], test_shapes, NULL, NULL, (void *)(intptr_t)s};
    }
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_unequal),           cmocka_unit_test(test_unequal_large),
        cmocka_unit_test(test_runs_across_cuts),  cmocka_unit_test(test_split),
        cmocka_unit_test(test_threads_identical), cmocka_unit_test(test_first_descent),
        cmocka_unit_test(test_unsorted_is_safe),  cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_huge_gpu),          cmocka_unit_test(test_search_in_place),
        cmocka_unit_test(test_equal_stretches),   cmocka_unit_test(test_device_offsets),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[nt++] = fixed[i];
    tu_apply_filter();
    if (!tu_backend_available())
        return 0;
    int failed = _cmocka_run_group_tests("sets", tests, nt, NULL, NULL);
    tsm_ctx_destroy(&the_ctx);
    return failed;
}
