/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.c - see testutil.h. */
#include "testutil.h"

#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t tu_seed;
static uint64_t rng_state;

int tu_quick(void) {
    const char *env = getenv("TSM_TEST_QUICK");
    return env && *env && strcmp(env, "0") != 0;
}

void tu_apply_filter(void) {
    const char *env = getenv("TSM_TEST_FILTER");
    if (env && *env)
        cmocka_set_test_filter(env);
}

uint64_t tu_case_seed(uint64_t base) {
    const char *env = getenv("TSM_TEST_SEED");
    tu_seed = env && *env ? strtoull(env, NULL, 0) : base;
    tu_rng_init(tu_seed);
    return tu_seed;
}

void tu_rng_init(uint64_t seed) {
    rng_state = seed;
}

static uint64_t next_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_uniform(void) {
    return (double)(next_u64() >> 11) * 0x1.0p-53;
}

double tu_normal(void) {
    double u = tu_uniform(), v = tu_uniform();
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

void tu_random_walk(double *t, size_t n) {
    double x = 0;
    for (size_t k = 0; k < n; k++)
        t[k] = (x += tu_normal());
}

void tu_plant_anomaly(double *t, size_t at, size_t len, double amplitude) {
    /* white noise: its z-normalised shape is far from any stretch of a random walk,
     * and two planted bursts are far from each other */
    double base = t[at];
    for (size_t k = 0; k < len; k++)
        t[at + k] = base + amplitude * tu_normal();
}

void tu_fill(double *t, size_t at, size_t len, double value) {
    for (size_t k = 0; k < len; k++)
        t[at + k] = value;
}

double *tu_series(size_t n) {
    double *t = malloc(n * sizeof *t);
    assert_non_null(t);
    tu_random_walk(t, n);
    return t;
}

/* The backend TSM_TEST_BACKEND asks for (cpu when unset). */
static tsm_backend wanted_backend(void) {
    const char *env = getenv("TSM_TEST_BACKEND");
    tsm_backend want = TSM_BACKEND_CPU;
    if (env && *env && tsm_backend_parse(env, &want) != 0)
        fail_msg("TSM_TEST_BACKEND=%s: expected auto, cpu or cuda", env);
    return want;
}

/* Creates the ctx under test; NULL and the reason when the backend is unavailable. */
static tsm_ctx *try_ctx(const char **why) {
    tsm_ctx *ctx = NULL;
    tsm_status st = tsm_ctx_new(&ctx, wanted_backend(), why);
    if (st == TSM_EBACKEND)
        return NULL;
    assert_int_equal(st, TSM_OK);
    return ctx;
}

/* Set once a ctx of the wanted backend was created: from then on a backend that fails
 * to open is a failure (e.g. a CUDA error poisoned the process), never a skip. */
static int backend_seen;

int tu_backend_available(void) {
    const char *why = NULL;
    tsm_ctx *ctx = try_ctx(&why);
    if (!ctx && backend_seen)
        fail_msg("backend %s opened before but fails now: %s", tsm_backend_name(wanted_backend()),
                 why);
    if (!ctx) {
        print_message("SKIP: backend %s unavailable: %s\n", tsm_backend_name(wanted_backend()),
                      why);
        return 0;
    }
    backend_seen = 1;
    tsm_ctx_destroy(&ctx);
    return 1;
}

tsm_ctx *tu_ctx(void) {
    const char *why = NULL;
    tsm_ctx *ctx = try_ctx(&why);
    if (!ctx && backend_seen)
        fail_msg("backend %s opened before but fails now: %s", tsm_backend_name(wanted_backend()),
                 why);
    if (ctx)
        backend_seen = 1;
    if (!ctx) {
        print_message("SKIP: backend %s unavailable: %s\n", tsm_backend_name(wanted_backend()),
                      why);
        skip();
    }
    return ctx;
}

/* Whether choosing j as i's neighbour is as good as the reference's best (d2 within
 * tolerance), j being an eligible neighbour. */
static int tied_neighbour(const double *t, size_t m, size_t N, size_t excl, int left, size_t i,
                          int64_t j, double ref_d) {
    if (j < 0 || (size_t)j >= N)
        return 0;
    size_t gap = i > (size_t)j ? i - (size_t)j : (size_t)j - i;
    if (gap < excl || (left && (size_t)j > i))
        return 0;
    double d2 = ref_d2(t, m, i, (size_t)j);
    return !isnan(d2) && fabs(d2 - ref_d * ref_d) <= TU_D2_TOL(m);
}

static void check_distance(double got, double want, size_t m, const char *what, size_t i) {
    if (isnan(want)) {
        if (!isnan(got))
            fail_msg("seed %llu: %s %zu: got %.17g, want NAN (non-finite subsequence)",
                     (unsigned long long)tu_seed, what, i, got);
        return;
    }
    if (isinf(want)) {
        if (!isinf(got))
            fail_msg("seed %llu: %s %zu: got %.17g, want +inf (no eligible neighbour)",
                     (unsigned long long)tu_seed, what, i, got);
        return;
    }
    if (!(fabs(got * got - want * want) <= TU_D2_TOL(m)))
        fail_msg("seed %llu: %s %zu: got distance %.17g, want %.17g (d2 tolerance %g)",
                 (unsigned long long)tu_seed, what, i, got, want, TU_D2_TOL(m));
}

void tu_check_profile(const double *t, size_t n, size_t m, size_t excl, const double *dist,
                      const int64_t *index, const double *ref_dist, int left) {
    size_t N = n - m + 1;
    const char *what = left ? "left profile at" : "profile at";
    for (size_t i = 0; i < N; i++) {
        check_distance(dist[i], ref_dist[i], m, what, i);
        if (!isfinite(ref_dist[i])) {
            if (index[i] != -1)
                fail_msg("seed %llu: %s %zu: neighbour %lld, want -1", (unsigned long long)tu_seed,
                         what, i, (long long)index[i]);
            continue;
        }
        if (!tied_neighbour(t, m, N, excl, left, i, index[i], ref_dist[i]))
            fail_msg("seed %llu: %s %zu: neighbour %lld is not a nearest non-self-match "
                     "(nn %.17g)",
                     (unsigned long long)tu_seed, what, i, (long long)index[i], ref_dist[i]);
    }
}

void tu_check_range_discords(const double *t, size_t m, size_t excl, const double *ref_dist,
                             size_t N, double r, const tsm_discord *got, size_t ngot) {
    size_t want = 0;
    for (size_t i = 0; i < N; i++)
        want += isfinite(ref_dist[i]) && ref_dist[i] >= r;
    for (size_t q = 0; q < ngot; q++) {
        size_t i = (size_t)got[q].index;
        if (got[q].index < 0 || i >= N)
            fail_msg("seed %llu: discord index %lld out of range", (unsigned long long)tu_seed,
                     (long long)got[q].index);
        if (q > 0 && got[q].index <= got[q - 1].index)
            fail_msg("seed %llu: range discords not ordered by index at %zu",
                     (unsigned long long)tu_seed, q);
        if (!(isfinite(ref_dist[i]) && ref_dist[i] >= r))
            fail_msg("seed %llu: %zu reported as a discord for r = %.17g but nn = %.17g",
                     (unsigned long long)tu_seed, i, r, ref_dist[i]);
        check_distance(got[q].distance, ref_dist[i], m, "discord", i);
        if (!tied_neighbour(t, m, N, excl, 0, i, got[q].neighbor, ref_dist[i]))
            fail_msg("seed %llu: discord %zu: neighbour %lld is not nearest",
                     (unsigned long long)tu_seed, i, (long long)got[q].neighbor);
    }
    if (ngot != want)
        fail_msg("seed %llu: %zu range discords for r = %.17g, want %zu",
                 (unsigned long long)tu_seed, ngot, r, want);
}

void tu_check_topk_discords(const double *t, size_t m, size_t excl, const double *ref_dist,
                            size_t N, const tsm_discord *want, size_t nwant, const tsm_discord *got,
                            size_t ngot) {
    if (ngot != nwant)
        fail_msg("seed %llu: %zu top discords, want %zu", (unsigned long long)tu_seed, ngot, nwant);
    for (size_t q = 0; q < ngot; q++) {
        size_t i = (size_t)got[q].index;
        if (got[q].index < 0 || i >= N)
            fail_msg("seed %llu: discord index %lld out of range", (unsigned long long)tu_seed,
                     (long long)got[q].index);
        check_distance(got[q].distance, want[q].distance, m, "top discord rank", q + 1);
        if (got[q].index != want[q].index &&
            !(fabs(ref_dist[i] * ref_dist[i] - want[q].distance * want[q].distance) <=
              TU_D2_TOL(m)))
            fail_msg("seed %llu: top discord rank %zu: index %lld, want %lld",
                     (unsigned long long)tu_seed, q + 1, (long long)got[q].index,
                     (long long)want[q].index);
        if (!tied_neighbour(t, m, N, excl, 0, i, got[q].neighbor, ref_dist[i]))
            fail_msg("seed %llu: top discord %zu: neighbour %lld is not nearest",
                     (unsigned long long)tu_seed, i, (long long)got[q].neighbor);
    }
}

void tu_check_motifs(const double *t, size_t m, size_t excl, const tsm_motif *want, size_t nwant,
                     const tsm_motif *got, size_t ngot) {
    if (ngot != nwant)
        fail_msg("seed %llu: %zu motifs, want %zu", (unsigned long long)tu_seed, ngot, nwant);
    for (size_t q = 0; q < ngot; q++) {
        const tsm_motif *g = &got[q], *w = &want[q];
        if (!(g->a < g->b) || (size_t)(g->b - g->a) < excl)
            fail_msg("seed %llu: motif rank %zu: pair (%lld, %lld) is not a non-self-match a < b",
                     (unsigned long long)tu_seed, q + 1, (long long)g->a, (long long)g->b);
        check_distance(g->distance, w->distance, m, "motif rank", q + 1);
        if (g->a != w->a || g->b != w->b) {
            double d2 = ref_d2(t, m, (size_t)g->a, (size_t)g->b);
            if (!(fabs(d2 - w->distance * w->distance) <= TU_D2_TOL(m)))
                fail_msg("seed %llu: motif rank %zu: pair (%lld, %lld) d=%.17g, want (%lld, "
                         "%lld) d=%.17g",
                         (unsigned long long)tu_seed, q + 1, (long long)g->a, (long long)g->b,
                         sqrt(d2), (long long)w->a, (long long)w->b, w->distance);
        }
    }
}
