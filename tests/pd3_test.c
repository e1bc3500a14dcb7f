/* SPDX-License-Identifier: Apache-2.0 */
/* pd3_test.c - PD3 range discords and the top-k driver against the brute-force
 * reference: random walks, planted anomalies, constant and non-finite
 * stretches, exact ties, edge sizes, segment lengths and invalid arguments. */
#include "testutil.h"

#include "mp.h"
#include "pd3.h"
#include "reference.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A series with its reference profile, built once per case. */
typedef struct {
    double *t;
    size_t n, m, excl, N;
    double *ref_dist;
    int64_t *ref_index;
    tsm_ctx *ctx;
    tsm_stats *stats;
} fixture;

static void fixture_init(fixture *f, double *t, size_t n, size_t m, size_t excl) {
    f->ctx = tu_ctx(); /* first: a skipped backend costs nothing */
    f->t = t, f->n = n, f->m = m, f->excl = excl, f->N = n - m + 1;
    f->ref_dist = malloc(f->N * sizeof *f->ref_dist);
    f->ref_index = malloc(f->N * sizeof *f->ref_index);
    assert_non_null(f->ref_dist);
    assert_non_null(f->ref_index);
    ref_profile(t, n, m, excl, 0, f->ref_dist, f->ref_index);
    assert_int_equal(tsm_stats_new(f->ctx, t, n, m, &f->stats), TSM_OK);
}

/* As fixture_init, for series too long for the O(N^2 m) reference: the
 * reference profile is the CPU backend's matrix profile (mp.c, itself tested
 * against the brute-force reference in mp_test), O(N^2) and vectorised.
 * Neighbours are still checked with the brute-force distance. */
static void fixture_init_mp(fixture *f, double *t, size_t n, size_t m, size_t excl) {
    f->ctx = tu_ctx();
    f->t = t, f->n = n, f->m = m, f->excl = excl, f->N = n - m + 1;
    f->ref_dist = malloc(f->N * sizeof *f->ref_dist);
    f->ref_index = malloc(f->N * sizeof *f->ref_index);
    assert_non_null(f->ref_dist);
    assert_non_null(f->ref_index);
    tsm_ctx *cpu = NULL;
    tsm_stats *s = NULL;
    assert_int_equal(tsm_ctx_new(&cpu, TSM_BACKEND_CPU, NULL), TSM_OK);
    assert_int_equal(tsm_stats_new(cpu, t, n, m, &s), TSM_OK);
    assert_int_equal(tsm_mp(cpu, s, excl, f->ref_dist, f->ref_index, NULL, NULL), TSM_OK);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&cpu);
    assert_int_equal(tsm_stats_new(f->ctx, t, n, m, &f->stats), TSM_OK);
}

static void fixture_done(fixture *f) {
    tsm_stats_destroy(&f->stats);
    tsm_ctx_destroy(&f->ctx);
    free(f->ref_dist), free(f->ref_index), free(f->t);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Ranges to try: above every nn, between consecutive nn values at a few
 * quantiles (so the expected set is unambiguous), and 0 (every subsequence with
 * a neighbour). */
static size_t pick_ranges(const fixture *f, double *r, size_t max) {
    double *v = malloc(f->N * sizeof *v);
    size_t c = 0, nr = 0;
    for (size_t i = 0; i < f->N; i++)
        if (isfinite(f->ref_dist[i]))
            v[c++] = f->ref_dist[i];
    qsort(v, c, sizeof *v, cmp_double);
    r[nr++] = 2.0 * sqrt((double)f->m) + 1.0;
    r[nr++] = 0.0;
    const double q[] = {0.999, 0.99, 0.9, 0.5, 0.1};
    for (size_t k = 0; k < sizeof q / sizeof q[0] && nr < max && c > 1; k++) {
        size_t at = (size_t)(q[k] * (double)(c - 1));
        if (at + 1 >= c)
            at = c - 2;
        /* a gap wide enough that rounding cannot move anyone across r */
        if (v[at + 1] * v[at + 1] - v[at] * v[at] > 4 * TU_D2_TOL(f->m))
            r[nr++] = 0.5 * (v[at] + v[at + 1]);
    }
    free(v);
    return nr;
}

/* The given ranges and segment lengths against the reference. */
static void check_these_ranges(fixture *f, const double *r, size_t nr, const size_t *seglens,
                               size_t nseglens) {
    for (size_t s = 0; s < nseglens; s++)
        for (size_t q = 0; q < nr; q++) {
            tsm_discord *got = NULL;
            size_t ngot = 0;
            tsm_pd3_stats ctr = {0};
            tsm_status st =
                tsm_pd3_range(f->ctx, f->stats, f->excl, r[q], seglens[s], &got, &ngot, &ctr);
            if (st != TSM_OK)
                fail_msg("seed %llu: tsm_pd3_range: %s", (unsigned long long)tu_seed,
                         tsm_ctx_error(f->ctx));
            tu_check_range_discords(f->t, f->m, f->excl, f->ref_dist, f->N, r[q], got, ngot);
            assert_true(ctr.distances <= (uint64_t)f->N * f->N);
            free(got);
        }
}

/* Every range of pick_ranges and the given segment lengths against the
 * reference. */
static void check_ranges(fixture *f, const size_t *seglens, size_t nseglens) {
    double r[8];
    size_t nr = pick_ranges(f, r, 8);
    check_these_ranges(f, r, nr, seglens, nseglens);
}

static void check_topk_seglen(fixture *f, size_t k, size_t seglen) {
    tsm_discord want[16], got[16];
    assert_true(k <= 16);
    size_t nwant = ref_topk_discords(f->ref_dist, f->ref_index, f->N, f->excl, k, want);
    size_t ngot = 0;
    tsm_status st = tsm_discords_topk(f->ctx, f->stats, f->excl, k, seglen, got, &ngot, NULL);
    if (st != TSM_OK)
        fail_msg("seed %llu: tsm_discords_topk: %s", (unsigned long long)tu_seed,
                 tsm_ctx_error(f->ctx));
    tu_check_topk_discords(f->t, f->m, f->excl, f->ref_dist, f->N, want, nwant, got, ngot);
}

static void check_topk(fixture *f, size_t k) {
    check_topk_seglen(f, k, 0);
}

static void random_walk_case(uint64_t seed, size_t n, size_t m, size_t excl) {
    tu_case_seed(seed);
    fixture f;
    fixture_init(&f, tu_series(n), n, m, excl);
    const size_t seglens[] = {0, 7, 1, 32, f.N + 3};
    /* TSM_TEST_QUICK (compute-sanitizer runs): two segment lengths, one k */
    check_ranges(&f, seglens, tu_quick() ? 2 : sizeof seglens / sizeof seglens[0]);
    check_topk(&f, 3);
    if (!tu_quick()) {
        check_topk(&f, 1);
        check_topk(&f, 10);
    }
    fixture_done(&f);
}

static void test_random_walk_m3(void **state) {
    (void)state;
    random_walk_case(101, 300, 3, 3);
    random_walk_case(102, 1000, 3, 3);
}

static void test_random_walk_m8(void **state) {
    (void)state;
    random_walk_case(201, 777, 8, 8);
    random_walk_case(202, 1500, 8, 8);
}

static void test_random_walk_m64(void **state) {
    (void)state;
    random_walk_case(301, 1200, 64, 64);
}

static void test_random_walk_m257(void **state) {
    (void)state;
    random_walk_case(401, 1400, 257, 257);
}

static void test_excl_not_m(void **state) {
    (void)state;
    random_walk_case(501, 600, 16, 1);
    random_walk_case(502, 600, 16, 8);
    random_walk_case(503, 600, 16, 32);
}

/* Planted anomalies: the top discords must be where they were planted. */
static void test_planted_anomalies(void **state) {
    (void)state;
    tu_case_seed(601);
    const size_t n = 3000, m = 50;
    double *t = tu_series(n);
    const size_t at[] = {700, 2200};
    for (size_t q = 0; q < 2; q++)
        tu_plant_anomaly(t, at[q], m, 25.0);
    fixture f;
    fixture_init(&f, t, n, m, m);
    tsm_discord got[2];
    size_t ngot = 0;
    assert_int_equal(tsm_discords_topk(f.ctx, f.stats, m, 2, 0, got, &ngot, NULL), TSM_OK);
    assert_int_equal(ngot, 2);
    for (size_t q = 0; q < 2; q++) {
        int near = 0;
        for (size_t p = 0; p < 2; p++)
            near |= labs((long)got[q].index - (long)at[p]) < (long)m;
        if (!near)
            fail_msg("seed %llu: discord %lld is not at a planted anomaly",
                     (unsigned long long)tu_seed, (long long)got[q].index);
    }
    check_topk(&f, 2);
    const size_t seglens[] = {0, 64};
    check_ranges(&f, seglens, 2);
    fixture_done(&f);
}

/* Constant plateaus (equal and distinct values) inside a random walk. */
static void test_constant_stretches(void **state) {
    (void)state;
    tu_case_seed(701);
    const size_t n = 900, m = 16;
    double *t = tu_series(n);
    tu_fill(t, 100, 60, 5.0);
    tu_fill(t, 400, 40, 5.0);
    tu_fill(t, 700, 30, -2.0);
    fixture f;
    fixture_init(&f, t, n, m, m);
    const size_t seglens[] = {0, 9};
    check_ranges(&f, seglens, 2);
    check_topk(&f, 5);
    fixture_done(&f);
}

/* NaN and infinite stretches: such subsequences are never discords or
 * neighbours. */
static void test_nonfinite_stretches(void **state) {
    (void)state;
    tu_case_seed(801);
    const size_t n = 1000, m = 20;
    double *t = tu_series(n);
    tu_fill(t, 50, 5, NAN);
    tu_fill(t, 500, 1, INFINITY);
    tu_fill(t, 800, 30, -INFINITY);
    t[n - 1] = NAN;
    fixture f;
    fixture_init(&f, t, n, m, m);
    const size_t seglens[] = {0, 13};
    check_ranges(&f, seglens, 2);
    check_topk(&f, 4);
    tsm_discord *got = NULL;
    size_t ngot = 0;
    assert_int_equal(tsm_pd3_range(f.ctx, f.stats, m, 0.0, 0, &got, &ngot, NULL), TSM_OK);
    for (size_t q = 0; q < ngot; q++) {
        assert_int_not_equal(f.stats->kind[got[q].index], TSM_SUB_NONFINITE);
        assert_int_not_equal(f.stats->kind[got[q].neighbor], TSM_SUB_NONFINITE);
    }
    free(got);
    fixture_done(&f);
}

/* Exact ties: two plateaus joined by one step. The m - 1 windows across the
 * step are normal, mutual self-matches, so their only neighbours are constants
 * at d = sqrt(m) exactly; every constant has a constant neighbour at d = 0. The
 * tie rule fixes the answer exactly: the first window across the step, then the
 * first constant, each with the smallest eligible neighbour. */
static void test_exact_ties(void **state) {
    (void)state;
    tu_case_seed(901);
    const size_t m = 8, A = 40, n = 100;
    double *t = malloc(n * sizeof *t);
    tu_fill(t, 0, A, 0.0);
    tu_fill(t, A, n - A, 1.0);
    fixture f;
    fixture_init(&f, t, n, m, m);
    tsm_discord got[3];
    size_t ngot = 0;
    assert_int_equal(tsm_discords_topk(f.ctx, f.stats, m, 3, 0, got, &ngot, NULL), TSM_OK);
    assert_int_equal(ngot, 3);
    assert_int_equal(got[0].index, A - m + 1);
    assert_true(got[0].distance == sqrt((double)m));
    assert_int_equal(got[0].neighbor, 0);
    assert_int_equal(got[1].index, 0);
    assert_true(got[1].distance == 0.0);
    assert_int_equal(got[1].neighbor, m); /* the first constant at distance >= excl */
    assert_int_equal(got[2].index, m);
    assert_int_equal(got[2].neighbor, 0);
    check_topk(&f, 3);
    fixture_done(&f);
}

/* Mutual nearest neighbours have the same nn mathematically, but each computes it
 * through different rounding. On a periodic background (every window has a near
 * exact repeat) a noise burst and a noisy copy of it far away give the top two
 * discords, a mutual pair. The smaller index must win, as in the reference (whose
 * distance is exactly symmetric), on every backend and segment length. */
static void test_mutual_pair_tie(void **state) {
    (void)state;
    tu_case_seed(1303); /* a case whose rounding puts the larger index first */
    const size_t n = 4000, m = 40;
    double *t = malloc(n * sizeof *t);
    for (size_t k = 0; k < n; k++)
        t[k] = sin(6.283185307179586 * (double)k / 50.0);
    for (size_t k = 0; k < m; k++)
        t[1000 + k] += tu_normal();
    for (size_t k = 0; k < m; k++)
        t[3000 + k] = t[1000 + k] + 0.3 * tu_normal();
    fixture f;
    fixture_init(&f, t, n, m, m);
    tsm_discord want[2], got[2];
    size_t nwant = ref_topk_discords(f.ref_dist, f.ref_index, f.N, m, 2, want), ngot = 0;
    assert_int_equal(nwant, 2);
    int64_t i = want[0].index, j = want[0].neighbor;
    if (f.ref_index[j] != i || f.ref_dist[j] != f.ref_dist[i])
        fail_msg("seed %llu: premise: %lld and %lld are not mutual neighbours",
                 (unsigned long long)tu_seed, (long long)i, (long long)j);
    assert_true(i < j);
    const size_t seglens[] = {0, 64};
    for (size_t q = 0; q < 2; q++) {
        assert_int_equal(tsm_discords_topk(f.ctx, f.stats, m, 2, seglens[q], got, &ngot, NULL),
                         TSM_OK);
        assert_int_equal(ngot, 2);
        assert_int_equal(got[0].index, i);
        assert_int_equal(got[0].neighbor, j);
        assert_int_equal(got[1].index, j);
    }
    fixture_done(&f);
}

/* n = m, n = m + 1 and n < 2m: no subsequence has a non-self-match. */
static void test_no_pairs(void **state) {
    (void)state;
    const size_t m = 32, sizes[] = {32, 33, 50, 63};
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++) {
        tu_case_seed(1000 + q);
        fixture f;
        fixture_init(&f, tu_series(sizes[q]), sizes[q], m, m);
        tsm_discord *got = NULL, top[2];
        size_t ngot = 1;
        assert_int_equal(tsm_pd3_range(f.ctx, f.stats, m, 0.0, 0, &got, &ngot, NULL), TSM_OK);
        assert_int_equal(ngot, 0);
        assert_null(got);
        ngot = 1;
        assert_int_equal(tsm_discords_topk(f.ctx, f.stats, m, 2, 0, top, &ngot, NULL), TSM_OK);
        assert_int_equal(ngot, 0);
        fixture_done(&f);
    }
}

/* The smallest series that has pairs: n = 2m, exactly one pair. */
static void test_one_pair(void **state) {
    (void)state;
    tu_case_seed(1101);
    fixture f;
    fixture_init(&f, tu_series(16), 16, 8, 8);
    const size_t seglens[] = {0, 1, 2};
    check_ranges(&f, seglens, 3);
    check_topk(&f, 2);
    fixture_done(&f);
}

/* Many segments, all candidates refuted in the first rows (large r) or none
 * refuted (r = 0), with one and two threads giving identical answers. */
static void test_threads_agree(void **state) {
    (void)state;
    tu_case_seed(1201);
    const size_t n = 5000, m = 32;
    double *t = tu_series(n);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    const double ranges[] = {0.0, 3.0, 100.0};
    for (size_t q = 0; q < 3; q++) {
        tsm_discord *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        tsm_ctx_set_threads(ctx, 1);
        assert_int_equal(tsm_pd3_range(ctx, s, m, ranges[q], 16, &a, &na, NULL), TSM_OK);
        tsm_ctx_set_threads(ctx, 2);
        assert_int_equal(tsm_pd3_range(ctx, s, m, ranges[q], 16, &b, &nb, NULL), TSM_OK);
        assert_int_equal(na, nb);
        if (na)
            assert_memory_equal(a, b, na * sizeof *a);
        if (ranges[q] == 0.0)
            assert_int_equal(na, s->N); /* nothing refuted: every subsequence */
        if (ranges[q] == 100.0)
            assert_int_equal(na, 0); /* above the largest possible distance */
        free(a), free(b);
    }
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* Segment edges (the GPU's padding and masking of formula (8)): N not a
 * multiple of seglen, N smaller than one segment, segments longer than the
 * GPU's block, and the warp-sized segment lengths around them. */
static void test_segment_edges(void **state) {
    (void)state;
    tu_case_seed(1301);
    fixture f;
    fixture_init(&f, tu_series(2000), 2000, 16, 16); /* N = 1985 */
    const size_t seglens[] = {0, 33, 31, 32, 100, 1000, 1024, 1500, 4096};
    check_ranges(&f, seglens, tu_quick() ? 2 : sizeof seglens / sizeof seglens[0]);
    check_topk_seglen(&f, 10, 33);
    check_topk_seglen(&f, 10, 4096);
    fixture_done(&f);

    tu_case_seed(1302);
    fixture_init(&f, tu_series(300), 300, 10, 10); /* N = 291 < the default 512 */
    const size_t one[] = {0, 512, 64};
    check_ranges(&f, one, 3);
    check_topk(&f, 5);
    fixture_done(&f);
}

/* m longer than half a segment: a candidate's first non-self-match lies beyond
 * the next segment, and the shared series windows are longer than the segment.
 */
static void test_long_m(void **state) {
    (void)state;
    tu_case_seed(1401);
    fixture f;
    fixture_init(&f, tu_series(1500), 1500, 300, 300); /* m > 512 / 2 */
    const size_t seglens[] = {0, 64, 300};
    check_ranges(&f, seglens, 3);
    check_topk(&f, 3);
    fixture_done(&f);
}

/* m so long that the GPU's series windows no longer fit in shared memory (the
 * chain starts then read global memory). Reference: the CPU matrix profile. */
static void test_very_long_m(void **state) {
    (void)state;
    tu_case_seed(1451);
    const size_t n = 30000, m = 14000; /* m > 12600: past 227 KB of shared memory */
    fixture f;
    fixture_init_mp(&f, tu_series(n), n, m, m);
    const size_t seglens[] = {1024, 0};
    check_ranges(&f, seglens, tu_quick() ? 1 : 2);
    check_topk(&f, 2);
    fixture_done(&f);
}

/* Thousands of segments (n = 200000, seglen 64: 3125 blocks on the GPU) against
 * the CPU matrix profile. TSM_TEST_QUICK shrinks the series (sanitizer runs).
 */
static void test_many_segments(void **state) {
    (void)state;
    tu_case_seed(1501);
    const size_t n = tu_quick() ? 20000 : 200000, m = 32;
    double *t = tu_series(n);
    tu_plant_anomaly(t, n / 4, m, 10.0);
    tu_plant_anomaly(t, n / 2, m, 10.0);
    fixture f;
    fixture_init_mp(&f, t, n, m, m);
    /* above every nn and the top quantiles of pick_ranges (0 and the low
     * quantiles would make the CPU backend scan all N^2 pairs) */
    double r[8], ranges[3];
    size_t nr = pick_ranges(&f, r, 8), nk = 0;
    for (size_t q = 0; q < nr && nk < 3; q++)
        if (q != 1)
            ranges[nk++] = r[q];
    const size_t seglens[] = {64};
    check_these_ranges(&f, ranges, nk, seglens, 1);
    check_topk_seglen(&f, 10, 64);
    fixture_done(&f);
}

/* A range above every possible distance (2 sqrt(m)): every candidate falls at
 * its first pair, so every block stops after its first chunk and nothing is
 * refined. */
static void test_all_dropped_at_once(void **state) {
    (void)state;
    tu_case_seed(1601);
    const size_t n = 20000, m = 32;
    fixture f;
    f.ctx = tu_ctx();
    f.t = tu_series(n), f.ref_dist = NULL, f.ref_index = NULL;
    assert_int_equal(tsm_stats_new(f.ctx, f.t, n, m, &f.stats), TSM_OK);
    const size_t N = n - m + 1, seglens[] = {0, 64};
    for (size_t q = 0; q < 2; q++) {
        tsm_discord *got = NULL;
        size_t ngot = 1;
        tsm_pd3_stats ctr = {0};
        assert_int_equal(tsm_pd3_range(f.ctx, f.stats, m, 2.0 * sqrt((double)m) + 0.5, seglens[q],
                                       &got, &ngot, &ctr),
                         TSM_OK);
        assert_int_equal(ngot, 0);
        assert_null(got);
        assert_int_equal(ctr.candidates, 0);
        assert_int_equal(ctr.passes, 1);
        /* O(N seglen) pairs (a chunk per block), not O(N^2) */
        assert_true(ctr.distances > 0);
        assert_true(ctr.distances <= (uint64_t)N * 1024);
    }
    fixture_done(&f);
}

/* r = 0: no candidate is ever dropped, every subsequence with a neighbour is a
 * discord with its exact nn (also across constant and non-finite stretches). */
static void test_none_dropped(void **state) {
    (void)state;
    tu_case_seed(1701);
    const size_t n = 3000, m = 16;
    double *t = tu_series(n);
    tu_fill(t, 1000, 40, 3.0);
    tu_fill(t, 2000, 3, NAN);
    fixture f;
    fixture_init(&f, t, n, m, m);
    const double r0 = 0.0;
    const size_t seglens[] = {0, 64, 96};
    check_these_ranges(&f, &r0, 1, seglens, 3);
    tsm_discord *got = NULL;
    size_t ngot = 0, want = 0;
    tsm_pd3_stats ctr = {0};
    assert_int_equal(tsm_pd3_range(f.ctx, f.stats, m, 0.0, 0, &got, &ngot, &ctr), TSM_OK);
    for (size_t i = 0; i < f.N; i++)
        want += isfinite(f.ref_dist[i]);
    assert_int_equal(ngot, want);
    assert_int_equal(ctr.candidates, f.N - f.stats->n_nonfinite);
    free(got);
    fixture_done(&f);
}

static void test_invalid_arguments(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    double t[40] = {0};
    for (size_t i = 0; i < 40; i++)
        t[i] = sin((double)i);
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, 40, 2, &s), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "m = 2"));
    assert_int_equal(tsm_stats_new(ctx, t, 40, 41, &s), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "longer than the series"));
    assert_null(s);
    assert_int_equal(tsm_stats_new(ctx, t, 40, 8, &s), TSM_OK);
    tsm_discord *got = NULL, top[1];
    size_t n = 0;
    assert_int_equal(tsm_pd3_range(ctx, s, 0, 1.0, 0, &got, &n, NULL), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "excl"));
    assert_int_equal(tsm_pd3_range(ctx, s, 8, -1.0, 0, &got, &n, NULL), TSM_EINVAL);
    assert_int_equal(tsm_pd3_range(ctx, s, 8, NAN, 0, &got, &n, NULL), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "range r"));
    assert_int_equal(tsm_discords_topk(ctx, s, 8, 0, 0, top, &n, NULL), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "k must be"));
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
}

/* The exchange of a simulated several-part run, parts run one after the other: in
 * the first round each part ANDs its Neighbor bitmap into acc; in the second (phase 1
 * is deterministic, so it finds the same bitmap) each part gets the full AND. */
typedef struct {
    uint8_t *acc;
    int round;
} part_sim;

static int sim_sync(void *user, uint8_t *neighbor, size_t N) {
    part_sim *p = user;
    for (size_t i = 0; i < N; i++) {
        if (p->round == 0)
            p->acc[i] &= neighbor[i];
        else
            neighbor[i] = p->acc[i];
    }
    return 0;
}

/* Orders discords by index. */
static int by_index(const void *x, const void *y) {
    const tsm_discord *a = x, *b = y;
    return (a->index > b->index) - (a->index < b->index);
}

/* tsm_pd3_range in 2, 3 and 5 parts (segments dealt round-robin, the Neighbor bitmap
 * exchanged between the phases; on CUDA the device's segments, the bitmap through the
 * host): the union of the parts' discords is the one-part result bit for bit, on planted anomalies
 * with NaN and constant stretches, for a range that keeps a few discords and one that keeps many.
 */
static void test_parts_union(void **state) {
    (void)state;
    tu_case_seed(1301);
    const size_t n = 4000, m = 24, seglen = 64;
    double *t = tu_series(n);
    tu_plant_anomaly(t, 900, m, 12.0);
    tu_plant_anomaly(t, 2500, m, 9.0);
    tu_fill(t, 1500, 40, 2.0);
    tu_fill(t, 1700, 40, 2.0);
    tu_fill(t, 3100, 9, NAN);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    part_sim sim = {malloc(s->N), 0};
    tsm_discord *all = malloc(s->N * sizeof *all);
    assert_true(sim.acc && all);
    const double ranges[] = {4.0, 2.5};
    for (size_t q = 0; q < 2; q++) {
        tsm_discord *want = NULL;
        size_t nwant = 0;
        assert_int_equal(tsm_pd3_range(ctx, s, m, ranges[q], seglen, &want, &nwant, NULL), TSM_OK);
        assert_true(nwant > 0 && nwant < s->N); /* a real selection */
        for (size_t parts = 2; parts <= 5; parts += parts == 3 ? 2 : 1) {
            tsm_discord *got = NULL;
            size_t ngot = 0, nall = 0;
            memset(sim.acc, 1, s->N);
            for (sim.round = 0; sim.round < 2; sim.round++)
                for (size_t part = 0; part < parts; part++) {
                    assert_int_equal(tsm_pd3_range_part(ctx, s, m, ranges[q], seglen, part, parts,
                                                        sim_sync, &sim, &got, &ngot, NULL),
                                     TSM_OK);
                    if (sim.round == 1 && ngot)
                        memcpy(all + nall, got, ngot * sizeof *got), nall += ngot;
                    free(got);
                }
            qsort(all, nall, sizeof *all, by_index);
            assert_int_equal(nall, nwant);
            if (nall)
                assert_memory_equal(all, want, nall * sizeof *all);
        }
        free(want);
    }
    tsm_discord *got = NULL;
    size_t ngot = 0;
    assert_int_equal(
        tsm_pd3_range_part(ctx, s, m, 1.0, seglen, 2, 2, sim_sync, &sim, &got, &ngot, NULL),
        TSM_EINVAL);
    free(sim.acc), free(all);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walk_m3),
        cmocka_unit_test(test_parts_union),
        cmocka_unit_test(test_random_walk_m8),
        cmocka_unit_test(test_random_walk_m64),
        cmocka_unit_test(test_random_walk_m257),
        cmocka_unit_test(test_excl_not_m),
        cmocka_unit_test(test_planted_anomalies),
        cmocka_unit_test(test_constant_stretches),
        cmocka_unit_test(test_nonfinite_stretches),
        cmocka_unit_test(test_exact_ties),
        cmocka_unit_test(test_mutual_pair_tie),
        cmocka_unit_test(test_no_pairs),
        cmocka_unit_test(test_one_pair),
        cmocka_unit_test(test_threads_agree),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_segment_edges),
        cmocka_unit_test(test_long_m),
        cmocka_unit_test(test_very_long_m),
        cmocka_unit_test(test_many_segments),
        cmocka_unit_test(test_all_dropped_at_once),
        cmocka_unit_test(test_none_dropped),
    };
    /* TSM_TEST_FILTER: run only the cases whose names match (cmocka wildcards * ?),
     * e.g. one case at a time under compute-sanitizer racecheck */
    const char *filter = getenv("TSM_TEST_FILTER");
    if (filter && *filter)
        cmocka_set_test_filter(filter);
    return TU_RUN_GROUP("pd3", tests, NULL, NULL);
}
