/* SPDX-License-Identifier: Apache-2.0 */
/* level_test.c - the level view (stream/level.h, stream/slide.h) against its definition
 * computed by scans (tests/reference: ref_level), as the engine calls it: windows that
 * slide over a series fed in runs of random length, restarts of the window (with and
 * without forgetting the runs), queries that move back (the runs start afresh), and the
 * shapes the view is for (spikes, level shifts, changes of scale) beside constant
 * stretches and monotonic stretches (the queues' longest). The values must be equal
 * (both take the min and max of the same samples). */
#include "testutil.h"

#include "level.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>

/* A random walk with spikes, level shifts, scale changes and constant stretches. */
static double *series(size_t n) {
    double *t = tu_series(n);
    for (size_t at = 30; at + 80 < n; at += 50 + (size_t)(tu_uniform() * 300)) {
        const double u = tu_uniform();
        if (u < 0.25)
            tu_fill(t, at, 10 + (size_t)(tu_uniform() * 60), t[at]);
        else if (u < 0.5)
            t[at] += (tu_uniform() < 0.5 ? -1 : 1) * 40.0; /* a spike */
        else if (u < 0.7)
            for (size_t k = at; k < n; k++)
                t[k] += 30.0; /* a level shift */
        else if (u < 0.85)
            for (size_t k = at + 1; k < at + 60; k++)
                t[k] = t[at] + 5.0 * (t[k] - t[at]); /* five times the scale */
        else
            for (size_t k = at + 1; k < at + 70; k++)
                t[k] = t[k - 1] + (u < 0.93 ? 0.5 : -0.5); /* a ramp: monotonic */
    }
    return t;
}

/* The level and width of subsequence i (history from base) by tss_level_at, checked
 * against the scans of the definition. */
static void check_one(tss_level *l, const double *x, uint64_t x0, size_t base, size_t i, size_t m) {
    double width, got;
    assert_int_equal(tss_level_at(l, x, x0, base, i, m, &width, &got), 0);
    const double want = ref_level(x, base, i, m);
    double lo = x[base], hi = x[base];
    for (size_t k = base; k < i; k++)
        lo = fmin(lo, x[k]), hi = fmax(hi, x[k]);
    if (got != want || width != tss_level_width(lo, hi))
        fail_msg("seed %llu: m %zu sample %llu (history from %llu): level %.17g width %.17g, "
                 "reference %.17g width %.17g",
                 (unsigned long long)tu_seed, m, (unsigned long long)(x0 + i),
                 (unsigned long long)(x0 + base), got, width, want, tss_level_width(lo, hi));
}

/* Feeds t (n samples) through a window of W in runs of up to `run` samples, restarting
 * the window now and then (forgetting the runs or not: the samples behind a sequence
 * number do not change here), and checks every completed subsequence with a history of
 * at least excl samples; now and then a query of an earlier subsequence (its runs move
 * back: they start afresh). */
static void check(size_t n, uint32_t W, size_t m, size_t excl, uint32_t run) {
    double *t = series(n);
    tss_level l = {0};
    size_t ws = 0, done = 0, checked = 0; /* window start, samples fed */
    while (done < n) {
        size_t k = 1 + (size_t)(tu_uniform() * run);
        k = done + k > n ? n - done : k;
        if (tu_uniform() < 0.03) {
            ws = done; /* a restart: the window is empty */
            if (tu_uniform() < 0.5)
                tss_level_reset(&l);
        }
        const size_t fill = done - ws;
        for (size_t e = fill; e < fill + k; e++) { /* x[e] = t[ws + e] */
            const size_t base = e + 1 > W ? e + 1 - W : 0;
            if (e + 1 < m || e + 1 - m < base + excl)
                continue;
            check_one(&l, t + ws, ws, base, e + 1 - m, m);
            checked++;
            if (tu_uniform() < 0.002 && e + 1 - m > base + excl) /* back, then on */
                check_one(&l, t + ws, ws, base, base + excl, m);
        }
        done += k;
        /* the window slides: at most W samples stay in it */
        if (done - ws > W)
            ws = done - W;
    }
    assert_true(checked > n / 2);
    tss_level_free(&l);
    free(t);
}

static void test_level_exact(void **state) {
    (void)state;
    tu_case_seed(2828);
    check(tu_quick() ? 6000 : 20000, 256, 16, 4, 90);
    check(tu_quick() ? 6000 : 20000, 1000, 50, 50, 700);
    check(5000, 64, 3, 1, 10);
    check(5000, 130, 64, 1, 200);
    check(3000, 2048, 8, 8, 3000); /* runs longer than the window */
}

/* A stream that held one value: any departure is large, none infinite; staying on the
 * value scores 0. */
static void test_level_flat(void **state) {
    (void)state;
    double t[300];
    for (int k = 0; k < 300; k++)
        t[k] = k < 250 ? 5.0 : 5.5;
    tss_level l = {0};
    double width, level;
    assert_int_equal(tss_level_at(&l, t, 0, 0, 200, 16, &width, &level), 0);
    assert_true(level == 0.0 && width == 5.0 * TSS_LEVEL_FLOOR);
    assert_int_equal(tss_level_at(&l, t, 0, 0, 240, 16, &width, &level), 0);
    assert_true(isfinite(level) && level > 1e6);
    tss_level_free(&l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_exact),
        cmocka_unit_test(test_level_flat),
    };
    return TU_RUN_GROUP("level", tests, NULL, NULL);
}
