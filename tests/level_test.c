/* SPDX-License-Identifier: Apache-2.0 */
/* level_test.c - the level view (stream/level.h) against its definition computed by
 * scans (tests/reference: ref_level), as the engine calls it: windows that slide over
 * a series fed in runs of random length, restarts of the window, and the shapes the
 * view is for (spikes, level shifts, changes of scale) beside constant stretches. The
 * values must be equal (both take the min and max of the same samples). */
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
    }
    return t;
}

/* Feeds t (n samples) through a window of W in runs of up to `run` samples, restarting
 * the window now and then, and checks every completed subsequence with a history of at
 * least excl samples. */
static void check(size_t n, uint32_t W, size_t m, size_t excl, uint32_t run) {
    double *t = series(n);
    tss_level l = {0};
    size_t ws = 0, done = 0, checked = 0; /* window start, samples fed */
    while (done < n) {
        size_t k = 1 + (size_t)(tu_uniform() * run);
        k = done + k > n ? n - done : k;
        if (tu_uniform() < 0.03)
            ws = done; /* a restart: the window is empty */
        const size_t fill = done - ws;
        assert_int_equal(tss_level_feed(&l, t + ws, ws, fill, fill + k, W), 0);
        for (size_t e = fill; e < fill + k; e++) { /* x[e] = t[ws + e] */
            const size_t base = e + 1 > W ? e + 1 - W : 0;
            if (e + 1 < m || e + 1 - m < base + excl)
                continue;
            const size_t i = e + 1 - m;
            const double got = tss_level_of(&l, t + ws, ws, base, i, m);
            const double want = ref_level(t + ws, base, i, m);
            if (got != want)
                fail_msg("seed %llu: W %u m %zu sample %zu: level %.17g, reference %.17g",
                         (unsigned long long)tu_seed, W, m, ws + e, got, want);
            checked++;
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
    check(5000, 130, 64, 1, 200); /* m = a block, W not a multiple of one */
}

/* A stream that held one value: any departure is large, none infinite; staying on the
 * value scores 0. */
static void test_level_flat(void **state) {
    (void)state;
    double t[300];
    for (int k = 0; k < 300; k++)
        t[k] = k < 250 ? 5.0 : 5.5;
    tss_level l = {0};
    assert_int_equal(tss_level_feed(&l, t, 0, 0, 300, 300), 0);
    assert_true(tss_level_of(&l, t, 0, 0, 200, 16) == 0.0);
    const double up = tss_level_of(&l, t, 0, 0, 240, 16);
    assert_true(isfinite(up) && up > 1e6);
    tss_level_free(&l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_exact),
        cmocka_unit_test(test_level_flat),
    };
    return TU_RUN_GROUP("level", tests, NULL, NULL);
}
