/* SPDX-License-Identifier: Apache-2.0 */
/* mp_test.c - the matrix profile (kernels/mp) against the brute-force reference.
 *
 * Every case computes the two-sided and the left profile with tsm_mp and checks them
 * with tu_check_profile (squared distances within TU_D2_TOL(m), neighbours exact or
 * tied within it, NaN/+inf conventions exact). Sizes are chosen so the O(N^2 m)
 * reference stays fast; larger cases (many tiles, work items and refreshes of both
 * backends, scattered NaN and plateaus) are checked against an O(N^2) scan over the QT
 * recurrence of dot.h instead. TSM_TEST_QUICK=1 shrinks those (compute-sanitizer). */
#include "testutil.h"

#include "distance.h"
#include "dot.h"
#include "mp.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Profiles of one run: two-sided (d, di) and left (l, li), N entries each. */
typedef struct {
    size_t N;
    double *d, *l;
    int64_t *di, *li;
} profiles;

static profiles prof_new(size_t N) {
    profiles p = {N, malloc(N * sizeof(double)), malloc(N * sizeof(double)),
                  malloc(N * sizeof(int64_t)), malloc(N * sizeof(int64_t))};
    assert_true(p.d && p.l && p.di && p.li);
    return p;
}

static void prof_free(profiles *p) {
    free(p->d), free(p->l), free(p->di), free(p->li);
}

/* Runs tsm_mp on t with the given thread count (0 = OpenMP default). */
static profiles run_mp(const double *t, size_t n, size_t m, size_t excl, int threads) {
    tsm_ctx *ctx = tu_ctx();
    tsm_ctx_set_threads(ctx, threads);
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    profiles p = prof_new(s->N);
    tsm_status st = tsm_mp(ctx, s, excl, p.d, p.di, p.l, p.li);
    if (st != TSM_OK)
        fail_msg("seed %llu: tsm_mp: %s", (unsigned long long)tu_seed, tsm_ctx_error(ctx));
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    return p;
}

/* Both profiles of t against the brute-force reference. O(N^2 m). */
static void check_series(const double *t, size_t n, size_t m, size_t excl) {
    size_t N = n - m + 1;
    profiles got = run_mp(t, n, m, excl, 0), want = prof_new(N);
    ref_profile(t, n, m, excl, 0, want.d, want.di);
    ref_profile(t, n, m, excl, 1, want.l, want.li);
    tu_check_profile(t, n, m, excl, got.d, got.di, want.d, 0);
    tu_check_profile(t, n, m, excl, got.l, got.li, want.l, 1);
    prof_free(&got);
    prof_free(&want);
}

/* A random walk of n values for the given seed, checked with exclusion excl. */
static void check_walk(uint64_t seed, size_t n, size_t m, size_t excl) {
    tu_case_seed(seed);
    double *t = tu_series(n);
    check_series(t, n, m, excl);
    free(t);
}

/* Random walks over lengths m = 3, 8, 64, 257, at sizes that are and are not
 * multiples of the tiles, down to n = m (one subsequence) and n < 2m. */
static void test_random_walks(void **state) {
    (void)state;
    static const struct {
        size_t n, m;
    } cases[] = {
        {3, 3},     {4, 3},     {5, 3},     {7, 3},     {40, 3},    {1000, 3},
        {8, 8},     {9, 8},     {15, 8},    {16, 8},    {41, 8},    {257, 8},
        {2600, 8},  {64, 64},   {65, 64},   {127, 64},  {128, 64},  {200, 64},
        {1100, 64}, {257, 257}, {258, 257}, {400, 257}, {513, 257}, {900, 257},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_walk(1000 + c, cases[c].n, cases[c].m, cases[c].m);
}

/* Exclusion zones other than m: 1 (only the trivial match excluded), m/2, 2m. */
static void test_exclusion_zones(void **state) {
    (void)state;
    static const size_t ms[] = {3, 8, 64};
    for (size_t q = 0; q < 3; q++) {
        size_t m = ms[q], n = m == 64 ? 700 : 500;
        check_walk(2000 + q, n, m, 1);
        check_walk(2010 + q, n, m, m / 2 > 0 ? m / 2 : 1);
        check_walk(2020 + q, n, m, 2 * m);
        check_walk(2030 + q, n, m, n - m); /* exactly one non-self-match pair */
        check_walk(2040 + q, n, m, n);     /* none at all: every nn is +inf */
    }
}

/* Planted anomalies (sine bursts) in a random walk, at the ends and inside. */
static void test_planted_anomalies(void **state) {
    (void)state;
    tu_case_seed(3000);
    size_t n = 1500, m = 32;
    double *t = tu_series(n);
    tu_plant_anomaly(t, 0, 40, 5.0);
    tu_plant_anomaly(t, 700, 64, 8.0);
    tu_plant_anomaly(t, n - 50, 50, 3.0);
    check_series(t, n, m, m);
    check_series(t, n, m, m / 2);
    free(t);
}

/* Constant stretches: several plateaus, two of them at the same value, so that
 * constants have constant neighbours (d2 = 0) and normals can have constant ones. */
static void test_constant_stretches(void **state) {
    (void)state;
    tu_case_seed(4000);
    size_t n = 1200, m = 16;
    double *t = tu_series(n);
    tu_fill(t, 0, 20, 1.5);   /* at the start */
    tu_fill(t, 100, 60, 3.0); /* two plateaus at 3.0 */
    tu_fill(t, 400, 40, 3.0);
    tu_fill(t, 600, 17, -2.0);   /* two constant subsequences only, overlapping */
    tu_fill(t, n - 30, 30, 7.0); /* at the end */
    check_series(t, n, m, m);
    check_series(t, n, m, 1);
    check_series(t, n, m, 3 * m);
    free(t);
}

/* White noise with plateaus: normal subsequences are far from each other, so the
 * convention d2 = m to a constant often beats every normal neighbour. */
static void test_constants_beat_noise(void **state) {
    (void)state;
    tu_case_seed(4100);
    size_t n = 300, m = 24;
    double *t = malloc(n * sizeof *t);
    assert_non_null(t);
    for (size_t k = 0; k < n; k++)
        t[k] = tu_normal();
    tu_fill(t, 150, 30, 0.25);
    tu_fill(t, 250, 26, 0.25);
    size_t N = n - m + 1, hits = 0;
    for (size_t i = 0; i < N; i++) { /* the case must exercise the convention */
        double best = INFINITY;
        int64_t arg = -1;
        for (size_t j = 0; j < N; j++) {
            double d2 = tsm_non_self(i, j, m) ? ref_d2(t, m, i, j) : NAN;
            if (d2 < best)
                best = d2, arg = (int64_t)j;
        }
        hits += ref_kind(t, m, i) == TSM_SUB_NORMAL && arg >= 0 &&
                ref_kind(t, m, (size_t)arg) == TSM_SUB_CONSTANT;
    }
    assert_true(hits > 0);
    check_series(t, n, m, m);
    free(t);
}

/* NaN, +inf and -inf stretches: those subsequences get NAN/-1 and are nobody's
 * neighbour; the recurrences must stay finite across them. */
static void test_nonfinite_stretches(void **state) {
    (void)state;
    tu_case_seed(5000);
    size_t n = 1300, m = 20;
    double *t = tu_series(n);
    tu_fill(t, 0, 3, NAN);
    tu_fill(t, 200, 1, NAN);
    tu_fill(t, 500, 50, NAN);
    tu_fill(t, 800, 2, INFINITY);
    tu_fill(t, 900, 1, -INFINITY);
    tu_fill(t, 1000, 40, 2.0); /* a plateau among them */
    tu_fill(t, n - 1, 1, NAN);
    check_series(t, n, m, m);
    check_series(t, n, m, 2 * m);
    free(t);
}

/* Degenerate series: all constant (every nn is 0 to the first eligible constant),
 * all NaN, and NaN everywhere but one finite subsequence. */
static void test_degenerate_series(void **state) {
    (void)state;
    size_t n = 300, m = 10;
    double *t = malloc(n * sizeof *t);
    assert_non_null(t);
    tu_case_seed(6000);
    tu_fill(t, 0, n, 4.0);
    check_series(t, n, m, m);
    check_series(t, n, m, 1);
    profiles p = run_mp(t, n, m, m, 0);
    for (size_t i = 0; i < p.N; i++) { /* exact conventions, not within tolerance */
        assert_true(p.d[i] == 0.0);
        assert_int_equal(p.di[i], i >= m ? 0 : (int64_t)(i + m));
    }
    prof_free(&p);

    tu_fill(t, 0, n, NAN);
    check_series(t, n, m, m);
    p = run_mp(t, n, m, m, 0);
    for (size_t i = 0; i < p.N; i++)
        assert_true(isnan(p.d[i]) && p.di[i] == -1 && isnan(p.l[i]) && p.li[i] == -1);
    prof_free(&p);

    tu_fill(t, 100, m, 1.0);
    t[105] = 2.0;
    check_series(t, n, m, m);
    free(t);
}

/* A straightforward O(N^2) scan over the upper triangle with the QT row recurrence of
 * dot.h (refreshed exactly every 256 rows) and tsm_d2 of distance.h: the reference
 * for series too long for ref_profile. */
static void scan_profiles(const tsm_stats *s, size_t excl, profiles *p) {
    size_t N = s->N;
    double *bd = malloc(N * sizeof *bd), *bl = malloc(N * sizeof *bl);
    double *row = malloc(N * sizeof *row), *prev = malloc(N * sizeof *prev);
    assert_true(bd && bl && row && prev);
    for (size_t i = 0; i < N; i++)
        bd[i] = bl[i] = INFINITY, p->di[i] = p->li[i] = -1;
    for (size_t i = 0; i + excl < N; i++) {
        size_t j0 = i + excl, len = N - j0;
        if (i % 256 == 0)
            tsm_qt_row_direct(s, i, j0, len, row + j0);
        else
            tsm_qt_row_next(s, i, j0, len, prev + j0 - 1, row + j0);
        for (size_t j = j0; j < N; j++) {
            double d2 = tsm_d2(s, i, j, row[j]);
            if (d2 < bd[i]) /* right neighbour of i: j increasing, first wins */
                bd[i] = d2, p->di[i] = (int64_t)j;
            if (d2 < bl[j]) /* left neighbour of j: i increasing, first wins */
                bl[j] = d2, p->li[j] = (int64_t)i;
        }
        double *swap = prev;
        prev = row, row = swap;
    }
    for (size_t i = 0; i < N; i++) {
        if (bl[i] <= bd[i]) /* left indices are smaller: left wins ties */
            bd[i] = bl[i], p->di[i] = p->li[i];
        int bad = s->kind[i] == TSM_SUB_NONFINITE;
        p->d[i] = bad ? NAN : sqrt(bd[i]);
        p->l[i] = bad ? NAN : sqrt(bl[i]);
    }
    free(bd), free(bl), free(row), free(prev);
}

/* Both profiles of t from tsm_mp against scan_profiles. O(N^2). */
static void check_against_scan(const double *t, size_t n, size_t m, size_t excl) {
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    profiles want = prof_new(s->N);
    scan_profiles(s, excl, &want);
    profiles got = run_mp(t, n, m, excl, 0);
    tu_check_profile(t, n, m, excl, got.d, got.di, want.d, 0);
    tu_check_profile(t, n, m, excl, got.l, got.li, want.l, 1);
    prof_free(&got);
    prof_free(&want);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
}

/* n = 2^15 (2^13 quick) with anomalies, plateaus and NaN: many tiles of diagonals and
 * rows, work items and cov refreshes, against the O(N^2) scan. */
static void test_large_against_scan(void **state) {
    (void)state;
    tu_case_seed(7000);
    size_t n = tu_quick() ? 1u << 13 : 1u << 15, m = 100, excl = m;
    double *t = tu_series(n);
    tu_plant_anomaly(t, n * 5000 / 32768, 120, 6.0);
    tu_plant_anomaly(t, n * 30000 / 32768, 200, 4.0);
    tu_fill(t, n * 9000 / 32768, 300, 1.0);
    tu_fill(t, n * 20000 / 32768, 150, 1.0);
    tu_fill(t, n * 15000 / 32768, 80, NAN);
    check_against_scan(t, n, m, excl);
    free(t);
}

/* Numbers of diagonals N - excl at the edges of the work grids: CUDA bands of 1024
 * diagonals, work items of 2048 rows, sub-tiles of 256, register blocks of 4; CPU
 * tiles of 48 x 4096. Against the brute-force reference. */
static void test_grid_edges(void **state) {
    (void)state;
    static const size_t spans[] = {1, 4, 5, 48, 1023, 1024, 1025, 2047, 2048, 2051, 3 * 1024 + 7};
    const size_t m = 12, excl = 20;
    for (size_t c = 0; c < sizeof spans / sizeof spans[0]; c++) {
        if (tu_quick() && spans[c] > 2100)
            continue;
        check_walk(7500 + c, spans[c] + excl + m - 1, m, excl);
    }
}

/* A long series with many short NaN gaps, single infinities and plateaus scattered
 * over it, an exclusion zone that is not a multiple of anything, and a period that
 * repeats exactly (ties at correlation 1), against the O(N^2) scan. */
static void test_scattered_gaps(void **state) {
    (void)state;
    tu_case_seed(7100);
    size_t n = tu_quick() ? 6000 : 40000, m = 37, excl = 53;
    double *t = tu_series(n);
    for (size_t k = 0; k < n / 250; k++) {
        size_t at = (size_t)(tu_uniform() * (double)(n - 60));
        switch (k % 4) {
        case 0: tu_fill(t, at, 1 + k % 3, NAN); break;
        case 1: tu_fill(t, at, 1, k % 8 == 1 ? INFINITY : -INFINITY); break;
        case 2: tu_fill(t, at, 30 + k % 20, (double)(k % 5)); break;
        default: tu_plant_anomaly(t, at, 40, 3.0); break;
        }
    }
    for (size_t k = n / 2; k < n / 2 + 400; k++) /* an exact repeat 300 later */
        t[k + 300] = t[k];
    check_against_scan(t, n, m, excl);
    free(t);
}

/* 1, 2 and 3 threads give bitwise identical profiles (ties and merge order), and
 * asking for one profile gives the same as asking for both. */
static void test_threads_identical(void **state) {
    (void)state;
    tu_case_seed(8000);
    size_t n = tu_quick() ? 4000 : 12000, m = 50, q = n / 12;
    double *t = tu_series(n);
    tu_fill(t, 3 * q, 200, 0.5);
    tu_fill(t, 6 * q, 100, 0.5);
    tu_fill(t, 8 * q, 20, NAN);
    for (size_t k = 10 * q; k < 11 * q; k++) /* an exactly repeated pattern: ties */
        t[k] = t[k - 100];
    profiles a = run_mp(t, n, m, m, 1);
    for (int threads = 2; threads <= 3; threads++) {
        profiles b = run_mp(t, n, m, m, threads);
        size_t N = a.N;
        assert_memory_equal(a.d, b.d, N * sizeof(double));
        assert_memory_equal(a.l, b.l, N * sizeof(double));
        assert_memory_equal(a.di, b.di, N * sizeof(int64_t));
        assert_memory_equal(a.li, b.li, N * sizeof(int64_t));
        prof_free(&b);
    }

    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    profiles c = prof_new(s->N);
    assert_int_equal(tsm_mp(ctx, s, m, c.d, c.di, NULL, NULL), TSM_OK);
    assert_int_equal(tsm_mp(ctx, s, m, NULL, NULL, c.l, c.li), TSM_OK);
    assert_memory_equal(a.d, c.d, a.N * sizeof(double));
    assert_memory_equal(a.di, c.di, a.N * sizeof(int64_t));
    assert_memory_equal(a.l, c.l, a.N * sizeof(double));
    assert_memory_equal(a.li, c.li, a.N * sizeof(int64_t));
    prof_free(&c);
    prof_free(&a);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* Exact ties: a series of period P made of small integers summing to zero, with m a
 * power of two, keeps every statistic and covariance exact, so the congruent
 * subsequences i + qP are all at the same distance from i. The neighbour must be
 * the smallest such index (DESIGN 3), for any thread count: this checks the tie
 * rules of the lanes, tiles and merges exactly, not within a tolerance. */
static void test_exact_ties(void **state) {
    (void)state;
    static const size_t periods[] = {12, 45};
    for (size_t q = 0; q < 2; q++) {
        tu_case_seed(9000 + q);
        size_t P = periods[q], n = P * (tu_quick() ? 40 : 120), m = 16, excl = m;
        double *t = malloc(n * sizeof *t), sum = 0.0;
        assert_non_null(t);
        for (size_t k = 0; k + 1 < P; k++)
            sum += t[k] = (double)(int)(7.0 * tu_uniform()) - 3.0;
        t[P - 1] = -sum;
        for (size_t k = P; k < n; k++)
            t[k] = t[k - P];
        for (int threads = 1; threads <= 2; threads++) {
            profiles p = run_mp(t, n, m, excl, threads);
            for (size_t i = 0; i < p.N; i++) {
                size_t r = i % P, ahead = i + (excl + P - 1) / P * P;
                int64_t left = i - r >= excl ? (int64_t)r : -1;
                int64_t both = left >= 0 ? left : (ahead < p.N ? (int64_t)ahead : -1);
                if (both >= 0 && (p.di[i] != both || !(p.d[i] <= 1e-6)))
                    fail_msg("seed %llu: P=%zu threads=%d: nn of %zu is %lld at %g, want %lld",
                             (unsigned long long)tu_seed, P, threads, i, (long long)p.di[i], p.d[i],
                             (long long)both);
                if (left >= 0 && (p.li[i] != left || !(p.l[i] <= 1e-6)))
                    fail_msg("seed %llu: P=%zu threads=%d: lnn of %zu is %lld at %g, want %lld",
                             (unsigned long long)tu_seed, P, threads, i, (long long)p.li[i], p.l[i],
                             (long long)left);
            }
            prof_free(&p);
        }
        free(t);
    }
}

/* Invalid arguments fail with TSM_EINVAL and a message, never abort. */
static void test_invalid_arguments(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    double t[16] = {0};
    for (size_t k = 0; k < 16; k++)
        t[k] = (double)(k * k % 7);
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, 16, 2, &s), TSM_EINVAL); /* m < 3 */
    assert_null(s);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(tsm_stats_new(ctx, t, 16, 17, &s), TSM_EINVAL); /* m > n */
    assert_null(s);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);

    assert_int_equal(tsm_stats_new(ctx, t, 16, 4, &s), TSM_OK);
    double d[13], l[13];
    int64_t di[13], li[13];
    tsm_fail(ctx, TSM_OK, "%s", "");
    assert_int_equal(tsm_mp(ctx, s, 0, d, di, l, li), TSM_EINVAL); /* excl = 0 */
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    tsm_fail(ctx, TSM_OK, "%s", "");
    assert_int_equal(tsm_mp(ctx, s, 4, d, NULL, l, li), TSM_EINVAL); /* half a pair */
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(tsm_mp(ctx, NULL, 4, d, di, l, li), TSM_EINVAL);
    assert_int_equal(tsm_mp(ctx, s, 4, d, di, l, li), TSM_OK);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
}

/* tsm_mp assembled from tsm_mp_part over the bands cut into `parts` uneven ranges
 * (the first ones empty when there are more parts than bands), merged with
 * tsm_mp_beats and finished by tsm_mp_finish: what a distributed run does. */
static profiles run_parts(const tsm_stats *s, tsm_ctx *ctx, size_t excl, size_t parts) {
    const size_t N = s->N, nb = tsm_mp_bands(ctx, N, excl);
    double *lc = malloc(N * sizeof *lc), *rc = malloc(N * sizeof *rc);
    double *pl = malloc(N * sizeof *pl), *pr = malloc(N * sizeof *pr);
    int64_t *lj = malloc(N * sizeof *lj), *rj = malloc(N * sizeof *rj);
    int64_t *pli = malloc(N * sizeof *pli), *pri = malloc(N * sizeof *pri);
    assert_true(lc && rc && pl && pr && lj && rj && pli && pri);
    for (size_t i = 0; i < N; i++)
        lc[i] = rc[i] = -INFINITY, lj[i] = rj[i] = -1;
    for (size_t q = 0; q < parts; q++) {
        size_t b0 = nb * q * q / (parts * parts), b1 = nb * (q + 1) * (q + 1) / (parts * parts);
        assert_int_equal(tsm_mp_part(ctx, s, excl, b0, b1, pl, pli, pr, pri), TSM_OK);
        for (size_t i = 0; i < N; i++) {
            if (tsm_mp_beats(pl[i], pli[i], lc[i], lj[i]))
                lc[i] = pl[i], lj[i] = pli[i];
            if (tsm_mp_beats(pr[i], pri[i], rc[i], rj[i]))
                rc[i] = pr[i], rj[i] = pri[i];
        }
    }
    profiles p = prof_new(N);
    assert_int_equal(tsm_mp_finish(ctx, s, excl, lc, lj, rc, rj, p.d, p.di, p.l, p.li), TSM_OK);
    free(lc), free(rc), free(pl), free(pr), free(lj), free(rj), free(pli), free(pri);
    return p;
}

/* The profile assembled from partial band ranges is bitwise tsm_mp's, on random walks
 * with planted anomalies, NaN and constant stretches, sizes that are not multiples of
 * the bands, and more parts than bands. Ranges outside the bands are refused. */
static void test_parts_identical(void **state) {
    (void)state;
    static const size_t sizes[] = {40, 301, 2000, 5003};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        tu_case_seed(8500 + c);
        size_t n = sizes[c], m = n < 100 ? 8 : 24, excl = c % 2 ? m / 2 : m;
        double *t = tu_series(n);
        if (n >= 2000) {
            tu_plant_anomaly(t, n / 3, 40, 5.0);
            tu_fill(t, n / 2, 60, 1.5);
            tu_fill(t, n / 2 + 300, 50, 1.5);
            tu_fill(t, n / 5, 7, NAN);
        }
        profiles want = run_mp(t, n, m, excl, 0);
        tsm_ctx *ctx = tu_ctx();
        tsm_stats *s = NULL;
        assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
        for (size_t parts = 1; parts <= 5; parts += 2) {
            profiles got = run_parts(s, ctx, excl, parts);
            assert_memory_equal(want.d, got.d, want.N * sizeof(double));
            assert_memory_equal(want.l, got.l, want.N * sizeof(double));
            assert_memory_equal(want.di, got.di, want.N * sizeof(int64_t));
            assert_memory_equal(want.li, got.li, want.N * sizeof(int64_t));
            prof_free(&got);
        }
        size_t nb = tsm_mp_bands(ctx, s->N, excl);
        uint64_t pairs = 0;
        for (size_t b = 0; b < nb; b++)
            pairs += tsm_mp_band_pairs(ctx, s->N, excl, b);
        assert_int_equal(pairs, (s->N - excl) * (s->N - excl + 1) / 2);
        /* tsm_mp_split: contiguous ranges that cover the bands, each within one band's
         * pairs (the first band's, the largest) of an equal share */
        const uint64_t widest = nb ? tsm_mp_band_pairs(ctx, s->N, excl, 0) : 0;
        for (size_t parts = 1; parts <= 7; parts++) {
            size_t prev = 0;
            for (size_t q = 0; q < parts; q++) {
                size_t b0, b1;
                uint64_t mine = 0;
                tsm_mp_split(ctx, s->N, excl, q, parts, &b0, &b1);
                assert_true(b0 <= b1 && b1 <= nb);
                assert_true(b0 == prev || (b0 == b1 && b0 <= prev));
                if (b1 > b0)
                    prev = b1;
                for (size_t b = b0; b < b1; b++)
                    mine += tsm_mp_band_pairs(ctx, s->N, excl, b);
                const double share = (double)pairs / (double)parts;
                assert_true(fabs((double)mine - share) <= (double)widest + 1.0);
            }
            assert_int_equal(prev, nb);
        }
        assert_int_equal(tsm_mp_part(ctx, s, excl, 0, nb + 1, want.d, want.di, NULL, NULL),
                         TSM_EINVAL);
        tsm_stats_destroy(&s);
        tsm_ctx_destroy(&ctx);
        prof_free(&want);
        free(t);
    }
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walks),
        cmocka_unit_test(test_exclusion_zones),
        cmocka_unit_test(test_planted_anomalies),
        cmocka_unit_test(test_constant_stretches),
        cmocka_unit_test(test_constants_beat_noise),
        cmocka_unit_test(test_nonfinite_stretches),
        cmocka_unit_test(test_degenerate_series),
        cmocka_unit_test(test_large_against_scan),
        cmocka_unit_test(test_grid_edges),
        cmocka_unit_test(test_scattered_gaps),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_parts_identical),
        cmocka_unit_test(test_exact_ties),
        cmocka_unit_test(test_invalid_arguments),
    };
    /* clang-format on */
    return TU_RUN_GROUP("mp", tests, NULL, NULL);
}
