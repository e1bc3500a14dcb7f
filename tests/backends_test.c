/* SPDX-License-Identifier: Apache-2.0 */
/* backends_test.c - the CUDA backend against the CPU backend on the same inputs
 * (DESIGN 2): same profiles, discord sets, motif pairs and neighbour indices, and
 * distances equal within 1e-9 relative to the distance scale. Skips, visibly, where
 * no CUDA device is present.
 *
 * Tolerance: squared distances agree within BK_TOL(m) = 1e-9 * 2m (d2 ranges over
 * [0, 4m]), so a distance d agrees to 1e-9 relative wherever d is not tiny. An index
 * may differ only where the two choices are tied within that tolerance (checked with
 * the reference distance of the other choice). */
#include "testutil.h"

#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "reference.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BK_TOL(m) (1e-9 * 2.0 * (double)(m))

typedef struct {
    tsm_ctx *cpu, *gpu;
    tsm_stats *scpu, *sgpu;
    const double *t;
    size_t n, m, N;
} pair_ctx;

static void open_both(pair_ctx *p, const double *t, size_t n, size_t m) {
    memset(p, 0, sizeof *p);
    assert_int_equal(tsm_ctx_new(&p->cpu, TSM_BACKEND_CPU, NULL), TSM_OK);
    assert_int_equal(tsm_ctx_new(&p->gpu, TSM_BACKEND_CUDA, NULL), TSM_OK);
    assert_int_equal(tsm_stats_new(p->cpu, t, n, m, &p->scpu), TSM_OK);
    if (tsm_stats_new(p->gpu, t, n, m, &p->sgpu) != TSM_OK)
        fail_msg("tsm_stats_new (cuda): %s", tsm_ctx_error(p->gpu));
    p->t = t, p->n = n, p->m = m, p->N = n - m + 1;
    for (size_t i = 0; i < p->N; i++)
        if (p->scpu->kind[i] != p->sgpu->kind[i])
            fail_msg("seed %llu: kind of %zu differs: cpu %d, cuda %d", (unsigned long long)tu_seed,
                     i, p->scpu->kind[i], p->sgpu->kind[i]);
}

static void close_both(pair_ctx *p) {
    tsm_stats_destroy(&p->scpu);
    tsm_stats_destroy(&p->sgpu);
    tsm_ctx_destroy(&p->cpu);
    tsm_ctx_destroy(&p->gpu);
}

/* Two distances agree (both undefined the same way, or d2 within BK_TOL). */
static int same_distance(double a, double b, size_t m) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b))
        return a == b;
    return fabs(a * a - b * b) <= BK_TOL(m);
}

/* Index choices agree, or are tied: the reference distance from i to the other
 * choice equals the chosen distance within tolerance. */
static int same_choice(const pair_ctx *p, size_t i, int64_t a, int64_t b, double d) {
    if (a == b)
        return 1;
    if (a < 0 || b < 0)
        return 0;
    double da = ref_d2(p->t, p->m, i, (size_t)a), db = ref_d2(p->t, p->m, i, (size_t)b);
    return fabs(da - d * d) <= TU_D2_TOL(p->m) && fabs(db - d * d) <= TU_D2_TOL(p->m);
}

static void compare_profiles(pair_ctx *p, size_t excl) {
    size_t N = p->N;
    double *d[4];
    int64_t *ix[4];
    for (int q = 0; q < 4; q++) {
        d[q] = malloc(N * sizeof(double));
        ix[q] = malloc(N * sizeof(int64_t));
    }
    assert_int_equal(tsm_mp(p->cpu, p->scpu, excl, d[0], ix[0], d[1], ix[1]), TSM_OK);
    if (tsm_mp(p->gpu, p->sgpu, excl, d[2], ix[2], d[3], ix[3]) != TSM_OK)
        fail_msg("tsm_mp (cuda): %s", tsm_ctx_error(p->gpu));
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < N; i++) {
            double a = d[side][i], b = d[side + 2][i];
            if (!same_distance(a, b, p->m) || !same_choice(p, i, ix[side][i], ix[side + 2][i], a))
                fail_msg("seed %llu: %s profile at %zu: cpu (%.17g, %lld), cuda (%.17g, %lld)",
                         (unsigned long long)tu_seed, side ? "left" : "two-sided", i, a,
                         (long long)ix[side][i], b, (long long)ix[side + 2][i]);
        }
    for (int q = 0; q < 4; q++)
        free(d[q]), free(ix[q]);
}

static void compare_discords(pair_ctx *p, size_t excl, double r) {
    tsm_discord *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(tsm_pd3_range(p->cpu, p->scpu, excl, r, 0, &a, &na, NULL), TSM_OK);
    if (tsm_pd3_range(p->gpu, p->sgpu, excl, r, 0, &b, &nb, NULL) != TSM_OK)
        fail_msg("tsm_pd3_range (cuda): %s", tsm_ctx_error(p->gpu));
    if (na != nb)
        fail_msg("seed %llu: r = %.17g: %zu range discords on cpu, %zu on cuda",
                 (unsigned long long)tu_seed, r, na, nb);
    for (size_t q = 0; q < na; q++)
        if (a[q].index != b[q].index || !same_distance(a[q].distance, b[q].distance, p->m) ||
            !same_choice(p, (size_t)a[q].index, a[q].neighbor, b[q].neighbor, a[q].distance))
            fail_msg("seed %llu: range discord %zu: cpu (%lld, %.17g, %lld), cuda (%lld, %.17g, "
                     "%lld)",
                     (unsigned long long)tu_seed, q, (long long)a[q].index, a[q].distance,
                     (long long)a[q].neighbor, (long long)b[q].index, b[q].distance,
                     (long long)b[q].neighbor);
    free(a), free(b);

    tsm_discord ta[10], tb[10];
    assert_int_equal(tsm_discords_topk(p->cpu, p->scpu, excl, 10, 0, ta, &na, NULL), TSM_OK);
    if (tsm_discords_topk(p->gpu, p->sgpu, excl, 10, 0, tb, &nb, NULL) != TSM_OK)
        fail_msg("tsm_discords_topk (cuda): %s", tsm_ctx_error(p->gpu));
    assert_int_equal(na, nb);
    for (size_t q = 0; q < na; q++)
        if (ta[q].index != tb[q].index || !same_distance(ta[q].distance, tb[q].distance, p->m))
            fail_msg("seed %llu: top discord %zu: cpu (%lld, %.17g), cuda (%lld, %.17g)",
                     (unsigned long long)tu_seed, q + 1, (long long)ta[q].index, ta[q].distance,
                     (long long)tb[q].index, tb[q].distance);
}

static void compare_motifs(pair_ctx *p, size_t excl, size_t k) {
    tsm_motif a[8], b[8];
    size_t na = 0, nb = 0;
    assert_true(k <= 8);
    assert_int_equal(tsm_mk_motifs(p->cpu, p->scpu, excl, k, 0, TSM_MK_SEED_DEFAULT, a, &na, NULL),
                     TSM_OK);
    if (tsm_mk_motifs(p->gpu, p->sgpu, excl, k, 0, TSM_MK_SEED_DEFAULT, b, &nb, NULL) != TSM_OK)
        fail_msg("tsm_mk_motifs (cuda): %s", tsm_ctx_error(p->gpu));
    assert_int_equal(na, nb);
    for (size_t q = 0; q < na; q++) {
        int same = a[q].a == b[q].a && a[q].b == b[q].b;
        if (!same) { /* a tie within rounding: the other pair is as close */
            double d2 = ref_d2(p->t, p->m, (size_t)b[q].a, (size_t)b[q].b);
            same = fabs(d2 - a[q].distance * a[q].distance) <= TU_D2_TOL(p->m);
        }
        if (!same || !same_distance(a[q].distance, b[q].distance, p->m))
            fail_msg("seed %llu: motif %zu: cpu (%lld, %lld, %.17g), cuda (%lld, %lld, %.17g)",
                     (unsigned long long)tu_seed, q + 1, (long long)a[q].a, (long long)a[q].b,
                     a[q].distance, (long long)b[q].a, (long long)b[q].b, b[q].distance);
    }
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A range between two consecutive nn values at or above the given quantile, with a
 * gap wide enough that the expected set does not depend on rounding. */
static double range_at(pair_ctx *p, size_t excl, double quantile) {
    size_t N = p->N, c = 0;
    double *d = malloc(N * sizeof *d), r = 0.0;
    int64_t *ix = malloc(N * sizeof *ix);
    assert_int_equal(tsm_mp(p->cpu, p->scpu, excl, d, ix, NULL, NULL), TSM_OK);
    for (size_t i = 0; i < N; i++)
        if (isfinite(d[i]))
            d[c++] = d[i];
    qsort(d, c, sizeof *d, cmp_double);
    for (size_t at = (size_t)(quantile * (double)c); at + 1 < c; at++)
        if (d[at + 1] * d[at + 1] - d[at] * d[at] > 4 * TU_D2_TOL(p->m)) {
            r = 0.5 * (d[at] + d[at + 1]);
            break;
        }
    free(d), free(ix);
    return r;
}

static void run_case(uint64_t seed, size_t n, size_t m, int specials) {
    tu_case_seed(seed);
    double *t = tu_series(n);
    tu_plant_anomaly(t, n / 3, m, 20.0);
    if (specials) {
        tu_fill(t, n / 2, 3 * m, 7.0);
        tu_fill(t, n / 2 + 5 * m, 2 * m, 7.0);
        tu_fill(t, n / 5, 4, NAN);
        tu_fill(t, 4 * n / 5, 1, -INFINITY);
    }
    pair_ctx p;
    open_both(&p, t, n, m);
    compare_profiles(&p, m);
    compare_profiles(&p, m / 2 > 0 ? m / 2 : 1);
    compare_discords(&p, m, range_at(&p, m, 0.995));
    compare_discords(&p, m, 0.0);
    compare_motifs(&p, m, 3);
    close_both(&p);
    free(t);
}

static void test_random_walk_small(void **state) {
    (void)state;
    run_case(31, tu_quick() ? 2000 : 3000, 16, 0);
}

static void test_specials(void **state) {
    (void)state;
    run_case(32, tu_quick() ? 2500 : 5000, 32, 1);
}

static void test_larger(void **state) {
    (void)state;
    run_case(33, tu_quick() ? 3000 : 40000, 128, 1);
}

static void test_many_segments(void **state) {
    (void)state;
    run_case(34, tu_quick() ? 6000 : 70000, 8, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walk_small),
        cmocka_unit_test(test_specials),
        cmocka_unit_test(test_larger),
        cmocka_unit_test(test_many_segments),
    };
    tsm_ctx *gpu = NULL;
    const char *why = NULL;
    if (tsm_ctx_new(&gpu, TSM_BACKEND_CUDA, &why) != TSM_OK) {
        print_message("SKIP: backend cuda unavailable: %s\n", why);
        return 0;
    }
    tsm_ctx_destroy(&gpu);
    tu_apply_filter();
    return cmocka_run_group_tests_name("backends", tests, NULL, NULL);
}
