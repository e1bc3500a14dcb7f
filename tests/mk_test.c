/* SPDX-License-Identifier: Apache-2.0 */
/* mk_test.c - exact motifs (kernels/mk) against the brute-force reference: MK
 * (tsm_mk_motifs) and the scan path (tsm_motifs_scan, motif_scan.c), which run the same
 * cases (two groups, "mk" and "motif_scan").
 *
 * Every case runs the search on the backend of tu_ctx() and compares with
 * ref_topk_motifs through tu_check_motifs: the same number of pairs, distances within
 * TU_D2_TOL(m) on d2, and the same members unless the reference says the other pair
 * is tied within that tolerance. Where ties are exact (constant plateaus, d = 0) the
 * members must be the reference's, index for index. Sizes stay small: the reference
 * is O(N^2 m) and stores every pair. */
#include "testutil.h"

#include "reference.h"
#include "stats.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K_MAX 8

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Whether the cases run the scan path instead of MK (the second group). */
static int g_scan;

/* Runs MK (or the scan path) on t[0..n-1] (failing the test on any error); motifs to
 * got[0..*count). */
static void run_mk(const double *t, size_t n, size_t m, size_t excl, size_t k, size_t refs,
                   uint64_t seed, int threads, tsm_motif *got, size_t *count, tsm_mk_stats *cs) {
    tsm_ctx *ctx = tu_ctx();
    tsm_ctx_set_threads(ctx, threads);
    tsm_stats *s = NULL;
    tsm_status st = tsm_stats_new(ctx, t, n, m, &s);
    if (st != TSM_OK)
        fail_msg("seed %llu: tsm_stats_new: %s", (unsigned long long)tu_seed, tsm_ctx_error(ctx));
    st = g_scan ? tsm_motifs_scan(ctx, s, excl, k, got, count, cs)
                : tsm_mk_motifs(ctx, s, excl, k, refs, seed, got, count, cs);
    if (st != TSM_OK)
        fail_msg("seed %llu: motif search: %s: %s", (unsigned long long)tu_seed,
                 tsm_status_name(st), tsm_ctx_error(ctx));
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
}

/* MK vs the reference on t; returns the count, the motifs in got. exact != 0 also
 * requires the reference's members index for index, and d = 0 exactly where the
 * reference has it (exact ties between constants). */
static size_t check_mk(const double *t, size_t n, size_t m, size_t excl, size_t k, size_t refs,
                       uint64_t seed, int threads, int exact, tsm_motif *got) {
    assert_true(k <= K_MAX);
    tsm_motif want[K_MAX];
    size_t count = 12345;
    tsm_mk_stats cs;
    run_mk(t, n, m, excl, k, refs, seed, threads, got, &count, &cs);
    size_t nwant = ref_topk_motifs(t, n, m, excl, k, want);
    tu_check_motifs(t, m, excl, want, nwant, got, count);
    for (size_t q = 0; exact && q < count; q++)
        if (got[q].a != want[q].a || got[q].b != want[q].b ||
            (want[q].distance == 0.0 && got[q].distance != 0.0))
            fail_msg("seed %llu: motif rank %zu: (%lld, %lld) d=%.17g, want exactly (%lld, "
                     "%lld) d=%.17g",
                     (unsigned long long)tu_seed, q + 1, (long long)got[q].a, (long long)got[q].b,
                     got[q].distance, (long long)want[q].a, (long long)want[q].b, want[q].distance);
    size_t N = n - m + 1, finite = 0;
    if (g_scan) { /* every search scans the same pairs: no references, no offsets */
        if (cs.refs != 0 || cs.offsets != 0 || (count > 0 && cs.distances == 0))
            fail_msg("seed %llu: scan counters: %zu references, %llu offsets, %llu pairs",
                     (unsigned long long)tu_seed, cs.refs, (unsigned long long)cs.offsets,
                     (unsigned long long)cs.distances);
        return count;
    }
    /* Counters: at least the R x N matrix, references as asked (or all finite ones). */
    for (size_t i = 0; i < N; i++)
        finite += ref_kind(t, m, i) != TSM_SUB_NONFINITE;
    size_t want_refs = refs ? refs : TSM_MK_REFS_DEFAULT;
    want_refs = finite < 2 ? 0 : (want_refs < finite ? want_refs : finite);
    if (cs.refs != want_refs)
        fail_msg("seed %llu: %zu references used, want %zu", (unsigned long long)tu_seed, cs.refs,
                 want_refs);
    if (cs.distances < (uint64_t)cs.refs * finite)
        fail_msg("seed %llu: %llu distances counted, fewer than the %zu x %zu matrix",
                 (unsigned long long)tu_seed, (unsigned long long)cs.distances, cs.refs, finite);
    return count;
}

/* ---- random walks: sizes, k, excl, references ---------------------------------- */

typedef struct {
    const char *name;
    size_t n, m, excl, k, refs; /* excl 0 here means "m" */
    uint64_t seed;
} walk_case;

static const walk_case walk_cases[] = {
    {"m=3 n=m (one subsequence, no pair)", 3, 3, 0, 1, 0, 11},
    {"m=3 n=m+1", 4, 3, 0, 1, 0, 12},
    {"m=3 n=m+1 excl=1 (one pair)", 4, 3, 1, 1, 0, 13},
    {"m=3 n=2m-1 (no pair)", 5, 3, 0, 1, 0, 14},
    {"m=3 n=300", 300, 3, 0, 1, 0, 15},
    {"m=3 n=300 k=5", 300, 3, 0, 5, 0, 16},
    {"m=8 n=m", 8, 8, 0, 1, 0, 21},
    {"m=8 n=m+1", 9, 8, 0, 1, 0, 22},
    {"m=8 n=15 (n < 2m, no pair)", 15, 8, 0, 3, 0, 23},
    {"m=8 n=2m (one pair)", 16, 8, 0, 3, 0, 24},
    {"m=8 n=500 k=3", 500, 8, 0, 3, 0, 25},
    {"m=8 n=800 k=5", 800, 8, 0, 5, 0, 26},
    {"m=64 n=m", 64, 64, 0, 1, 0, 31},
    {"m=64 n=m+1", 65, 64, 0, 1, 0, 32},
    {"m=64 n=100 (n < 2m)", 100, 64, 0, 1, 0, 33},
    {"m=64 n=1200", 1200, 64, 0, 1, 0, 34},
    {"m=64 n=1500 k=3", 1500, 64, 0, 3, 0, 35},
    {"m=257 n=m", 257, 257, 0, 1, 0, 41},
    {"m=257 n=m+1", 258, 257, 0, 1, 0, 42},
    {"m=257 n=400 (n < 2m)", 400, 257, 0, 1, 0, 43},
    {"m=257 n=1100 k=3", 1100, 257, 0, 3, 0, 44},
    {"m=16 n=3000 (many offset batches)", 3000, 16, 0, 1, 0, 51},
    {"m=32 n=2500 k=5", 2500, 32, 0, 5, 0, 52},
    {"excl=1", 600, 16, 1, 3, 0, 61},
    {"excl=m/2", 600, 16, 8, 3, 0, 62},
    {"excl=2m", 600, 16, 32, 3, 0, 63},
    {"excl=2m, fewer pairs than k", 100, 16, 32, 5, 0, 64},
    {"refs=1", 800, 16, 0, 3, 1, 71},
    {"refs=2", 800, 16, 0, 1, 2, 72},
    {"refs=40", 800, 16, 0, 1, 40, 73},
    {"refs > N", 60, 8, 0, 3, 1000, 74},
};

static void test_walk(void **state) {
    const walk_case *c = *state;
    tu_case_seed(c->seed);
    double *t = tu_series(c->n);
    tsm_motif got[K_MAX];
    size_t excl = c->excl ? c->excl : c->m;
    size_t count = check_mk(t, c->n, c->m, excl, c->k, c->refs, TSM_MK_SEED_DEFAULT, 0, 0, got);
    /* No pair exists when every two subsequences are closer than excl. */
    if (c->n - c->m + 1 <= excl)
        assert_int_equal(count, 0);
    else
        assert_true(count >= 1);
    free(t);
}

/* ---- planted patterns, constants, non-finite values ----------------------------- */

/* The same shape copied to two places (plus noise 1e-3) must be the motif. */
static void test_planted_pair(void **state) {
    (void)state;
    const size_t n = 2000, m = 48, at1 = 310, at2 = 1377;
    tu_case_seed(101);
    double *t = tu_series(n);
    double shape[48];
    for (size_t i = 0; i < m; i++)
        shape[i] = 3.0 * sin(0.4 * (double)i) + 0.05 * (double)i * (double)i / (double)m;
    for (size_t i = 0; i < m; i++) {
        t[at1 + i] = 10.0 + shape[i] + 1e-3 * tu_normal();
        t[at2 + i] = -7.0 + 2.5 * shape[i] + 1e-3 * tu_normal(); /* z-normalised: same */
    }
    tsm_motif got[K_MAX];
    size_t count = check_mk(t, n, m, m, 1, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    assert_int_equal(count, 1);
    assert_int_equal(got[0].a, at1);
    assert_int_equal(got[0].b, at2);
    assert_true(got[0].distance < 0.05);
    free(t);
}

/* Three copies: top-3 takes the two best copies first, then the masked search must
 * not reuse a member; all compared with the reference. */
static void test_planted_three(void **state) {
    (void)state;
    const size_t n = 1500, m = 32, at[3] = {100, 640, 1200};
    tu_case_seed(102);
    double *t = tu_series(n);
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < m; i++)
            t[at[c] + i] = cos(0.3 * (double)i) * (1.0 + (double)i / 8.0) + 1e-3 * tu_normal();
    tsm_motif got[K_MAX];
    size_t count = check_mk(t, n, m, m, 3, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    assert_int_equal(count, 3);
    free(t);
}

/* A plateau t[at..at+len) = level with guards level + step on both sides. The guards
 * keep the subsequences that straddle an edge (a step, z-normalised the same whatever
 * the levels) from tying at d = 0 with another plateau's: step +1 on one plateau and
 * -1 on the other give opposite shapes. */
static void plateau(double *t, size_t at, size_t len, double level, double step) {
    tu_fill(t, at, len, level);
    t[at - 1] = t[at + len] = level + step;
}

/* Two plateaus: every pair of constants has d = 0 exactly, and the smallest (a, b)
 * must win, for every rank: indices are compared exactly. */
static void test_constant_plateaus(void **state) {
    (void)state;
    const size_t n = 900, m = 16;
    tu_case_seed(103);
    double *t = tu_series(n);
    plateau(t, 200, 100, 5.0, 1.0);
    plateau(t, 600, 60, 5.0, -1.0);
    tsm_motif got[K_MAX];
    size_t count = check_mk(t, n, m, m, 5, 0, TSM_MK_SEED_DEFAULT, 0, 1, got);
    assert_true(count >= 3);
    assert_int_equal(got[0].a, 200);
    assert_int_equal(got[0].b, 216);
    assert_true(got[0].distance == 0.0);
    /* Plateaus at different levels are still constants: d = 0 across them. */
    plateau(t, 600, 60, -2.0, -1.0);
    check_mk(t, n, m, m, 5, 0, 7, 0, 1, got);
    /* excl = 2m: the first pair is still inside the first plateau. */
    count = check_mk(t, n, m, 2 * m, 3, 0, TSM_MK_SEED_DEFAULT, 0, 1, got);
    assert_true(count >= 1);
    assert_int_equal(got[0].a, 200);
    assert_int_equal(got[0].b, 232);
    free(t);
}

/* Plateaus shorter than m + excl: constants pair only with normal subsequences
 * (d = sqrt(m)), which must not win over the walk's own motif. */
static void test_short_plateaus(void **state) {
    (void)state;
    const size_t n = 700, m = 12;
    tu_case_seed(104);
    double *t = tu_series(n);
    plateau(t, 100, 15, 1.0, 1.0);
    plateau(t, 400, 13, 1.0, -1.0);
    tsm_motif got[K_MAX];
    check_mk(t, n, m, m, 3, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    /* A series that is all one constant: every pair d = 0, smallest (a, b) first. */
    tu_fill(t, 0, n, 3.0);
    size_t count = check_mk(t, n, m, m, 3, 0, TSM_MK_SEED_DEFAULT, 0, 1, got);
    assert_int_equal(count, 3);
    assert_int_equal(got[0].a, 0);
    assert_int_equal(got[0].b, 12);
    free(t);
}

/* NaN and +-Inf stretches: subsequences that touch them are never members. */
static void test_nonfinite(void **state) {
    (void)state;
    const size_t n = 1200, m = 20;
    tu_case_seed(105);
    double *t = tu_series(n);
    tu_fill(t, 100, 30, NAN);
    tu_fill(t, 500, 1, INFINITY);
    tu_fill(t, 800, 3, -INFINITY);
    tu_fill(t, 1190, 10, NAN);
    tsm_motif got[K_MAX];
    size_t count = check_mk(t, n, m, m, 5, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    assert_int_equal(count, 5);
    for (size_t q = 0; q < count; q++)
        for (int e = 0; e < 2; e++) {
            size_t x = (size_t)(e ? got[q].b : got[q].a);
            for (size_t i = x; i < x + m; i++)
                assert_true(isfinite(t[i]));
        }
    /* A reference may only be drawn among the finite subsequences: mostly NaN. */
    tu_fill(t, 0, n, NAN);
    for (size_t i = 300; i < 360; i++)
        t[i] = tu_normal();
    for (size_t i = 900; i < 950; i++)
        t[i] = tu_normal();
    check_mk(t, n, m, m, 3, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    check_mk(t, n, m, m, 1, 1, 99, 0, 0, got);
    /* Nothing finite: no pair, no reference. */
    tu_fill(t, 0, n, NAN);
    count = check_mk(t, n, m, m, 2, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    assert_int_equal(count, 0);
    free(t);
}

/* A noisy periodic series: every period is a near-copy of every other, so the bounds
 * prune little, many pairs reach the exact distance (on the GPU: the survivor queues
 * overflow and flush many times per batch) and the best pairs are nearly tied. */
static void test_periodic(void **state) {
    (void)state;
    const size_t n = 4000, m = 40;
    tu_case_seed(109);
    double *t = malloc(n * sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        t[i] = sin(2.0 * M_PI * (double)i / 50.0) + 0.3 * sin(2.0 * M_PI * (double)i / 7.3) +
               0.05 * tu_normal();
    tsm_motif got[K_MAX];
    size_t count = check_mk(t, n, m, m, 4, 0, TSM_MK_SEED_DEFAULT, 0, 0, got);
    assert_int_equal(count, 4);
    /* Twenty references: more than a GPU thread keeps in registers. */
    check_mk(t, n, m, m, 2, 20, 3, 0, 0, got);
    free(t);
}

/* ---- determinism: reference seeds, counts, threads --------------------------------- */

static void assert_same(const tsm_motif *x, size_t nx, const tsm_motif *y, size_t ny,
                        const char *what) {
    if (nx != ny)
        fail_msg("seed %llu: %s: %zu vs %zu motifs", (unsigned long long)tu_seed, what, nx, ny);
    for (size_t q = 0; q < nx; q++)
        if (x[q].a != y[q].a || x[q].b != y[q].b || x[q].distance != y[q].distance)
            fail_msg("seed %llu: %s: rank %zu (%lld, %lld, %.17g) vs (%lld, %lld, %.17g)",
                     (unsigned long long)tu_seed, what, q + 1, (long long)x[q].a, (long long)x[q].b,
                     x[q].distance, (long long)y[q].a, (long long)y[q].b, y[q].distance);
}

/* The top-1 motif against the matrix profile of the same ctx (beyond the reference's
 * reach): its distance is the profile's minimum within TU_D2_TOL on d2, and its
 * members are the profile's nearest pair unless that pair ties within the tolerance. */
static void check_profile_pair(tsm_ctx *ctx, const tsm_stats *s, size_t excl,
                               const tsm_motif *got) {
    const size_t N = s->N;
    double *mp = malloc(N * sizeof *mp);
    int64_t *mpi = malloc(N * sizeof *mpi);
    assert_true(mp && mpi);
    assert_int_equal(tsm_mp(ctx, s, excl, mp, mpi, NULL, NULL), TSM_OK);
    size_t best = 0;
    for (size_t i = 1; i < N; i++)
        if (mp[i] < mp[best])
            best = i;
    const double d2 = got->distance * got->distance, want = mp[best] * mp[best];
    if (!(fabs(d2 - want) <= TU_D2_TOL(s->m)))
        fail_msg("seed %llu: motif (%lld, %lld) d=%.17g, the profile's minimum %.17g at %zu -> "
                 "%lld",
                 (unsigned long long)tu_seed, (long long)got->a, (long long)got->b, got->distance,
                 mp[best], best, (long long)mpi[best]);
    free(mp), free(mpi);
}

/* The answer is the minimum over all pairs, so neither the references (seed, count)
 * nor the thread count may change it, down to the last bit. Checked against the
 * reference on a small series and, beyond the reference's reach, between runs. */
static void test_seeds_and_threads(void **state) {
    (void)state;
    tu_case_seed(106);
    const size_t n_small = 1000, m = 24;
    double *t = tu_series(n_small);
    tsm_motif base[K_MAX], got[K_MAX];
    size_t nb = check_mk(t, n_small, m, m, 3, 0, 1, 1, 0, base);
    const uint64_t seeds[] = {2, 3, 0xdeadbeef, TSM_MK_SEED_DEFAULT};
    const size_t nseeds = tu_quick() ? 1 : sizeof seeds / sizeof seeds[0];
    for (size_t i = 0; i < nseeds; i++) {
        size_t ng = check_mk(t, n_small, m, m, 3, 0, seeds[i], 1, 0, got);
        assert_same(base, nb, got, ng, "another reference seed");
    }
    size_t ng = check_mk(t, n_small, m, m, 3, 0, 1, 2, 0, got);
    assert_same(base, nb, got, ng, "2 threads vs 1");
    free(t);

    /* Larger: many chunks per batch and many batches (smaller under compute-sanitizer). */
    const size_t n = tu_quick() ? 4000 : 20000;
    tu_case_seed(107);
    t = tu_series(n);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, 64, &s), TSM_OK);
    tsm_mk_stats c1, c2;
    size_t n1, n2;
    tsm_ctx_set_threads(ctx, 1);
    if (g_scan) { /* 1, 2 and 3 threads, and the profile's nearest pair */
        assert_int_equal(tsm_motifs_scan(ctx, s, 64, 3, base, &n1, &c1), TSM_OK);
        for (int th = 2; th <= 3; th++) {
            tsm_ctx_set_threads(ctx, th);
            assert_int_equal(tsm_motifs_scan(ctx, s, 64, 3, got, &n2, &c2), TSM_OK);
            assert_same(base, n1, got, n2, "scan: more threads vs 1");
            assert_true(c1.distances == c2.distances);
        }
        assert_int_equal(n1, 3);
        check_profile_pair(ctx, s, 64, &base[0]);
        tsm_stats_destroy(&s);
        tsm_ctx_destroy(&ctx);
        free(t);
        return;
    }
    assert_int_equal(tsm_mk_motifs(ctx, s, 64, 3, 0, 1, base, &n1, &c1), TSM_OK);
    tsm_ctx_set_threads(ctx, 2);
    assert_int_equal(tsm_mk_motifs(ctx, s, 64, 3, 0, 1, got, &n2, &c2), TSM_OK);
    assert_same(base, n1, got, n2, "n=20000: 2 threads vs 1");
    /* Chunks are fixed, so even the counters agree. */
    assert_true(c1.distances == c2.distances && c1.offsets == c2.offsets);
    assert_int_equal(tsm_mk_motifs(ctx, s, 64, 3, 0, 777, got, &n2, &c2), TSM_OK);
    assert_same(base, n1, got, n2, "n=20000: another seed");
    assert_int_equal(tsm_mk_motifs(ctx, s, 64, 3, 3, 5, got, &n2, &c2), TSM_OK);
    assert_same(base, n1, got, n2, "n=20000: three references");
    assert_int_equal(n1, 3);
    /* MK must prune: far fewer distances than the N^2 / 2 pairs. */
    double N = (double)(n - 64 + 1);
    assert_true((double)c1.distances < 0.25 * N * N / 2);
    assert_true(c1.offsets >= 1 && c1.refs == TSM_MK_REFS_DEFAULT);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* ---- MK in parts (tsm_mk_motifs_part) ------------------------------------------------ */

#define PARTS_MAX 4

/* Parts run at once in threads, each with its own ctx; the exchange after each batch
 * meets at a barrier, and every part merges what all of them posted. */
typedef struct {
    pthread_barrier_t bar;
    size_t parts;
    tsm_motif best[PARTS_MAX];
    const size_t *live[PARTS_MAX];
    size_t nlive[PARTS_MAX];
} mk_sim;

typedef struct {
    mk_sim *sim;
    size_t part, excl, k;
    const tsm_stats *s;
    tsm_motif out[K_MAX];
    size_t count;
    tsm_status st;
} mk_part_run;

/* tsm_mk_sync_fn between threads: the best of the posted pairs and the posted live
 * lists in part order. */
static int sim_sync(void *user, tsm_motif *best, size_t *live, size_t *nlive, size_t cap) {
    mk_part_run *r = user;
    mk_sim *m = r->sim;
    m->best[r->part] = *best, m->live[r->part] = live, m->nlive[r->part] = *nlive;
    pthread_barrier_wait(&m->bar);
    tsm_motif b = m->best[0];
    size_t total = 0;
    for (size_t q = 0; q < m->parts; q++) {
        if (tsm_mk_before(&m->best[q], &b))
            b = m->best[q];
        total += m->nlive[q];
    }
    size_t *all = malloc((total ? total : 1) * sizeof *all);
    for (size_t q = 0, at = 0; all && q < m->parts; at += m->nlive[q], q++)
        if (m->nlive[q])
            memcpy(all + at, m->live[q], m->nlive[q] * sizeof *all);
    pthread_barrier_wait(&m->bar); /* everyone has read the others' lists */
    int bad = !all || total > cap;
    if (!bad) {
        if (total)
            memcpy(live, all, total * sizeof *live);
        *nlive = total, *best = b;
    }
    free(all);
    return bad;
}

static void *run_part(void *arg) {
    mk_part_run *r = arg;
    tsm_ctx *ctx = NULL;
    r->st = tsm_ctx_new(&ctx, TSM_BACKEND_CPU, NULL);
    if (r->st == TSM_OK) {
        tsm_ctx_set_threads(ctx, 1);
        r->st = tsm_mk_motifs_part(ctx, r->s, r->excl, r->k, 0, TSM_MK_SEED_DEFAULT, r->part,
                                   r->sim->parts, sim_sync, r, r->out, &r->count, NULL);
    }
    tsm_ctx_destroy(&ctx);
    return NULL;
}

/* MK in 2 and 3 parts running at once gives the one-process motifs bit for bit (top-3
 * on a walk with a planted pair and a constant stretch, so that batches have many
 * chunks); several parts on a CUDA ctx are refused. */
static void test_parts(void **state) {
    (void)state;
    tu_case_seed(108);
    const size_t n = tu_quick() ? 3000 : 8000, m = 32, k = 3;
    double *t = tu_series(n);
    tu_fill(t, n / 2, 50, 1.0);
    for (size_t q = 0; q < m; q++) /* a near copy far away */
        t[n / 5 + q] = t[n - 400 + q] + 1e-3 * tu_normal();
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    tsm_motif want[K_MAX];
    size_t nwant = 0;
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA) {
        mk_sim sim = {.parts = 2};
        assert_int_equal(
            tsm_mk_motifs_part(ctx, s, m, k, 0, 1, 0, 2, sim_sync, &sim, want, &nwant, NULL),
            TSM_EBACKEND);
    } else {
        assert_int_equal(tsm_mk_motifs(ctx, s, m, k, 0, TSM_MK_SEED_DEFAULT, want, &nwant, NULL),
                         TSM_OK);
        assert_int_equal(nwant, k);
        for (size_t parts = 2; parts <= 3; parts++) {
            mk_sim sim = {.parts = parts};
            mk_part_run runs[PARTS_MAX];
            pthread_t th[PARTS_MAX];
            pthread_barrier_init(&sim.bar, NULL, (unsigned)parts);
            for (size_t p = 0; p < parts; p++) {
                runs[p] = (mk_part_run){.sim = &sim, .part = p, .excl = m, .k = k, .s = s};
                assert_int_equal(pthread_create(&th[p], NULL, run_part, &runs[p]), 0);
            }
            for (size_t p = 0; p < parts; p++)
                pthread_join(th[p], NULL);
            pthread_barrier_destroy(&sim.bar);
            for (size_t p = 0; p < parts; p++) {
                assert_int_equal(runs[p].st, TSM_OK);
                assert_int_equal(runs[p].count, nwant);
                assert_memory_equal(runs[p].out, want, nwant * sizeof *want);
            }
        }
        assert_int_equal(
            tsm_mk_motifs_part(ctx, s, m, k, 0, 1, 2, 2, sim_sync, NULL, want, &nwant, NULL),
            TSM_EINVAL);
    }
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* ---- invalid arguments --------------------------------------------------------------- */

static void test_invalid(void **state) {
    (void)state;
    tu_case_seed(108);
    double *t = tu_series(100);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, 100, 2, &s), TSM_EINVAL); /* m < 3 */
    assert_null(s);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(tsm_stats_new(ctx, t, 100, 101, &s), TSM_EINVAL); /* m > n */
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);

    assert_int_equal(tsm_stats_new(ctx, t, 100, 10, &s), TSM_OK);
    tsm_motif out[2];
    size_t count = 99;
    tsm_fail(ctx, TSM_OK, "%s", "");
    assert_int_equal(tsm_mk_motifs(ctx, s, 0, 1, 0, 1, out, &count, NULL), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    assert_int_equal(count, 0);
    tsm_fail(ctx, TSM_OK, "%s", "");
    assert_int_equal(tsm_mk_motifs(ctx, s, 10, 0, 0, 1, out, &count, NULL), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    tsm_fail(ctx, TSM_OK, "%s", "");
    assert_int_equal(tsm_mk_motifs(ctx, s, 10, 1, 0, 1, NULL, &count, NULL), TSM_EINVAL);
    assert_true(strlen(tsm_ctx_error(ctx)) > 0);
    /* Valid arguments with counters NULL work. */
    assert_int_equal(tsm_mk_motifs(ctx, s, 10, 2, 0, 1, out, &count, NULL), TSM_OK);
    assert_int_equal(count, 2);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* ---- the scan path in parts (tsm_motifs_scan_part) ------------------------------------ */

/* The exchange of the scan's parts between threads: the best of the posted pairs. */
typedef struct {
    pthread_barrier_t bar;
    size_t parts;
    tsm_mp_pair best[PARTS_MAX];
} scan_sim;

typedef struct {
    scan_sim *sim;
    size_t part, excl, k;
    const tsm_stats *s;
    tsm_motif out[K_MAX];
    size_t count;
    tsm_status st;
} scan_part_run;

static int scan_sync(void *user, tsm_mp_pair *best) {
    scan_part_run *r = user;
    scan_sim *m = r->sim;
    m->best[r->part] = *best;
    pthread_barrier_wait(&m->bar);
    tsm_mp_pair b = m->best[0];
    for (size_t q = 1; q < m->parts; q++)
        if (tsm_mp_pair_beats(&m->best[q], &b))
            b = m->best[q];
    pthread_barrier_wait(&m->bar); /* everyone has read the others' pairs */
    *best = b;
    return 0;
}

static void *run_scan_part(void *arg) {
    scan_part_run *r = arg;
    tsm_ctx *ctx = tu_ctx();
    tsm_ctx_set_threads(ctx, 1);
    r->st = tsm_motifs_scan_part(ctx, r->s, r->excl, r->k, r->part, r->sim->parts, scan_sync, r,
                                 r->out, &r->count, NULL);
    tsm_ctx_destroy(&ctx);
    return NULL;
}

/* The scan in 2, 3 and 4 parts running at once, each on a ctx of the test's backend,
 * gives the one-process motifs bit for bit (top-3 on a walk with a planted pair and a
 * constant stretch); parts out of range are refused. */
static void test_scan_parts(void **state) {
    (void)state;
    tu_case_seed(110);
    const size_t n = tu_quick() ? 3000 : 9000, m = 32, k = 3;
    double *t = tu_series(n);
    tu_fill(t, n / 2, 50, 1.0);
    for (size_t q = 0; q < m; q++)
        t[n / 5 + q] = t[n - 400 + q] + 1e-3 * tu_normal();
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    tsm_motif want[K_MAX];
    size_t nwant = 0;
    assert_int_equal(tsm_motifs_scan(ctx, s, m, k, want, &nwant, NULL), TSM_OK);
    assert_int_equal(nwant, k);
    for (size_t parts = 2; parts <= 4; parts++) {
        scan_sim sim = {.parts = parts};
        scan_part_run runs[PARTS_MAX];
        pthread_t th[PARTS_MAX];
        pthread_barrier_init(&sim.bar, NULL, (unsigned)parts);
        for (size_t p = 0; p < parts; p++) {
            runs[p] = (scan_part_run){.sim = &sim, .part = p, .excl = m, .k = k, .s = s};
            assert_int_equal(pthread_create(&th[p], NULL, run_scan_part, &runs[p]), 0);
        }
        for (size_t p = 0; p < parts; p++)
            pthread_join(th[p], NULL);
        pthread_barrier_destroy(&sim.bar);
        for (size_t p = 0; p < parts; p++) {
            assert_int_equal(runs[p].st, TSM_OK);
            assert_int_equal(runs[p].count, nwant);
            assert_memory_equal(runs[p].out, want, nwant * sizeof *want);
        }
    }
    assert_int_equal(tsm_motifs_scan_part(ctx, s, m, k, 2, 2, scan_sync, NULL, want, &nwant, NULL),
                     TSM_EINVAL);
    assert_int_equal(tsm_motifs_scan_part(ctx, s, m, k, 0, 2, NULL, NULL, want, &nwant, NULL),
                     TSM_EINVAL);
    assert_int_equal(tsm_motifs_scan(ctx, s, m, 0, want, &nwant, NULL), TSM_EINVAL);
    assert_int_equal(tsm_motifs_scan(ctx, s, m, 1, NULL, &nwant, NULL), TSM_EINVAL);
    assert_int_equal(tsm_motifs_scan(ctx, s, 0, 1, want, &nwant, NULL), TSM_EINVAL);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

/* The best pair of bands b0 .. b1-1 against a brute force over the same bands: the
 * pairs (i, i + k) with k in the bands' diagonals, correlation by distance.h. Its
 * correlation within 1e-9, and its members unless tied within that. Covers every
 * band cut of a series longer than a CPU tile's rows and a GPU band. */
/* Extreme scales: a walk with a planted pair times 1e-140, 1e-60, 1e60 and 1e140,
 * against the reference. The CUDA scan's filter works on the covariances' magnitudes,
 * clamped to [2^-400, 2^400] (1e-140 and 1e140 fall outside and take the exact test
 * for every pair), and must stay exact at every scale. */
static void test_scales(void **state) {
    (void)state;
    tu_case_seed(112);
    const size_t n = 3000, m = 32, k = 3;
    double *t = tu_series(n), *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t q = 0; q < m; q++)
        t[2400 + q] = t[500 + q] + 1e-3 * tu_normal();
    const double scales[] = {1e-140, 1e-60, 1e60, 1e140};
    for (size_t c = 0; c < sizeof scales / sizeof scales[0]; c++) {
        for (size_t i = 0; i < n; i++)
            x[i] = t[i] * scales[c];
        tsm_motif got[K_MAX];
        assert_int_equal(check_mk(x, n, m, m, k, 0, TSM_MK_SEED_DEFAULT, 0, 0, got), k);
    }
    free(t), free(x);
}

/* tsm_motifs_auto on MK's own order: on series of exact repeats (a spike train, where
 * many pairs of spike-holding subsequences tie at distance 0; a random walk with one
 * stretch copied to three places) and on one with a flat stretch (constants) it answers
 * MK's pairs bit for bit, and says MK answered; on a random walk it is the scan. */
static void test_auto_exact_repeats(void **state) {
    (void)state;
    const size_t n = 4000, m = 100;
    double *spikes = calloc(n, sizeof *spikes), *copies = tu_series(n), *flat = tu_series(n),
           *walk = tu_series(n);
    assert_non_null(spikes);
    for (size_t i = 7; i < n; i += 100)
        spikes[i] = 5.0;
    for (size_t q = 0; q < 2 * m; q++)
        copies[1500 + q] = copies[3500 + q] = copies[300 + q];
    tu_fill(flat, 1000, 3 * m, flat[1000]); /* constants: MK without the scan */
    const double *series[] = {spikes, copies, flat, walk};
    for (size_t c = 0; c < 4; c++)
        for (size_t k = 1; k <= 3; k++) {
            tsm_ctx *ctx = tu_ctx();
            tsm_stats *s = NULL;
            assert_int_equal(tsm_stats_new(ctx, series[c], n, m, &s), TSM_OK);
            tsm_motif got[K_MAX], want[K_MAX];
            size_t ngot = 0, nwant = 0;
            int by_mk = -1;
            assert_int_equal(
                tsm_motifs_auto(ctx, s, m / 4, k, 0, TSM_MK_SEED_DEFAULT, got, &ngot, NULL, &by_mk),
                TSM_OK);
            if (c < 3) { /* repeats or constants: MK's pairs, from MK */
                assert_int_equal(
                    tsm_mk_motifs(ctx, s, m / 4, k, 0, TSM_MK_SEED_DEFAULT, want, &nwant, NULL),
                    TSM_OK);
                assert_int_equal(by_mk, 1);
            } else { /* no near-exact repeat: the scan's pairs, from the scan */
                assert_int_equal(tsm_motifs_scan(ctx, s, m / 4, k, want, &nwant, NULL), TSM_OK);
                assert_int_equal(by_mk, 0);
                assert_false(tsm_motifs_near_exact(s, want, nwant));
            }
            assert_int_equal(ngot, nwant);
            assert_memory_equal(got, want, nwant * sizeof *want);
            tsm_stats_destroy(&s);
            tsm_ctx_destroy(&ctx);
        }
    free(spikes), free(copies), free(flat), free(walk);
}

static void test_best_pair_bands(void **state) {
    (void)state;
    tu_case_seed(111);
    const size_t n = tu_quick() ? 2600 : 5200, m = 20, excl = 20;
    double *t = tu_series(n);
    tu_fill(t, 700, 40, NAN);
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, t, n, m, &s), TSM_OK);
    const size_t N = s->N, nb = tsm_mp_bands(ctx, N, excl);
    const size_t cuts[][2] = {{0, nb}, {0, 1}, {nb / 2, nb}, {nb - 1, nb}, {1, nb > 2 ? 2 : 1}};
    /* The band width (48 on the CPU, 1024 on CUDA) from band 0's pairs. */
    const uint64_t p0 = nb ? tsm_mp_band_pairs(ctx, N, excl, 0) : 0;
    size_t W = 0;
    for (uint64_t acc = 0; acc < p0; W++)
        acc += N - (excl + W);
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        const size_t b0 = cuts[c][0], b1 = cuts[c][1];
        tsm_mp_pair got;
        assert_int_equal(tsm_mp_best_pair(ctx, s, excl, NULL, b0, b1, &got), TSM_OK);
        const size_t k0 = excl + b0 * W, k1 = excl + b1 * W < N ? excl + b1 * W : N;
        tsm_mp_pair want = {-INFINITY, -1, -1};
        for (size_t k = k0; k < k1; k++)
            for (size_t i = 0; i + k < N; i++) {
                if (s->kind[i] != TSM_SUB_NORMAL || s->kind[i + k] != TSM_SUB_NORMAL)
                    continue;
                double d2 = ref_d2(t, m, i, i + k), corr = 1.0 - d2 / (2.0 * (double)m);
                tsm_mp_pair x = {corr, (int64_t)i, (int64_t)(i + k)};
                if (tsm_mp_pair_beats(&x, &want))
                    want = x;
            }
        if (!(fabs(got.corr - want.corr) <= 1e-9) ||
            ((got.a != want.a || got.b != want.b) &&
             !(fabs(1.0 - ref_d2(t, m, (size_t)got.a, (size_t)got.b) / (2.0 * m) - want.corr) <=
               1e-9)))
            fail_msg("seed %llu: bands [%zu, %zu): (%lld, %lld) corr %.17g, want (%lld, %lld) "
                     "%.17g",
                     (unsigned long long)tu_seed, b0, b1, (long long)got.a, (long long)got.b,
                     got.corr, (long long)want.a, (long long)want.b, want.corr);
    }
    tsm_mp_pair none;
    assert_int_equal(tsm_mp_best_pair(ctx, s, excl, NULL, 0, nb + 1, &none), TSM_EINVAL);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    free(t);
}

int main(void) {
    enum { NWALK = sizeof walk_cases / sizeof walk_cases[0] };
    struct CMUnitTest tests[NWALK + 12]; /* 10 fixed, then 2 of them replaced by 4 */
    size_t nt = 0;
    for (size_t i = 0; i < NWALK; i++)
        tests[nt++] =
            (struct CMUnitTest){walk_cases[i].name, test_walk, NULL, NULL, (void *)&walk_cases[i]};
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_planted_pair),
        cmocka_unit_test(test_planted_three),
        cmocka_unit_test(test_constant_plateaus),
        cmocka_unit_test(test_short_plateaus),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_periodic),
        cmocka_unit_test(test_seeds_and_threads),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_parts),
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tests[nt++] = fixed[i];
    tu_apply_filter();
    if (!tu_backend_available())
        return 0;
    int failed = _cmocka_run_group_tests("mk", tests, nt, NULL, NULL);
    /* The scan path on the same cases (not MK's own: invalid arguments, its parts). */
    g_scan = 1;
    nt -= 2; /* test_invalid and test_parts are MK's */
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_scan_parts);
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_best_pair_bands);
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_auto_exact_repeats);
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_scales);
    return failed + _cmocka_run_group_tests("motif_scan", tests, nt, NULL, NULL);
}
