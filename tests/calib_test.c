/* SPDX-License-Identifier: Apache-2.0 */
/* calib_test.c - the calibrated score (stream/calib.h) against its definition
 * (tests/reference/score_ref.c: the history sorted afresh for every query).
 *
 * Each case feeds a sequence of raw scores; before each one is added, its score, tail,
 * FAR score and (every 97 steps) the FAR raw score of the threshold must equal the
 * reference's: scores to 1e-12 absolute (the same formulas on the same values,
 * computed incrementally against from scratch). Cases: uniform noise, a noisy level
 * with spikes both ways, mostly exact repeats (below the floor), a drift, a constant
 * then a jump, values on bin edges, and m = 3, 16 and 128. Also: the history rebuilt
 * from its ring scores the same; a noise-free stream never passes; readiness at
 * TSS_CALIB_MIN; non-finite raw scores are ignored; the candidate scaling
 * (tss_calib_comparable) against its definition. */
#include "testutil.h"

#include "calib.h"
#include "score_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

typedef double (*gen_fn)(size_t k, double scale);

static double gen_uniform(size_t k, double scale) {
    (void)k;
    return tu_uniform() * scale;
}

/* A noisy level near 0.4 of the scale, with a spike up or down every ~150 samples. */
static double gen_spiky(size_t k, double scale) {
    double x = 0.4 + 0.03 * tu_normal();
    if (k % 151 == 150)
        x = 0.8 + 0.1 * tu_uniform();
    if (k % 173 == 172)
        x = 0.05 + 0.02 * tu_uniform();
    return x * scale;
}

/* Mostly exact repeats (below the floor), now and then a real distance. */
static double gen_repeats(size_t k, double scale) {
    (void)k;
    return tu_uniform() < 0.9 ? 1e-9 * tu_uniform() * scale : (0.1 + 0.2 * tu_uniform()) * scale;
}

static double gen_drift(size_t k, double scale) {
    return (0.2 + 0.5 * (double)k / 4000.0 + 0.01 * tu_normal()) * scale;
}

/* One value for 1500 samples, then a jump up, then back. */
static double gen_constant_jump(size_t k, double scale) {
    return (k < 1500 ? 0.3 : k < 1510 ? 0.9 : 0.3) * scale;
}

/* Values on bin edges (multiples of scale / BINS) and just below them. */
static double gen_edges(size_t k, double scale) {
    int b = 20 + (int)(tu_uniform() * 800);
    double x = (double)b / TSS_CALIB_BINS * scale;
    return k % 2 ? nextafter(x, 0.0) : x;
}

/* Feeds n raw scores from gen into a calibrator and the reference, comparing before
 * each addition. */
static void run_case(const char *name, gen_fn gen, size_t n, uint32_t m) {
    const double open = 0.997, scale = 2.0 * sqrt((double)m);
    tss_calib *c = malloc(sizeof *c);
    assert_non_null(c);
    tss_calib_init(c, m, open);
    ref_history h = {0};
    double hist[TSS_CALIB_HISTORY];
    size_t passed = 0;
    for (size_t k = 0; k < n; k++) {
        double raw = gen(k, scale);
        size_t hn = ref_history_get(&h, hist);
        int tail = 0;
        double want = ref_score(hist, hn, raw, m, 0, &tail);
        tss_score got = tss_calib_score(c, raw);
        if (fabs(got.score - want) > TOL || (want > 0 && (int)got.tail != tail))
            fail_msg("%s (m %u), step %zu, raw %.17g: score %.17g tail %d, reference %.17g tail %d",
                     name, m, k, raw, got.score, got.tail, want, tail);
        passed += want >= open;
        double far = ref_score(hist, hn, raw, m, 1, NULL);
        if (fabs(tss_calib_score_far(c, raw).score - far) > TOL)
            fail_msg("%s (m %u), step %zu: far score %.17g, reference %.17g", name, m, k,
                     tss_calib_score_far(c, raw).score, far);
        if (k % 97 == 0) { /* the FAR raw of the threshold: lowest bin edge that passes */
            double r = tss_calib_far_raw(c);
            if (isfinite(r)) {
                double at = ref_score(hist, hn, r * (1 + 1e-12), m, 1, NULL);
                double below = ref_score(hist, hn, r * (1 - 1e-9), m, 1, NULL);
                if (at < open || below >= open)
                    fail_msg("%s (m %u), step %zu: far raw %.17g scores %.17g, below it %.17g",
                             name, m, k, r, at, below);
            } else if (hn >= TSS_CALIB_MIN) {
                assert_true(ref_score(hist, hn, scale, m, 1, NULL) < open);
            }
        }
        tss_calib_add(c, raw);
        ref_history_add(&h, raw);
    }
    /* the counts and tails rebuilt from the ring alone score the same */
    tss_calib *d = malloc(sizeof *d);
    assert_non_null(d);
    memcpy(d, c, sizeof *d);
    memset(d->count, 0xff, sizeof d->count);
    d->far = d->near = (tss_calib_tail){0};
    tss_calib_rebuild(d);
    for (int q = 0; q < 200; q++) {
        double raw = gen(n + (size_t)q, scale);
        assert_true(tss_calib_score(d, raw).score == tss_calib_score(c, raw).score);
    }
    assert_memory_equal(d, c, sizeof *d);
    if (gen == gen_spiky) /* its spikes are what the score is for */
        assert_true(passed > 0);
    free(c), free(d);
}

static void test_against_reference(void **state) {
    (void)state;
    tu_case_seed(16);
    const uint32_t ms[] = {3, 16, 128};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        run_case("uniform", gen_uniform, 2500, ms[i]);
        run_case("spiky", gen_spiky, 3000, ms[i]);
        run_case("repeats", gen_repeats, 2000, ms[i]);
        run_case("drift", gen_drift, 2500, ms[i]);
        run_case("constant_jump", gen_constant_jump, 1700, ms[i]);
        run_case("edges", gen_edges, 1500, ms[i]);
    }
}

/* A noise-free stream: its distances are rounding noise, all below the floor. */
static void test_noise_free_never_passes(void **state) {
    (void)state;
    tss_calib *c = malloc(sizeof *c);
    assert_non_null(c);
    tss_calib_init(c, 64, 0.997);
    for (int k = 0; k < 5000; k++) {
        double raw = 1e-7 * (k % 13) + 1e-12 * k;
        if (k > TSS_CALIB_MIN) {
            assert_false(tss_calib_score(c, raw).score >= 0.997);
            assert_true(tss_calib_score(c, raw).score == 0.0);
        }
        tss_calib_add(c, raw);
    }
    /* not even a real distance after it makes the exact repeats look unusual... */
    assert_false(tss_calib_score(c, 1e-8).score >= 0.7);
    /* ...but a real one far beyond them is */
    assert_true(tss_calib_score(c, 4.0).score >= 0.997);
    free(c);
}

static void test_ready_and_nonfinite(void **state) {
    (void)state;
    tss_calib *c = malloc(sizeof *c);
    assert_non_null(c);
    tss_calib_init(c, 16, 0.997);
    for (int k = 0; k < TSS_CALIB_MIN; k++) {
        assert_false(tss_calib_ready(c));
        assert_true(isinf(tss_calib_far_raw(c)));
        assert_false(tss_calib_score(c, 100.0).score >= 0.997);
        tss_calib_add(c, 1.0 + 0.01 * (k % 7));
        tss_calib_add(c, NAN); /* ignored */
        tss_calib_add(c, INFINITY);
    }
    assert_true(tss_calib_ready(c));
    assert_int_equal(c->n, TSS_CALIB_MIN);
    assert_true(tss_calib_score(c, 7.9).score >= 0.997); /* far beyond 1.0 .. 1.06 */
    assert_true(tss_calib_score(c, 7.9).tail == TSS_TAIL_FAR);
    assert_true(tss_calib_score(c, 0.3).tail == TSS_TAIL_NEAR);
    free(c);
}

/* The candidate scaling against the reference: unchanged with a full window's
 * candidates (or more, or none), (n / n_full)^(1 / (TSS_CALIB_DIM m)) below, never an
 * exact repeat made of a raw score that is not one, and the factor it reports. */
static void test_comparable(void **state) {
    (void)state;
    tu_case_seed(12);
    const uint32_t ms[] = {3, 12, 16, 128};
    for (size_t q = 0; q < sizeof ms / sizeof *ms; q++) {
        const uint32_t m = ms[q];
        const uint64_t full = 4096 - 2 * m + 1;
        tss_calib c;
        tss_calib_init(&c, m, 0.997);
        const double scale = 2.0 * sqrt((double)m);
        assert_true(tss_calib_comparable(&c, 1.5, full, full) == 1.5);
        assert_true(tss_calib_comparable(&c, 1.5, full + 9, full) == 1.5);
        assert_true(tss_calib_comparable(&c, 1.5, 0, full) == 1.5);
        assert_true(tss_calib_shrink(&c, full, full) == 1.0);
        double last = 0.0;
        for (uint64_t n = 1; n < full; n += 1 + n / 3) {
            const double raw = (0.03 + 0.9 * tu_uniform()) * scale;
            const double got = tss_calib_comparable(&c, raw, n, full);
            const double want = ref_comparable(raw, m, (double)n, (double)full);
            if (fabs(got - want) > TOL * scale)
                fail_msg("m %u, n %llu: comparable %.17g, reference %.17g", m,
                         (unsigned long long)n, got, want);
            const double f = tss_calib_shrink(&c, n, full);
            assert_true(f > last && f < 1.0); /* more candidates, less scaling */
            last = f;
            if (tss_calib_bin(&c, raw * f)) /* not at the floor: exactly the factor */
                assert_true(got == raw * f);
        }
        /* a raw score just above the floor stays one, however few its candidates */
        const double low = (TSS_CALIB_FLOOR + 1e-3) * scale;
        assert_true(tss_calib_bin(&c, tss_calib_comparable(&c, low, 1, full)) > 0);
        /* an exact repeat stays one */
        assert_int_equal(tss_calib_bin(&c, tss_calib_comparable(&c, 1e-9, 5, full)), 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_noise_free_never_passes),
        cmocka_unit_test(test_ready_and_nonfinite),
        cmocka_unit_test(test_comparable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
