/* SPDX-License-Identifier: Apache-2.0 */
/* period_test.c - the period estimator and the automatic m (kernels/period.h).
 *
 * Periodic series must give their period within PERIOD_TOL (2% of the period, at least
 * one sample): sines of periods 7 to 500, clean and in white noise of standard
 * deviation 0.25, 0.5 and 1 (the sine's amplitude is 1: its variance is 0.5, so the
 * ACF's peaks sit near 0.89, 0.67 and 0.33), several seeds each; square and sawtooth
 * waves; a non-integer period; a sum of two periods where one dominates (either way
 * round); a period on a linear trend; a period with NaN stretches. Series without a
 * period must give 0: random walks (many seeds and lengths), white noise, red noise, a
 * constant, a straight line, a series of NaN. Then edge sizes, rejected arguments, the
 * bounded cost of a long series, tsm_auto_m's clamp and fallback, and the strength of a
 * period (tsm_period_strength) against a direct computation. Failures print
 * the case's seed (rerun with TSM_TEST_SEED=<seed>). */
#include "testutil.h"

#include "period.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TWO_PI 6.283185307179586

/* |got - want| <= max(1, 2% of want). */
static int period_ok(uint32_t got, double want) {
    return fabs((double)got - want) <= fmax(1.0, 0.02 * want);
}

static tsm_ctx *cpu_ctx(void) {
    tsm_ctx *ctx = NULL;
    assert_int_equal(tsm_ctx_new(&ctx, TSM_BACKEND_CPU, NULL), TSM_OK);
    return ctx;
}

static uint32_t estimate(const double *x, size_t n, uint32_t lo, uint32_t hi) {
    tsm_ctx *ctx = cpu_ctx();
    uint32_t p = 12345;
    tsm_status st = tsm_period_estimate(ctx, x, n, lo, hi, &p);
    if (st != TSM_OK)
        fail_msg("seed %llu: %s", (unsigned long long)tu_seed, tsm_ctx_error(ctx));
    tsm_ctx_destroy(&ctx);
    return p;
}

/* x[i] = sin(2 pi i / P + phase) + sigma * N(0, 1), phase at random. */
static void noisy_sine(double *x, size_t n, double P, double sigma) {
    double phase = TWO_PI * tu_uniform();
    for (size_t i = 0; i < n; i++)
        x[i] = sin(TWO_PI * (double)i / P + phase) + sigma * tu_normal();
}

static void expect_period(const double *x, size_t n, double want, const char *what) {
    uint32_t got = estimate(x, n, 2, 2048);
    if (!period_ok(got, want))
        fail_msg("%s: period %u, want %g (seed %llu)", what, got, want,
                 (unsigned long long)tu_seed);
}

static void expect_none(const double *x, size_t n, const char *what) {
    uint32_t got = estimate(x, n, 2, 2048);
    if (got != 0)
        fail_msg("%s (n = %zu): period %u, want none (seed %llu)", what, n, got,
                 (unsigned long long)tu_seed);
}

/* Sines of periods 7..500, 30 periods or 2000 samples (whichever is longer), clean and
 * noisy, five seeds each. */
static void test_sines(void **state) {
    (void)state;
    static const double periods[] = {7, 24, 48, 100, 288, 500};
    static const double sigmas[] = {0, 0.25, 0.5, 1.0};
    for (size_t a = 0; a < sizeof periods / sizeof *periods; a++)
        for (size_t b = 0; b < sizeof sigmas / sizeof *sigmas; b++)
            for (uint64_t s = 0; s < 5; s++) {
                double P = periods[a];
                size_t n = (size_t)fmax(30 * P, 2000);
                double *x = malloc(n * sizeof *x);
                assert_non_null(x);
                tu_case_seed(1000 * a + 100 * b + s);
                noisy_sine(x, n, P, sigmas[b]);
                char what[64];
                snprintf(what, sizeof what, "sine P = %g, noise %g", P, sigmas[b]);
                expect_period(x, n, P, what);
                free(x);
            }
}

/* A sine with just enough periods in view: 6 clean ones, 10 in noise; with 5 or fewer
 * the hill at twice the period, which confirms it, is out of view (period.h). */
static void test_few_periods(void **state) {
    (void)state;
    double x[1000];
    tu_case_seed(7);
    noisy_sine(x, 600, 100, 0);
    expect_period(x, 600, 100, "6 clean periods");
    noisy_sine(x, 1000, 100, 0.5);
    expect_period(x, 1000, 100, "10 noisy periods");
    noisy_sine(x, 599, 100, 0);
    expect_none(x, 599, "5.99 clean periods");
}

/* Square, sawtooth, a non-integer period, a narrow pulse train (ECG-like). */
static void test_shapes(void **state) {
    (void)state;
    size_t n = 3000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tu_case_seed(11);
    for (size_t i = 0; i < n; i++)
        x[i] = (i % 50 < 25 ? 1.0 : -1.0) + 0.2 * tu_normal();
    expect_period(x, n, 50, "square wave P = 50");
    for (size_t i = 0; i < n; i++)
        x[i] = (double)(i % 137) / 137.0 + 0.05 * tu_normal();
    expect_period(x, n, 137, "sawtooth P = 137");
    noisy_sine(x, n, 24.5, 0.1);
    expect_period(x, n, 24.5, "sine P = 24.5");
    for (size_t i = 0; i < n; i++) /* a spike of 5 samples every 90, a little jitter */
        x[i] = 0.05 * tu_normal();
    for (size_t beat = 10; beat + 5 < n; beat += 90 + (size_t)(3 * tu_uniform()) - 1)
        for (size_t k = 0; k < 5; k++)
            x[beat + k] += (k == 2 ? 3.0 : 1.0);
    expect_period(x, n, 90, "pulse train P = 90");
    free(x);
}

/* Two periods: the stronger one wins, and the shorter one wins when nearly as strong. */
static void test_two_periods(void **state) {
    (void)state;
    size_t n = 4000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tu_case_seed(13);
    for (size_t i = 0; i < n; i++)
        x[i] = sin(TWO_PI * i / 24.0) + 0.3 * sin(TWO_PI * i / 168.0) + 0.2 * tu_normal();
    expect_period(x, n, 24, "24 strong, 168 weak");
    for (size_t i = 0; i < n; i++)
        x[i] = 0.3 * sin(TWO_PI * i / 24.0) + sin(TWO_PI * i / 168.0) + 0.2 * tu_normal();
    expect_period(x, n, 168, "24 weak, 168 strong");
    free(x);
}

/* A period on a steep trend, and with NaN stretches (10% of the samples). */
static void test_trend_and_gaps(void **state) {
    (void)state;
    size_t n = 5000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tu_case_seed(17);
    noisy_sine(x, n, 60, 0.3);
    for (size_t i = 0; i < n; i++)
        x[i] += 0.05 * (double)i + 1e4; /* rises 250, 500 times the amplitude */
    expect_period(x, n, 60, "sine P = 60 on a trend");
    noisy_sine(x, n, 60, 0.3);
    for (size_t at = 100; at + 50 < n; at += 500)
        tu_fill(x, at, 50, NAN);
    tu_fill(x, 0, 3, INFINITY);
    expect_period(x, n, 60, "sine P = 60 with NaN stretches");
    free(x);
}

/* Random walks of several lengths, 30 seeds each. */
static void test_random_walks(void **state) {
    (void)state;
    static const size_t sizes[] = {100, 300, 1000, 3000, 10000};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (uint64_t s = 0; s < 30; s++) {
            size_t n = sizes[a];
            double *x = malloc(n * sizeof *x);
            assert_non_null(x);
            tu_case_seed(5000 + 100 * a + s);
            tu_random_walk(x, n);
            expect_none(x, n, "random walk");
            free(x);
        }
}

/* White noise, red noise (AR(1), phi = 0.95), a random walk plus noise. */
static void test_noise(void **state) {
    (void)state;
    static const size_t sizes[] = {60, 200, 1000, 10000};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (uint64_t s = 0; s < 10; s++) {
            size_t n = sizes[a];
            double *x = malloc(n * sizeof *x);
            assert_non_null(x);
            tu_case_seed(7000 + 100 * a + s);
            for (size_t i = 0; i < n; i++)
                x[i] = tu_normal();
            expect_none(x, n, "white noise");
            x[0] = tu_normal();
            for (size_t i = 1; i < n; i++)
                x[i] = 0.95 * x[i - 1] + tu_normal();
            expect_none(x, n, "AR(1) 0.95");
            tu_random_walk(x, n);
            for (size_t i = 0; i < n; i++)
                x[i] += 2.0 * tu_normal();
            expect_none(x, n, "random walk plus noise");
            free(x);
        }
}

/* Constants, straight lines (also far from 0), all-NaN, one finite sample. */
static void test_flat(void **state) {
    (void)state;
    size_t n = 1000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tu_fill(x, 0, n, 3.5);
    expect_none(x, n, "constant");
    tu_fill(x, 0, n, 1e12);
    expect_none(x, n, "constant 1e12");
    for (size_t i = 0; i < n; i++)
        x[i] = 1e6 + 0.37 * (double)i;
    expect_none(x, n, "straight line");
    tu_fill(x, 100, 200, NAN);
    expect_none(x, n, "straight line with a gap");
    tu_fill(x, 0, n, NAN);
    expect_none(x, n, "all NaN");
    x[500] = 1.0;
    expect_none(x, n, "one finite sample");
    free(x);
}

/* Too few samples for six periods of min_p: 0, not an error; n = 0 with x NULL. A
 * period below min_p shows as its first multiple in range. */
static void test_sizes(void **state) {
    (void)state;
    double x[300];
    tu_case_seed(19);
    noisy_sine(x, 300, 10, 0);
    assert_int_equal(estimate(NULL, 0, 2, 100), 0);
    assert_int_equal(estimate(x, 1, 2, 100), 0);
    assert_int_equal(estimate(x, 59, 10, 100), 0); /* 6 * min_p = 60 > 59 */
    assert_int_equal(estimate(x, 60, 10, 100), 10);
    assert_int_equal(estimate(x, 300, 10, 10), 10);
    assert_int_equal(estimate(x, 300, 15, 100), 20); /* period 10, min_p 15 */
    assert_int_equal(estimate(x, 300, 2, 8), 0);     /* period 10 > max_p, no multiple */
}

/* Arguments that are rejected, each with a message. */
static void test_rejects(void **state) {
    (void)state;
    tsm_ctx *ctx = cpu_ctx();
    double x[100] = {0};
    uint32_t p = 7, m = 7;
    assert_int_equal(tsm_period_estimate(ctx, x, 100, 20, 10, &p), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "[20, 10]"));
    assert_int_equal(p, 0);
    assert_int_equal(tsm_period_estimate(ctx, x, 100, 1, 10, &p), TSM_EINVAL);
    assert_int_equal(tsm_period_estimate(ctx, x, 100, 2, TSM_PERIOD_MAX_LAG + 1u, &p), TSM_EINVAL);
    assert_int_equal(tsm_period_estimate(ctx, NULL, 100, 2, 10, &p), TSM_EINVAL);
    assert_int_equal(tsm_period_estimate(ctx, x, 100, 2, 10, NULL), TSM_EINVAL);
    assert_int_equal(tsm_auto_m(ctx, x, 100, 2, 10, 5, &m, NULL), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "min_m"));
    assert_int_equal(tsm_auto_m(ctx, x, 100, 8, 4, 5, &m, NULL), TSM_EINVAL);
    assert_int_equal(tsm_auto_m(ctx, x, 100, 8, 40, 5, NULL, NULL), TSM_EINVAL);
    assert_int_equal(tsm_period_estimate(NULL, x, 100, 20, 10, &p), TSM_EINVAL); /* no ctx */
    tsm_ctx_destroy(&ctx);
}

/* 10^6 samples: estimated on a bounded prefix (kernels/period.h), and still right.
 * How long it takes is a benchmark's business (docs/detection.md gives the figure). */
static void test_long_series(void **state) {
    (void)state;
    size_t n = 1000000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tu_case_seed(23);
    noisy_sine(x, n, 300, 0.5);
    expect_period(x, n, 300, "10^6 samples, P = 300");
    free(x);
}

/* tsm_auto_m: the period when there is one, else the fallback; both within the range. */
static void test_auto_m(void **state) {
    (void)state;
    tsm_ctx *ctx = cpu_ctx();
    size_t n = 3000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    uint32_t m = 0, p = 0;
    tu_case_seed(29);
    noisy_sine(x, n, 96, 0.3);
    assert_int_equal(tsm_auto_m(ctx, x, n, 8, 500, 100, &m, &p), TSM_OK);
    assert_true(period_ok(m, 96) && m == p);
    assert_int_equal(tsm_auto_m(ctx, x, n, 8, 500, 100, &m, NULL), TSM_OK); /* period optional */
    assert_true(period_ok(m, 96));
    assert_int_equal(tsm_auto_m(ctx, x, n, 8, 50, 100, &m, &p), TSM_OK); /* period above range */
    assert_int_equal(p, 0);
    assert_int_equal(m, 50); /* the fallback, clamped */
    tu_random_walk(x, n);
    assert_int_equal(tsm_auto_m(ctx, x, n, 8, 500, 100, &m, &p), TSM_OK);
    assert_int_equal(p, 0);
    assert_int_equal(m, 100);
    assert_int_equal(tsm_auto_m(ctx, x, n, 8, 500, 3, &m, &p), TSM_OK);
    assert_int_equal(m, 8); /* the fallback, clamped up */
    assert_int_equal(tsm_auto_m(ctx, x, 10, 8, 500, 100, &m, &p), TSM_OK); /* too short */
    assert_int_equal(p, 0);
    assert_int_equal(m, 100);
    free(x);
    tsm_ctx_destroy(&ctx);
}

/* The strength of a period: the detrended autocorrelation at the lag, checked against a
 * direct computation; near 1 for a clean sine at its period, near -1 at half of it,
 * near 0 for noise; 0 for constants and lags out of range; NaN stretches left out. */
static void test_strength(void **state) {
    (void)state;
    tu_case_seed(61);
    const size_t n = 3000;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    tsm_ctx *ctx = cpu_ctx();
    double r;
    for (size_t k = 0; k < n; k++)
        x[k] = sin(TWO_PI * (double)k / 50.0) + 0.001 * (double)k; /* a trend, detrended */
    assert_int_equal(tsm_period_strength(ctx, x, n, 50, &r), TSM_OK);
    assert_true(r > 0.98);
    assert_int_equal(tsm_period_strength(ctx, x, n, 25, &r), TSM_OK);
    assert_true(r < -0.98);
    for (size_t k = 0; k < n; k++)
        x[k] = tu_normal() + (k >= 1000 && k < 1100 ? NAN : 0.0);
    assert_int_equal(tsm_period_strength(ctx, x, n, 40, &r), TSM_OK);
    assert_true(fabs(r) < 0.1);
    /* against the sums straight from the definition (x finite here) */
    for (size_t k = 0; k < n; k++)
        x[k] = sin(TWO_PI * (double)k / 37.0) + 0.7 * tu_normal();
    double mx = 0, mt = 0, sxt = 0, stt = 0;
    for (size_t k = 0; k < n; k++)
        mx += x[k], mt += (double)k;
    mx /= (double)n, mt /= (double)n;
    for (size_t k = 0; k < n; k++)
        sxt += ((double)k - mt) * (x[k] - mx), stt += ((double)k - mt) * ((double)k - mt);
    double *y = malloc(n * sizeof *y), c0 = 0, c1 = 0;
    assert_non_null(y);
    for (size_t k = 0; k < n; k++)
        y[k] = x[k] - mx - sxt / stt * ((double)k - mt), c0 += y[k] * y[k];
    for (size_t k = 0; k + 37 < n; k++)
        c1 += y[k] * y[k + 37];
    double want = (c1 / (double)(n - 37)) / (c0 / (double)n);
    assert_int_equal(tsm_period_strength(ctx, x, n, 37, &r), TSM_OK);
    if (fabs(r - want) > 1e-9)
        fail_msg("strength %.17g, direct %.17g", r, want);
    for (size_t k = 0; k < n; k++)
        x[k] = 3.0;
    assert_int_equal(tsm_period_strength(ctx, x, n, 10, &r), TSM_OK);
    assert_true(r == 0.0);
    assert_int_equal(tsm_period_strength(ctx, x, 5, 10, &r), TSM_OK); /* lag >= n */
    assert_true(r == 0.0);
    assert_int_equal(tsm_period_strength(ctx, NULL, n, 10, &r), TSM_EINVAL);
    assert_int_equal(tsm_period_strength(ctx, x, n, 10, NULL), TSM_EINVAL);
    free(x), free(y);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sines),          cmocka_unit_test(test_few_periods),
        cmocka_unit_test(test_shapes),         cmocka_unit_test(test_two_periods),
        cmocka_unit_test(test_trend_and_gaps), cmocka_unit_test(test_random_walks),
        cmocka_unit_test(test_noise),          cmocka_unit_test(test_flat),
        cmocka_unit_test(test_sizes),          cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_long_series),    cmocka_unit_test(test_auto_m),
        cmocka_unit_test(test_strength),
    };
    tu_apply_filter();
    return cmocka_run_group_tests_name("period", tests, NULL, NULL);
}
