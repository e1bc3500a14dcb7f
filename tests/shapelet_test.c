/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_test.c - shapelet discovery (kernels/shapelet) against the brute-force
 * reference (tests/reference/shapelet_ref), on the backend under test.
 *
 * Tolerances: candidate-to-series distances d are compared as d^2 within 1e-9
 * absolute (d^2 <= 4 for z-normalised length-normalised distances; the kernel's
 * correlation form 2 (1 - corr) loses relative precision near d = 0, so a relative
 * bound on d itself would not hold for exact matches: d = 0 may come out as 1e-8);
 * gains within 1e-12, gaps within TSM_SHAPELET_GAP_TOL where distances differ,
 * thresholds and gaps of the same distances within 1e-9. Shapelets are compared by identity
 * (series, start, length) unless the reference says another candidate is tied. */
#include "testutil.h"

#include "shapelet.h"
#include "shapelet_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D2_TOL 1e-9

/* A random labelled set: n random walks of length L, labels j % nc, with a constant
 * stretch in series 1 when plateau is set. Caller frees x and y. */
static tsm_shapelet_data random_set(size_t n, size_t L, int nc, int plateau, double **x, int **y) {
    *x = malloc(n * L * sizeof **x);
    *y = malloc(n * sizeof **y);
    assert_true(*x && *y);
    for (size_t j = 0; j < n; j++) {
        tu_random_walk(*x + j * L, L);
        (*y)[j] = (int)(j % (size_t)nc);
    }
    if (plateau && n > 1 && L >= 10)
        tu_fill(*x + L, 2, 7, 3.25);
    return (tsm_shapelet_data){n, L, *x, *y, nc};
}

/* Every candidate of length l of data against the reference, band w. */
static void check_dist_length(tsm_ctx *ctx, const tsm_shapelet_data *data, size_t l, size_t w) {
    const size_t n = data->n, L = data->len, U = L - l + 1;
    double *d = malloc(U * n * sizeof *d);
    int64_t *pos = malloc(U * n * sizeof *pos);
    assert_true(d && pos);
    for (size_t i = 0; i < n; i++) {
        tsm_status st = tsm_shapelet_dist(ctx, data, i, 0, U, l, w, d, pos);
        assert_int_equal(st, TSM_OK);
        for (size_t s = 0; s < U; s++)
            for (size_t j = 0; j < n; j++) {
                double ref =
                    ref_shapelet_subdist(data->x + i * L + s, l, data->x + j * L, L, w, NULL);
                double got = d[s * n + j];
                if (fabs(got * got - ref * ref) > D2_TOL)
                    fail_msg("seed %llu: w %zu l %zu cand (%zu,%zu) series %zu: d %.17g ref %.17g",
                             (unsigned long long)tu_seed, w, l, i, s, j, got, ref);
                /* the reported position achieves the distance */
                double at = ref_shapelet_subdist(data->x + i * L + s, l,
                                                 data->x + j * L + pos[s * n + j], l, w, NULL);
                if (fabs(at * at - ref * ref) > D2_TOL)
                    fail_msg(
                        "seed %llu: w %zu l %zu cand (%zu,%zu) series %zu: pos %lld gives %.17g, "
                        "best %.17g",
                        (unsigned long long)tu_seed, w, l, i, s, j, (long long)pos[s * n + j], at,
                        ref);
            }
    }
    free(d);
    free(pos);
}

static void test_dist_euclidean(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(601));
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(5, 24, 2, 1, &x, &y);
    for (size_t l = 3; l <= 24; l += 5)
        check_dist_length(ctx, &data, l, 0);
    check_dist_length(ctx, &data, 24, 0);
    free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

static void test_dist_dtw(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(602));
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(4, 20, 2, 1, &x, &y);
    static const size_t ws[] = {1, 3, 25};
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++)
        for (size_t l = 3; l <= 20; l += 4)
            check_dist_length(ctx, &data, l, ws[k]);
    free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

/* DTW never exceeds the Euclidean distance, and a wider band never increases it. */
static void test_dtw_monotone_in_w(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(603));
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(4, 30, 2, 0, &x, &y);
    const size_t l = 10, U = 21, n = 4;
    double *prev = malloc(U * n * sizeof *prev), *cur = malloc(U * n * sizeof *cur);
    assert_int_equal(tsm_shapelet_dist(ctx, &data, 2, 0, U, l, 0, prev, NULL), TSM_OK);
    for (size_t w = 1; w <= 4; w++) {
        assert_int_equal(tsm_shapelet_dist(ctx, &data, 2, 0, U, l, w, cur, NULL), TSM_OK);
        for (size_t k = 0; k < U * n; k++)
            assert_true(cur[k] <= prev[k] + 1e-12);
        memcpy(prev, cur, U * n * sizeof *cur);
    }
    free(prev), free(cur), free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

/* Distances of a saved pattern equal those of the same training candidate. */
static void test_dist_pattern(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(604));
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(5, 26, 2, 1, &x, &y);
    double d[5], e[5];
    for (size_t w = 0; w <= 2; w += 2)
        for (size_t s = 0; s < 20; s += 3) {
            assert_int_equal(tsm_shapelet_dist(ctx, &data, 1, s, 1, 7, w, d, NULL), TSM_OK);
            assert_int_equal(tsm_shapelet_dist_pattern(ctx, x + 26 + s, 7, x, 5, 26, w, e), TSM_OK);
            for (size_t j = 0; j < 5; j++)
                assert_true(fabs(d[j] * d[j] - e[j] * e[j]) <= D2_TOL);
        }
    /* a series holding NaN everywhere is at +inf; one NaN only hides its windows */
    x[2 * 26 + 5] = NAN;
    for (size_t k = 0; k < 26; k++)
        x[3 * 26 + k] = NAN;
    assert_int_equal(tsm_shapelet_dist_pattern(ctx, x, 7, x, 5, 26, 0, e), TSM_OK);
    assert_true(isfinite(e[2]));
    assert_true(isinf(e[3]));
    free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

/* Random distances with many exact ties, multi-class. */
static void test_split_exact(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(605));
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + (size_t)(tu_uniform() * 40);
        int nc = 1 + (int)(tu_uniform() * 4);
        double d[40];
        int y[40];
        double grid = round % 3 == 0 ? 0.25 : 0.0;
        for (size_t j = 0; j < n; j++) {
            d[j] = tu_uniform() * 3.0;
            if (grid > 0)
                d[j] = floor(d[j] / grid) * grid; /* ties */
            y[j] = (int)(tu_uniform() * nc);
        }
        tsm_split got, want = ref_shapelet_split(d, y, n, nc);
        assert_int_equal(tsm_shapelet_split(ctx, d, y, n, nc, &got), TSM_OK);
        assert_int_equal(got.valid, want.valid);
        if (!want.valid)
            continue;
        if (fabs(got.gain - want.gain) > 1e-12 || fabs(got.gap - want.gap) > 1e-9 ||
            fabs(got.threshold - want.threshold) > 1e-12)
            fail_msg("seed %llu round %d: got (%.17g, %.17g, %.17g) want (%.17g, %.17g, %.17g)",
                     (unsigned long long)tu_seed, round, got.gain, got.gap, got.threshold,
                     want.gain, want.gap, want.threshold);
    }
    tsm_ctx_destroy(&ctx);
}

/* The heuristic's split is a real split: its gain and gap are those of its threshold,
 * never above the exact best; on separable data it finds the perfect split. */
static void test_split_heuristic(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(606));
    for (int round = 0; round < 300; round++) {
        size_t n = 2 + (size_t)(tu_uniform() * 40);
        int nc = 2 + (int)(tu_uniform() * 3);
        double d[42];
        int y[42];
        for (size_t j = 0; j < n; j++) {
            y[j] = (int)(tu_uniform() * nc);
            d[j] = round % 2 ? tu_uniform() : y[j] + 0.5 * tu_uniform(); /* odd: noise */
        }
        tsm_split h, e = ref_shapelet_split(d, y, n, nc);
        assert_int_equal(tsm_shapelet_split_heuristic(ctx, d, y, n, nc, (uint64_t)round, &h),
                         TSM_OK);
        assert_int_equal(h.valid, ref_shapelet_split_heuristic(d, y, n, nc, (uint64_t)round).valid);
        if (!h.valid)
            continue;
        double gain, gap;
        assert_true(ref_shapelet_split_at(d, y, n, nc, h.threshold, &gain, &gap));
        assert_true(fabs(gain - h.gain) <= 1e-12);
        assert_true(fabs(gap - h.gap) <= 1e-9);
        assert_true(h.gain <= e.gain + 1e-12);
        /* and it is the split the written-out Algorithm 4.5 picks */
        tsm_split r = ref_shapelet_split_heuristic(d, y, n, nc, (uint64_t)round);
        if (!r.valid || fabs(r.threshold - h.threshold) > 1e-12 || fabs(r.gain - h.gain) > 1e-12)
            fail_msg(
                "seed %llu round %d: heuristic threshold %.17g gain %.17g, reference %.17g %.17g",
                (unsigned long long)tu_seed, round, h.threshold, h.gain, r.threshold, r.gain);
    }
    /* two classes separated by distance: a split that gains something */
    double d[8] = {0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.25, 0.85};
    int y[8] = {0, 1, 0, 1, 0, 1, 0, 1};
    tsm_split h;
    assert_int_equal(tsm_shapelet_split_heuristic(ctx, d, y, 8, 2, 7, &h), TSM_OK);
    assert_true(h.valid && h.gain > 0.1);
    tsm_ctx_destroy(&ctx);
}

/* The whole search against the reference on small random sets. */
static void test_discover_random(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    for (int round = 0; round < 6; round++) {
        tu_rng_init(tu_case_seed(610 + (uint64_t)round));
        double *x;
        int *y;
        int nc = 2 + round % 2;
        tsm_shapelet_data data = random_set(6 + (size_t)round % 3, 14, nc, round % 2, &x, &y);
        tsm_shapelet_opts o = {.min_len = 3,
                               .max_len = 9,
                               .step = 1 + (size_t)round % 2,
                               .w = round < 3 ? 0 : (size_t)round - 2};
        tsm_shapelet got, want = ref_shapelet_best(&data, &o);
        assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &got), TSM_OK);
        if (got.series != want.series || got.start != want.start || got.length != want.length ||
            fabs(got.split.gain - want.split.gain) > 1e-12)
            fail_msg("seed %llu w %zu: got (%zu,%zu,%zu) gain %.17g gap %.17g, want (%zu,%zu,%zu) "
                     "gain %.17g gap %.17g",
                     (unsigned long long)tu_seed, o.w, got.series, got.start, got.length,
                     got.split.gain, got.split.gap, want.series, want.start, want.length,
                     want.split.gain, want.split.gap);
        /* a budget of one candidate at a time finds the same */
        tsm_shapelet small;
        o.budget = 1;
        assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &small), TSM_OK);
        assert_true(small.series == got.series && small.start == got.start &&
                    small.length == got.length);
        /* batches start the dot-product recurrence elsewhere: rounding may differ */
        if (fabs(small.split.gain - got.split.gain) > 1e-12 ||
            fabs(small.split.gap - got.split.gap) > TSM_SHAPELET_GAP_TOL)
            fail_msg("seed %llu: budget 1 gives gain %.17g gap %.17g, default %.17g %.17g",
                     (unsigned long long)tu_seed, small.split.gain, small.split.gap, got.split.gain,
                     got.split.gap);
        free(x), free(y);
    }
    tsm_ctx_destroy(&ctx);
}

/* Logical shapelets: every candidate's distances combined with the distances of a
 * fixed shapelet (AND: max, OR: min) before the split, against the reference, on
 * Euclidean and DTW distances; a base that is NaN or an unknown op is refused. */
static void test_discover_logical(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    for (int round = 0; round < 4; round++) {
        tu_rng_init(tu_case_seed(650 + (uint64_t)round));
        double *x;
        int *y;
        tsm_shapelet_data data = random_set(8, 16, 2 + round % 2, 0, &x, &y);
        double base[8];
        for (size_t j = 0; j < data.n; j++)
            base[j] = ref_shapelet_subdist(x + 16 + 3, 6, x + j * 16, 16, 0, NULL);
        tsm_shapelet_opts o = {.min_len = 3,
                               .max_len = 8,
                               .step = 1,
                               .w = round < 2 ? 0 : 2,
                               .op = round % 2 ? TSM_SHAPELET_OR : TSM_SHAPELET_AND,
                               .base = base};
        tsm_shapelet got, want = ref_shapelet_best(&data, &o);
        assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &got), TSM_OK);
        if (got.series != want.series || got.start != want.start || got.length != want.length ||
            fabs(got.split.gain - want.split.gain) > 1e-12 ||
            fabs(got.split.threshold - want.split.threshold) > TSM_SHAPELET_GAP_TOL)
            fail_msg("seed %llu op %d w %zu: got (%zu,%zu,%zu) gain %.17g, want (%zu,%zu,%zu) "
                     "gain %.17g",
                     (unsigned long long)tu_seed, o.op, o.w, got.series, got.start, got.length,
                     got.split.gain, want.series, want.start, want.length, want.split.gain);
        /* the combination can only be at least as good as the base alone */
        tsm_split alone;
        assert_int_equal(tsm_shapelet_split(ctx, base, y, data.n, data.n_classes, &alone), TSM_OK);
        assert_true(got.split.gain >= alone.gain - 1e-12);
        if (round == 0) {
            o.op = 7;
            assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &got), TSM_EINVAL);
            o.op = TSM_SHAPELET_AND, base[3] = NAN;
            assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &got), TSM_EINVAL);
        }
        free(x), free(y);
    }
    tsm_ctx_destroy(&ctx);
}

/* Noise series; class 1 carries a planted bump (a sharp triangle) of length 12 at a
 * random position. The shapelet must separate the classes perfectly and overlap the
 * bump of its source series by at least half its length. */
static void test_planted_pattern(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(620));
    const size_t n = 16, L = 60, P = 12;
    double *x = malloc(n * L * sizeof *x);
    int y[16];
    size_t at[16];
    for (size_t j = 0; j < n; j++) {
        for (size_t k = 0; k < L; k++)
            x[j * L + k] = 0.3 * tu_normal();
        y[j] = (int)(j % 2);
        at[j] = 2 + (size_t)(tu_uniform() * (double)(L - P - 4));
        if (y[j] == 1)
            for (size_t k = 0; k < P; k++)
                x[j * L + at[j] + k] += 4.0 * (1.0 - fabs((double)k - 5.5) / 6.0);
    }
    tsm_shapelet_data data = {n, L, x, y, 2};
    for (size_t w = 0; w <= 2; w += 2) {
        tsm_shapelet_opts o = {.min_len = 8, .max_len = 16, .step = 2, .w = w};
        tsm_shapelet s;
        assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_OK);
        assert_true(s.split.valid);
        assert_true(fabs(s.split.gain - log(2.0)) < 1e-12);
        assert_int_equal(y[s.series], 1);
        size_t lo = s.start > at[s.series] ? s.start : at[s.series];
        size_t hi = s.start + s.length < at[s.series] + P ? s.start + s.length : at[s.series] + P;
        assert_true(hi > lo && 2 * (hi - lo) >= s.length);
        /* the heuristic split finds a perfect shapelet too */
        o.heuristic = 1;
        assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_OK);
        assert_true(fabs(s.split.gain - log(2.0)) < 1e-12);
    }
    free(x);
    tsm_ctx_destroy(&ctx);
}

/* Discovery on ctx and on the CPU ctx cpu: the same shapelet, gains within 1e-12,
 * thresholds within TSM_SHAPELET_GAP_TOL. */
static void discover_agree(tsm_ctx *ctx, tsm_ctx *cpu, const tsm_shapelet_data *data,
                           const tsm_shapelet_opts *o) {
    tsm_shapelet sa, sb;
    assert_int_equal(tsm_shapelet_discover(ctx, data, o, &sa), TSM_OK);
    assert_int_equal(tsm_shapelet_discover(cpu, data, o, &sb), TSM_OK);
    if (sa.series != sb.series || sa.start != sb.start || sa.length != sb.length ||
        fabs(sa.split.gain - sb.split.gain) > 1e-12 || !sa.split.valid)
        fail_msg("seed %llu n %zu w %zu heuristic %d: (%zu,%zu,%zu) gain %.17g, cpu (%zu,%zu,%zu) "
                 "gain %.17g",
                 (unsigned long long)tu_seed, data->n, o->w, o->heuristic, sa.series, sa.start,
                 sa.length, sa.split.gain, sb.series, sb.start, sb.length, sb.split.gain);
    /* a threshold next to a self-match (d ~ 0, absolute error ~1e-8): the gap tolerance */
    if (fabs(sa.split.threshold - sb.split.threshold) > TSM_SHAPELET_GAP_TOL)
        fail_msg("seed %llu: threshold %.17g, cpu %.17g", (unsigned long long)tu_seed,
                 sa.split.threshold, sb.split.threshold);
}

/* The backend under test against the CPU backend on a larger set (several batches and
 * blocks of rows): the same distances (d^2 within D2_TOL) and the same shapelet. */
static void test_backends_agree(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx(), *cpu = NULL;
    assert_int_equal(tsm_ctx_new(&cpu, TSM_BACKEND_CPU, NULL), TSM_OK);
    tu_rng_init(tu_case_seed(640));
    const size_t n = tu_quick() ? 6 : 10, L = tu_quick() ? 70 : 130;
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(n, L, 3, 1, &x, &y);
    static const size_t lens[] = {3, 17, 64, 130};
    for (size_t w = 0; w <= 3; w += 3)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0] && lens[k] <= L; k++) {
            const size_t l = lens[k], U = L - l + 1;
            double *a = malloc(U * n * sizeof *a), *b = malloc(U * n * sizeof *b);
            assert_true(a && b);
            for (size_t i = 0; i < n; i += 5) {
                assert_int_equal(tsm_shapelet_dist(ctx, &data, i, 0, U, l, w, a, NULL), TSM_OK);
                assert_int_equal(tsm_shapelet_dist(cpu, &data, i, 0, U, l, w, b, NULL), TSM_OK);
                for (size_t q = 0; q < U * n; q++)
                    if (fabs(a[q] * a[q] - b[q] * b[q]) > D2_TOL)
                        fail_msg("seed %llu w %zu l %zu series %zu item %zu: %.17g vs cpu %.17g",
                                 (unsigned long long)tu_seed, w, l, i, q, a[q], b[q]);
            }
            free(a), free(b);
        }
    /* the whole search, Euclidean, DTW (shorter lengths, for time) and the heuristic
     * split, in several batches */
    for (int k = 0; k < 3; k++) {
        tsm_shapelet_opts o = {.min_len = 10,
                               .max_len = k == 1 ? 19 : 40,
                               .step = 3,
                               .budget = 4096,
                               .w = k == 1 ? 3 : 0};
        o.heuristic = k == 2, o.seed = 99;
        discover_agree(ctx, cpu, &data, &o);
    }
    free(x), free(y);
    /* series longer than a block of candidate rows (several chunks per series) */
    data = random_set(3, 300, 2, 1, &x, &y);
    for (size_t w = 0; w <= 3; w += 3) {
        /* DTW: the last 16 candidates only (in the second block of rows), for time */
        const size_t l = w ? 40 : 3, U = 300 - l + 1, s0 = w ? U - 16 : 0, m = U - s0;
        double *a = malloc(m * 3 * sizeof *a), *b = malloc(m * 3 * sizeof *b);
        assert_true(a && b);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(tsm_shapelet_dist(ctx, &data, i, s0, m, l, w, a, NULL), TSM_OK);
            assert_int_equal(tsm_shapelet_dist(cpu, &data, i, s0, m, l, w, b, NULL), TSM_OK);
            for (size_t q = 0; q < m * 3; q++)
                if (fabs(a[q] * a[q] - b[q] * b[q]) > D2_TOL)
                    fail_msg("seed %llu long w %zu series %zu item %zu: %.17g vs cpu %.17g",
                             (unsigned long long)tu_seed, w, i, q, a[q], b[q]);
        }
        free(a), free(b);
    }
    tsm_shapelet_opts lo = {.min_len = 3, .max_len = 300, .step = 37, .budget = 20000};
    discover_agree(ctx, cpu, &data, &lo);
    free(x), free(y);
    /* more series than the device keeps in shared memory per order line */
    data = random_set(tu_quick() ? 70 : 90, 24, 2, 0, &x, &y);
    tsm_shapelet_opts o = {.min_len = 3, .max_len = 24, .step = 1};
    discover_agree(ctx, cpu, &data, &o);
    free(x), free(y);
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
}

static void test_invalid_arguments(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(630));
    double *x;
    int *y;
    tsm_shapelet_data data = random_set(4, 12, 2, 0, &x, &y);
    tsm_shapelet s;
    tsm_shapelet_opts o = {.min_len = 2, .max_len = 5, .step = 1};
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "min_len"));
    o.min_len = 3, o.max_len = 13;
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_EINVAL);
    o.max_len = 5, o.step = 0;
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_EINVAL);
    o.step = 1;
    y[2] = 2;
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_EINVAL);
    y[2] = 0;
    x[7] = NAN;
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "non-finite"));
    x[7] = 0.0;
    double d[4];
    assert_int_equal(tsm_shapelet_dist(ctx, &data, 4, 0, 1, 5, 0, d, NULL), TSM_EINVAL);
    assert_int_equal(tsm_shapelet_dist(ctx, &data, 0, 7, 2, 5, 0, d, NULL), TSM_EINVAL);
    /* one class only: nothing to gain, no shapelet */
    for (size_t j = 0; j < 4; j++)
        y[j] = 0;
    data.n_classes = 1;
    assert_int_equal(tsm_shapelet_discover(ctx, &data, &o, &s), TSM_OK);
    assert_false(s.split.valid && s.split.gain > 1e-12);
    free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_euclidean),
        cmocka_unit_test(test_dist_dtw),
        cmocka_unit_test(test_dtw_monotone_in_w),
        cmocka_unit_test(test_dist_pattern),
        cmocka_unit_test(test_split_exact),
        cmocka_unit_test(test_split_heuristic),
        cmocka_unit_test(test_discover_random),
        cmocka_unit_test(test_discover_logical),
        cmocka_unit_test(test_planted_pattern),
        cmocka_unit_test(test_backends_agree),
        cmocka_unit_test(test_invalid_arguments),
    };
    /* clang-format on */
    return TU_RUN_GROUP("shapelet", tests, NULL, NULL);
}
