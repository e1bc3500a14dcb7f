/* SPDX-License-Identifier: Apache-2.0 */
/* window_test.c - the batched windowed passes (kernels/window.h) on the backend under
 * test, against the batch kernels run window by window on a CPU ctx (tsm_pd3_range,
 * tsm_mk_motifs k = 1: what the contract says the call returns) and, for small
 * windows, against the brute-force reference.
 *
 * Equality: the same discord indices, and the same neighbours and motif pair unless
 * the other backend's choice ties within TU_D2_TOL by the reference (m = 3 windows
 * have pairs whose distances differ in the last bits); distances within DIST_TOL
 * relative (close_dist: squares within TU_D2_TOL(m), the absolute tolerance of every
 * kernel test, for small distances: with m = 3 nearly flat subsequences round apart). Cases: random
 * walks with planted anomalies and constant stretches, several window lengths in one call, r = 0,
 * r = +inf and r between two nn values, B = 1 and B = 300 windows, m = 3 and m = 128
 * with W = 4096, windows without any eligible pair (n < m + excl). */
#include "testutil.h"
#include "tu_dev.h"

#include "reference.h"
#include "window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIST_TOL 1e-9

/* Distances agree within DIST_TOL relative, or their squares within 1e-10 m absolute:
 * a distance near 0 is the root of 2m (1 - corr), whose rounding is absolute in d2
 * (m = 3 windows have motifs and discords at d ~ 1e-6). */
static int close_dist(double got, double want, size_t m) {
    return fabs(got - want) <= DIST_TOL * want || fabs(got * got - want * want) <= TU_D2_TOL(m);
}

/* A call's windows (host samples) and what it returned. */
typedef struct {
    size_t B, m, excl;
    double **x;
    uint32_t *n;
    double *r;
    tsm_discord *disc; /* at off[b] */
    size_t *off;
    tsm_window_result *res;
} batch;

static void b_init(batch *bt, size_t B, size_t m, size_t excl) {
    memset(bt, 0, sizeof *bt);
    bt->B = B, bt->m = m, bt->excl = excl;
    bt->x = calloc(B, sizeof *bt->x);
    bt->n = calloc(B, sizeof *bt->n);
    bt->r = calloc(B, sizeof *bt->r);
    bt->off = calloc(B, sizeof *bt->off);
    bt->res = calloc(B, sizeof *bt->res);
    assert_true(bt->x && bt->n && bt->r && bt->off && bt->res);
}

static void b_free(batch *bt) {
    for (size_t b = 0; b < bt->B; b++)
        free(bt->x[b]);
    free(bt->x), free(bt->n), free(bt->r), free(bt->off), free(bt->res), free(bt->disc);
}

/* Window b: a random walk of n samples with, by shape % 3 and % 4, a planted burst
 * and constant stretches. */
static void b_window(batch *bt, size_t b, size_t shape, uint32_t n) {
    double *t = tu_series(n);
    size_t m = bt->m;
    if (shape % 3 == 1 && n >= 4 * m)
        tu_plant_anomaly(t, n / 2, m, 3.0);
    if (shape % 4 == 2 && n >= 6 * m) {
        tu_fill(t, n / 5, 2 * m, t[n / 5]);
        tu_fill(t, (3 * n) / 4, m + 2, 0.5);
    }
    bt->x[b] = t;
    bt->n[b] = n;
}

/* Fills the caller's output arrays with a pattern no call writes (NaN distances,
 * huge counts and indices), so that an entry the call fails to write is seen. */
static void b_garbage(batch *bt, size_t total) {
    memset(bt->disc, 0xa5, (total ? total : 1) * sizeof *bt->disc);
    memset(bt->res, 0xa5, bt->B * sizeof *bt->res);
}

/* On a CUDA ctx: takes and frees a device block of about bytes filled with 0xff (NaN
 * doubles, -1 ints), so that the call's cudaMalloc'ed scratch likely starts as garbage
 * instead of fresh zeros: a kernel reading scratch no kernel wrote then goes wrong on
 * every run, not on the runs that follow another process's frees. */
static void poison_device(const tsm_ctx *ctx, size_t bytes) {
#ifdef TSMINE_HAVE_CUDA
    if (!tu_on_device(ctx))
        return;
    void *d = NULL;
    assert_int_equal(cudaMalloc(&d, bytes), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0xff, bytes), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(d);
#else
    (void)ctx, (void)bytes;
#endif
}

/* Whether the results of window b agree bitwise between two runs (a and bt). */
static int same_results(const batch *a, const batch *bt, size_t b) {
    const tsm_window_result *x = &a->res[b], *y = &bt->res[b];
    if (x->ndiscords != y->ndiscords || x->has_motif != y->has_motif ||
        (x->has_motif && (x->motif.a != y->motif.a || x->motif.b != y->motif.b ||
                          memcmp(&x->motif.distance, &y->motif.distance, sizeof(double)))))
        return 0;
    for (size_t q = 0; q < x->ndiscords; q++) {
        const tsm_discord *u = a->disc + a->off[b] + q, *v = bt->disc + bt->off[b] + q;
        if (u->index != v->index || u->neighbor != v->neighbor ||
            memcmp(&u->distance, &v->distance, sizeof(double)))
            return 0;
    }
    return 1;
}

/* Runs tsm_window_passes on the batch twice, on a CUDA ctx with device copies of the
 * windows and the device allocator poisoned before the second run, each time into
 * outputs filled with garbage, and requires bitwise equal results: a race or a read
 * of memory no kernel wrote shows here on any GPU, not as a rare flake. */
static void b_run(tsm_ctx *ctx, batch *bt, int want_motif) {
    size_t total = 0, samples = 0;
    for (size_t b = 0; b < bt->B; b++)
        bt->off[b] = total, total += bt->n[b] - bt->m + 1, samples += bt->n[b];
    bt->disc = malloc((total ? total : 1) * sizeof *bt->disc);
    tsm_window *w = malloc(bt->B * sizeof *w);
    batch first = *bt;
    first.disc = malloc((total ? total : 1) * sizeof *first.disc);
    first.res = malloc(bt->B * sizeof *first.res);
    assert_true(bt->disc && w && first.disc && first.res);
    for (size_t b = 0; b < bt->B; b++) {
        const double *x = bt->x[b];
        if (tu_on_device(ctx))
            x = tu_dev_dup(x, bt->n[b] * sizeof *x);
        w[b] = (tsm_window){x, bt->n[b], bt->r[b]};
    }
    for (int run = 0; run < 2; run++) {
        batch *into = run == 0 ? &first : bt;
        if (run == 1)
            poison_device(ctx, 8 * (samples + 512 * bt->B) * sizeof(double)); /* > scratch */
        b_garbage(into, total);
        tsm_status st =
            tsm_window_passes(ctx, w, bt->B, bt->m, bt->excl, want_motif, into->disc, into->res);
        if (st != TSM_OK)
            fail_msg("seed %llu: tsm_window_passes (run %d): %s", (unsigned long long)tu_seed,
                     run + 1, tsm_ctx_error(ctx));
    }
    for (size_t b = 0; b < bt->B; b++)
        if (!same_results(&first, bt, b))
            fail_msg("seed %llu: window %zu (n %u): results differ between two identical calls "
                     "(%zu and %zu discords)",
                     (unsigned long long)tu_seed, b, bt->n[b], first.res[b].ndiscords,
                     bt->res[b].ndiscords);
    if (tu_on_device(ctx))
        for (size_t b = 0; b < bt->B; b++)
            tu_dev_free((void *)w[b].x);
    free(first.disc), free(first.res);
    free(w);
}

/* All nn values of window b (the discords for r = 0, on cpu), sorted; returns a range
 * strictly between two of them, near the given quantile, or 0 when none is defined. */
static double r_between(tsm_ctx *cpu, const batch *bt, size_t b, double quantile) {
    tsm_stats *s = NULL;
    tsm_discord *d = NULL;
    size_t nd = 0;
    assert_int_equal(tsm_stats_new(cpu, bt->x[b], bt->n[b], bt->m, &s), TSM_OK);
    if (tsm_pd3_range(cpu, s, bt->excl, 0.0, 0, &d, &nd, NULL) != TSM_OK)
        fail_msg("pd3: %s", tsm_ctx_error(cpu));
    double *v = malloc((nd ? nd : 1) * sizeof *v), r = 0.0;
    assert_non_null(v);
    for (size_t q = 0; q < nd; q++)
        v[q] = d[q].distance;
    for (size_t q = 1; q < nd; q++) /* insertion sort: small windows */
        for (size_t k = q; k > 0 && v[k - 1] > v[k]; k--) {
            double tmp = v[k];
            v[k] = v[k - 1], v[k - 1] = tmp;
        }
    for (size_t k = (size_t)(quantile * (double)nd); k + 1 < nd; k++)
        if (v[k + 1] - v[k] > 1e-6 * (1.0 + v[k])) {
            r = (v[k] + v[k + 1]) / 2;
            break;
        }
    free(v), free(d);
    tsm_stats_destroy(&s);
    return r;
}

/* Whether neighbour j of subsequence i (window x) is as good as the wanted one, at
 * squared distance want: the same, or a non-self-match whose distance (by the
 * reference) ties want within TU_D2_TOL: backends that round differently may pick
 * either of two pairs whose distances differ in the last bits. */
static int same_or_tied(const batch *bt, size_t b, int64_t i, int64_t j, int64_t want_j,
                        double want) {
    if (j == want_j)
        return 1;
    const int64_t N = (int64_t)(bt->n[b] - bt->m + 1);
    if (j < 0 || j >= N || (j > i ? j - i : i - j) < (int64_t)bt->excl)
        return 0;
    return fabs(ref_d2(bt->x[b], bt->m, (size_t)i, (size_t)j) - want * want) <= TU_D2_TOL(bt->m);
}

/* Window b of the batch against the batch kernels on a CPU ctx. */
static void check_against_kernels(tsm_ctx *cpu, const batch *bt, size_t b, int want_motif) {
    const tsm_window_result *res = &bt->res[b];
    const tsm_discord *got = bt->disc + bt->off[b];
    tsm_stats *s = NULL;
    tsm_discord *want = NULL;
    size_t nwant = 0, nm = 0;
    tsm_motif mo;
    assert_int_equal(tsm_stats_new(cpu, bt->x[b], bt->n[b], bt->m, &s), TSM_OK);
    if (!isinf(bt->r[b]))
        assert_int_equal(tsm_pd3_range(cpu, s, bt->excl, bt->r[b], 0, &want, &nwant, NULL), TSM_OK);
    if (res->ndiscords != nwant)
        fail_msg("seed %llu: window %zu (n %u, r %.17g): %zu discords, want %zu",
                 (unsigned long long)tu_seed, b, bt->n[b], bt->r[b], res->ndiscords, nwant);
    for (size_t q = 0; q < nwant; q++)
        if (got[q].index != want[q].index ||
            !same_or_tied(bt, b, got[q].index, got[q].neighbor, want[q].neighbor,
                          want[q].distance) ||
            !close_dist(got[q].distance, want[q].distance, bt->m))
            fail_msg("seed %llu: window %zu discord %zu: (%lld, %.17g, %lld), want (%lld, %.17g, "
                     "%lld)",
                     (unsigned long long)tu_seed, b, q, (long long)got[q].index, got[q].distance,
                     (long long)got[q].neighbor, (long long)want[q].index, want[q].distance,
                     (long long)want[q].neighbor);
    if (want_motif) {
        assert_int_equal(tsm_mk_motifs(cpu, s, bt->excl, 1, 0, TSM_MK_SEED_DEFAULT, &mo, &nm, NULL),
                         TSM_OK);
        if (res->has_motif != (nm == 1) ||
            (nm == 1 && (((res->motif.a != mo.a || res->motif.b != mo.b) &&
                          !same_or_tied(bt, b, res->motif.a, res->motif.b, -1, mo.distance)) ||
                         !close_dist(res->motif.distance, mo.distance, bt->m))))
            fail_msg("seed %llu: window %zu motif %d (%lld, %lld, %.17g), want %d (%lld, %lld, "
                     "%.17g)",
                     (unsigned long long)tu_seed, b, res->has_motif, (long long)res->motif.a,
                     (long long)res->motif.b, res->motif.distance, nm == 1, (long long)mo.a,
                     (long long)mo.b, mo.distance);
    } else {
        assert_int_equal(res->has_motif, 0);
    }
    free(want);
    tsm_stats_destroy(&s);
}

/* Window b against the brute-force reference (small windows only: O(N^2 m)). */
static void check_against_reference(const batch *bt, size_t b, int want_motif) {
    const size_t n = bt->n[b], m = bt->m, N = n - m + 1;
    double *dist = malloc(N * sizeof *dist);
    int64_t *idx = malloc(N * sizeof *idx);
    assert_true(dist && idx);
    ref_profile(bt->x[b], n, m, bt->excl, 0, dist, idx);
    if (!isinf(bt->r[b]))
        tu_check_range_discords(bt->x[b], m, bt->excl, dist, N, bt->r[b], bt->disc + bt->off[b],
                                bt->res[b].ndiscords);
    else
        assert_int_equal(bt->res[b].ndiscords, 0);
    if (want_motif) {
        tsm_motif mo;
        size_t nm = ref_topk_motifs(bt->x[b], n, m, bt->excl, 1, &mo);
        tu_check_motifs(bt->x[b], m, bt->excl, &mo, nm, &bt->res[b].motif,
                        bt->res[b].has_motif ? 1 : 0);
    }
    free(dist), free(idx);
}

static tsm_ctx *cpu_ctx(void) {
    tsm_ctx *cpu = NULL;
    assert_int_equal(tsm_ctx_new(&cpu, TSM_BACKEND_CPU, NULL), TSM_OK);
    return cpu;
}

/* Windows of different lengths in one call, r = 0, +inf and in between, constants,
 * anomalies, and a window with no eligible pair (n < m + excl). */
static void test_mixed_lengths(void **state) {
    (void)state;
    tu_case_seed(301);
    tsm_ctx *ctx = tu_ctx(), *cpu = cpu_ctx();
    const uint32_t n[] = {40, 64, 100, 257, 33, 700, 12, 150};
    const size_t B = sizeof n / sizeof *n;
    batch bt;
    b_init(&bt, B, 8, 8);
    for (size_t b = 0; b < B; b++) {
        b_window(&bt, b, b, n[b]);
        bt.r[b] = b % 4 == 0 ? 0.0 : b % 4 == 1 ? INFINITY : r_between(cpu, &bt, b, 0.7);
    }
    b_run(ctx, &bt, 1);
    for (size_t b = 0; b < B; b++) {
        check_against_kernels(cpu, &bt, b, 1);
        check_against_reference(&bt, b, 1);
    }
    assert_int_equal(bt.res[6].ndiscords, 0); /* n = 12: N = 5 < excl, no pair at all */
    assert_int_equal(bt.res[6].has_motif, 0);
    b_free(&bt);
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
}

/* B = 300 small windows, m = 3, with and without motifs. */
static void test_many_small(void **state) {
    (void)state;
    tu_case_seed(302);
    tsm_ctx *ctx = tu_ctx(), *cpu = cpu_ctx();
    const size_t B = 300;
    for (int want_motif = 0; want_motif < 2; want_motif++) {
        batch bt;
        b_init(&bt, B, 3, 3);
        for (size_t b = 0; b < B; b++) {
            b_window(&bt, b, b, b % 50 == 7 ? 4 : 20 + (uint32_t)(tu_uniform() * 100));
            bt.r[b] = b % 5 == 0 ? 0.0 : r_between(cpu, &bt, b, 0.5);
        }
        b_run(ctx, &bt, want_motif);
        for (size_t b = 0; b < B; b++) {
            check_against_kernels(cpu, &bt, b, want_motif);
            if (b % 10 == 0)
                check_against_reference(&bt, b, want_motif);
        }
        b_free(&bt);
    }
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
}

/* The daemon's shape: W = 4096, m = 128 (excl = m), one window alone (B = 1) and three
 * in one call, one with a planted anomaly found at r between the nn values. */
static void test_daemon_shape(void **state) {
    (void)state;
    tu_case_seed(303);
    tsm_ctx *ctx = tu_ctx(), *cpu = cpu_ctx();
    for (size_t B = 1; B <= 3; B += 2) {
        batch bt;
        b_init(&bt, B, 128, 128);
        for (size_t b = 0; b < B; b++) {
            b_window(&bt, b, b + 1, 4096);
            bt.r[b] = r_between(cpu, &bt, b, 0.99);
        }
        b_run(ctx, &bt, 1);
        for (size_t b = 0; b < B; b++)
            check_against_kernels(cpu, &bt, b, 1);
        b_free(&bt);
    }
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
}

/* A ctx confined to part of the GPU's multiprocessors (the daemon's passes,
 * tsm_ctx_set_sm_share) gives the same results, bitwise, as b_run requires of any
 * ctx; on the CPU the call does nothing. Shares outside (0, 1) are refused. */
static void test_confined(void **state) {
    (void)state;
    tu_case_seed(404);
    tsm_ctx *ctx = tu_ctx(), *cpu = cpu_ctx();
    int sms = -1;
    assert_int_equal(tsm_ctx_set_sm_share(ctx, 0.0, &sms), TSM_EINVAL);
    assert_int_equal(tsm_ctx_set_sm_share(ctx, 1.0, &sms), TSM_EINVAL);
    assert_int_equal(tsm_ctx_set_sm_share(ctx, 0.5, &sms), TSM_OK);
    if (tu_on_device(ctx)) {
#ifdef TSMINE_HAVE_CUDA
        int dev, all;
        assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
        assert_int_equal(cudaDeviceGetAttribute(&all, cudaDevAttrMultiProcessorCount, dev),
                         cudaSuccess);
        print_message("confined to %d of %d SMs\n", sms, all);
        assert_true(sms > 0 && sms < all);
#endif
    } else {
        assert_int_equal(sms, 0);
    }
    batch bt;
    b_init(&bt, 3, 128, 128);
    for (size_t b = 0; b < 3; b++) {
        b_window(&bt, b, b + 1, 4096);
        bt.r[b] = r_between(cpu, &bt, b, 0.99);
    }
    b_run(ctx, &bt, 1);
    for (size_t b = 0; b < 3; b++)
        check_against_kernels(cpu, &bt, b, 1);
    b_free(&bt);
    tsm_ctx_destroy(&cpu);
    tsm_ctx_destroy(&ctx);
}

/* Invalid arguments are refused with a message naming the window. */
static void test_rejects(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    double x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    tsm_discord d[10];
    tsm_window_result res[2];
    tsm_window w[2] = {{x, 10, 0.0}, {x, 4, 0.0}};
    assert_int_equal(tsm_window_passes(ctx, w, 2, 5, 5, 1, d, res), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "window 1"));
    assert_int_equal(tsm_window_passes(ctx, w, 1, 2, 2, 1, d, res), TSM_EINVAL);
    assert_int_equal(tsm_window_passes(ctx, w, 1, 3, 0, 1, d, res), TSM_EINVAL);
    w[0].r = NAN;
    assert_int_equal(tsm_window_passes(ctx, w, 1, 3, 3, 1, d, res), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "window 0"));
    assert_int_equal(tsm_window_passes(ctx, w, 0, 3, 3, 1, d, res), TSM_OK);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_lengths), cmocka_unit_test(test_many_small),
        cmocka_unit_test(test_daemon_shape),  cmocka_unit_test(test_confined),
        cmocka_unit_test(test_rejects),
    };
    return TU_RUN_GROUP("window", tests, NULL, NULL);
}
