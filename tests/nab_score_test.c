/* SPDX-License-Identifier: Apache-2.0 */
/* nab_score_test.c - the NAB scoring rules (lib/nab_score.h) on small cases whose
 * expected numbers are worked out by hand in the comments.
 *
 * Notation: S(y) = 2 / (1 + exp(5 y)) - 1 = -tanh(2.5 y), so S(-1) = tanh(2.5) =
 * 0.98661429815; a hit at row i of a window [a, b] of width w earns
 * tp S(-(b - i + 1) / w) / S(-1); a false detection after a window [a', b'] costs
 * fp S((i - b') / (w' - 1)), before any window -fp; a missed window -fn. Profiles:
 * standard (1, 0.11, 1), reward_low_FP_rate (1, 0.22, 1), reward_low_FN_rate
 * (1, 0.11, 2). Tolerance: 1e-12 absolute, except where a case says "exactly". */
#include "testutil.h"

#include "lib/nab_score.h"

#include <math.h>
#include <string.h>

#define TOL 1e-12
#define N   100

/* Fails the case, printing both numbers, unless |a - b| <= tol. */
#define assert_near(a, b, tol) near_((a), (b), (tol), __FILE__, __LINE__)
static void near_(double a, double b, double tol, const char *file, int line) {
    if (!(fabs(a - b) <= tol)) {
        print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
        _fail(file, line);
    }
}

static const nab_profile *standard = &nab_profiles[0];
static const nab_profile *low_fp = &nab_profiles[1];
static const nab_profile *low_fn = &nab_profiles[2];

/* A file of N rows with the given windows and probation. */
static nab_file file_of(const nab_window *w, size_t n_windows, size_t probation) {
    return (nab_file){N, probation, w, n_windows};
}

/* Scores f with detections at the rows listed (ended by -1) under p. */
static nab_counts score_rows(const nab_file *f, const nab_profile *p, const int *rows) {
    unsigned char det[N] = {0};
    for (; *rows >= 0; rows++)
        det[*rows] = 1;
    nab_counts c;
    nab_score_file(f, p, det, &c);
    return c;
}

static void test_profiles(void **state) {
    (void)state;
    assert_string_equal(standard->name, "standard");
    assert_true(standard->tp == 1.0 && standard->fp == 0.11 && standard->fn == 1.0);
    assert_string_equal(low_fp->name, "reward_low_FP_rate");
    assert_true(low_fp->tp == 1.0 && low_fp->fp == 0.22 && low_fp->fn == 1.0);
    assert_string_equal(low_fn->name, "reward_low_FN_rate");
    assert_true(low_fn->tp == 1.0 && low_fn->fp == 0.11 && low_fn->fn == 2.0);
}

/* S(-1) = tanh(2.5), S(0) = 0, S(1) = -tanh(2.5); -1 exactly from y = 3 on. */
static void test_scaled_sigmoid(void **state) {
    (void)state;
    assert_near(nab_scaled_sigmoid(-1.0), tanh(2.5), TOL);
    assert_near(nab_scaled_sigmoid(0.0), 0.0, TOL);
    assert_near(nab_scaled_sigmoid(1.0), -tanh(2.5), TOL);
    assert_near(nab_scaled_sigmoid(2.999), -tanh(7.4975), TOL); /* -0.99999939 */
    assert_true(nab_scaled_sigmoid(3.0) == -1.0);
    assert_true(nab_scaled_sigmoid(50.0) == -1.0);
}

/* min(floor(0.15 n), 0.15 * 5000 = 750) rows: 100 -> 15; 4032 -> floor(604.8) = 604;
 * 10 -> floor(1.5) = 1; 22695 -> 750 (the cap); a fraction of 0 -> none; 0.1234 of
 * 10^6 rows -> the cap 617, as 0.1234 * 5000 = 617 (rows i < 617); 0.12345 of 10^6
 * rows -> rows i < 617.25, 618 of them. */
static void test_probation(void **state) {
    (void)state;
    assert_int_equal(nab_probation(100, 0.15), 15);
    assert_int_equal(nab_probation(4032, 0.15), 604);
    assert_int_equal(nab_probation(10, 0.15), 1);
    assert_int_equal(nab_probation(22695, 0.15), 750);
    assert_int_equal(nab_probation(5000, 0.15), 750);
    assert_int_equal(nab_probation(100, 0.0), 0);
    assert_int_equal(nab_probation(0, 0.15), 0);
    assert_int_equal(nab_probation(1000000, 0.1234), 617);
    assert_int_equal(nab_probation(1000000, 0.12345), 618);
}

/* Window [40, 49] (w = 10) hit at its first row: position -(49 - 40 + 1) / 10 = -1, so
 * S(-1) / S(-1) * tp = tp, exactly 1. */
static void test_hit_first_row(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    for (int p = 0; p < NAB_N_PROFILES; p++) {
        nab_counts c = score_rows(&f, &nab_profiles[p], (const int[]){40, -1});
        assert_true(c.raw == nab_profiles[p].tp);
        assert_int_equal(c.windows, 1);
        assert_int_equal(c.windows_hit, 1);
        assert_int_equal(c.detections, 1);
        assert_int_equal(c.in_windows, 1);
        assert_int_equal(c.false_detections, 0);
    }
}

/* Hit at the last row 49: position -1/10, S(-0.1) / S(-1) = tanh(0.25) / tanh(2.5) =
 * 0.24491866 / 0.98661430 = 0.24824155. At row 45: -(49 - 45 + 1) / 10 = -0.5,
 * tanh(1.25) / tanh(2.5) = 0.84828364 / 0.98661430 = 0.85979257. */
static void test_hit_last_row(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    assert_near(score_rows(&f, standard, (const int[]){49, -1}).raw, tanh(0.25) / tanh(2.5), TOL);
    assert_near(score_rows(&f, standard, (const int[]){49, -1}).raw, 0.24824154977542992, TOL);
    assert_near(score_rows(&f, standard, (const int[]){45, -1}).raw, 0.8597925669097837, TOL);
}

/* A detection at row 10, before the only window [40, 49], costs -fp; the window is
 * missed (-fn): -0.11 - 1 = -1.11 standard, -0.22 - 1 = -1.22 low FP rate. */
static void test_fp_before_any_window(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    nab_counts c = score_rows(&f, standard, (const int[]){10, -1});
    assert_near(c.raw, -1.11, TOL);
    assert_int_equal(c.false_detections, 1);
    assert_int_equal(c.windows_hit, 0);
    assert_near(score_rows(&f, low_fp, (const int[]){10, -1}).raw, -1.22, TOL);
    /* no windows at all: just -fp */
    nab_file none = file_of(NULL, 0, 0);
    assert_near(score_rows(&none, standard, (const int[]){10, -1}).raw, -0.11, TOL);
}

/* Window [40, 49] hit at 40 (+1), then a detection at row 50: position
 * (50 - 49) / (10 - 1) = 1/9, S(1/9) = -tanh(5/18) = -0.27084712, times fp 0.11:
 * -0.02979318; raw 0.97020682. At row 76 = 49 + 3 * 9 the position is 3: the full
 * -0.11. After a window one row wide ([40, 40]) a detection at 41 costs the full -fp. */
static void test_fp_after_window(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    assert_near(score_rows(&f, standard, (const int[]){40, 50, -1}).raw, 0.9702068169631607, TOL);
    assert_near(score_rows(&f, standard, (const int[]){40, 76, -1}).raw, 1.0 - 0.11, TOL);
    size_t k = 0;
    assert_near(nab_detection_weight(&f, standard, 50, &k), -0.029793183036839352, TOL);
    assert_int_equal(k, NAB_NO_ROW);
    assert_near(nab_detection_weight(&f, standard, 40, &k), 1.0, TOL);
    assert_int_equal(k, 0);
    const nab_window one[] = {{40, 40}};
    nab_file f1 = file_of(one, 1, 0);
    assert_near(score_rows(&f1, standard, (const int[]){41, -1}).raw, -1.0 - 0.11, TOL);
}

/* Between windows [20, 29] and [60, 69], a detection at 35 is measured from the window
 * before it: (35 - 29) / 9 = 2/3, S(2/3) = -tanh(5/3) = -0.93110961, times 0.11 =
 * -0.10242206; with both windows missed: -2.10242206. */
static void test_fp_between_windows(void **state) {
    (void)state;
    const nab_window w[] = {{20, 29}, {60, 69}};
    nab_file f = file_of(w, 2, 0);
    nab_counts c = score_rows(&f, standard, (const int[]){35, -1});
    assert_near(c.raw, -2.1024220569534338, TOL);
    assert_int_equal(c.windows, 2);
    assert_int_equal(c.false_detections, 1);
}

/* Two detections in one window count once, the earliest: rows 40 and 45 give 1 (as 40
 * alone); rows 45 and 47 give the 0.85979257 of row 45. The later ones still count as
 * detections inside the window, not as false ones. */
static void test_two_detections_one_window(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    nab_counts c = score_rows(&f, standard, (const int[]){40, 45, -1});
    assert_true(c.raw == 1.0);
    assert_int_equal(c.windows_hit, 1);
    assert_int_equal(c.detections, 2);
    assert_int_equal(c.in_windows, 2);
    assert_int_equal(c.false_detections, 0);
    assert_near(score_rows(&f, standard, (const int[]){45, 47, -1}).raw, 0.8597925669097837, TOL);
    size_t first[1], count[1];
    unsigned char det[N] = {0};
    det[45] = det[47] = det[80] = 1;
    nab_first_detections(&f, det, first, count);
    assert_int_equal(first[0], 45);
    assert_int_equal(count[0], 2);
}

/* Probation 15 (nab_probation(100, 0.15)): a detection at row 3 is neither a false
 * detection nor anything else, so only the missed window [40, 49] counts: -1. A
 * window [10, 19] straddling the end of the probation: a detection at 12 does not hit
 * it (-1), one at 15 does: -(19 - 15 + 1) / 10 = -0.5, 0.85979257. A window [5, 9]
 * that ends inside the probation is not scored at all: raw 0, no windows. */
static void test_probation_ignored(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, nab_probation(N, 0.15));
    nab_counts c = score_rows(&f, standard, (const int[]){3, -1});
    assert_true(c.raw == -1.0);
    assert_int_equal(c.detections, 0);
    assert_int_equal(c.false_detections, 0);

    const nab_window straddle[] = {{10, 19}};
    nab_file fs = file_of(straddle, 1, 15);
    assert_true(score_rows(&fs, standard, (const int[]){12, -1}).raw == -1.0);
    assert_near(score_rows(&fs, standard, (const int[]){12, 15, -1}).raw, 0.8597925669097837, TOL);

    const nab_window early[] = {{5, 9}};
    nab_file fe = file_of(early, 1, 15);
    c = score_rows(&fe, standard, (const int[]){7, -1});
    assert_true(c.raw == 0.0);
    assert_int_equal(c.windows, 0);
    assert_int_equal(c.detections, 0);
    /* and the sweep does not count it either: nothing detected scores 0 */
    double scores[N] = {0}, t, raw;
    const double *sp[] = {scores};
    assert_int_equal(nab_optimize(&fe, sp, 1, standard, &t, &raw), 0);
    assert_true(t == NAB_THRESHOLD_NONE && raw == 0.0);
}

/* Threshold optimisation, window [40, 49], probation 0, every other row scoring 0.
 * (a) row 40 scores 0.9, row 10 (a false detection, -0.11) 0.3: thresholds 1.1 -> -1,
 * 0.9 -> 1, 0.3 -> 0.89, 0 -> every row (40 rows before the window at -0.11 each,
 * alone -4.4): the best is 0.9, dropping the false detection.
 * (b) row 10 scores 0.7, row 40 0.5: 1.1 -> -1, 0.7 -> -1.11, 0.5 -> 0.89: the sweep
 * goes on past a worse threshold to 0.5.
 * (c) row 40 scores 0.9 and row 45 0.4: 0.9 and 0.4 both give 1; the higher wins.
 * (d) nothing but a false detection: 1.1 (nothing detected) wins with -1. */
static void test_threshold_optimisation(void **state) {
    (void)state;
    const nab_window w[] = {{40, 49}};
    nab_file f = file_of(w, 1, 0);
    double s[N] = {0}, t, raw;
    const double *sp[] = {s};

    s[40] = 0.9, s[10] = 0.3;
    assert_int_equal(nab_optimize(&f, sp, 1, standard, &t, &raw), 0);
    assert_true(t == 0.9);
    assert_true(raw == 1.0);

    memset(s, 0, sizeof s);
    s[10] = 0.7, s[40] = 0.5;
    assert_int_equal(nab_optimize(&f, sp, 1, standard, &t, &raw), 0);
    assert_true(t == 0.5);
    assert_near(raw, 0.89, TOL);

    memset(s, 0, sizeof s);
    s[40] = 0.9, s[45] = 0.4;
    assert_int_equal(nab_optimize(&f, sp, 1, standard, &t, &raw), 0);
    assert_true(t == 0.9);
    assert_true(raw == 1.0);

    memset(s, 0, sizeof s);
    s[10] = 0.8;
    assert_int_equal(nab_optimize(&f, sp, 1, standard, &t, &raw), 0);
    assert_true(t == NAB_THRESHOLD_NONE);
    assert_true(raw == -1.0);
}

/* The sweep over a corpus of two files equals scoring each file at the chosen
 * threshold: file A window [40, 49] with row 45 at 0.6 (0.85979257) and row 5 at 0.6
 * (-0.11); file B window [10, 19] with row 60 at 0.8 (after B's window: (60 - 19) / 9
 * > 3, -0.11) and row 10 at 0.5 (+1). Thresholds: 1.1 -> -2; 0.8 -> -2.11; 0.6 ->
 * 0.85979257 - 0.11 - 1 - 0.11 = -0.36020743; 0.5 -> 0.85979257 - 0.11 + 1 - 0.11 =
 * 1.63979257; 0 -> every row, far worse. The best is 0.5. */
static void test_corpus_sweep(void **state) {
    (void)state;
    const nab_window wa[] = {{40, 49}}, wb[] = {{10, 19}};
    nab_file files[2] = {file_of(wa, 1, 0), file_of(wb, 1, 0)};
    double a[N] = {0}, b[N] = {0}, t, raw;
    a[45] = 0.6, a[5] = 0.6, b[60] = 0.8, b[10] = 0.5;
    const double *sp[] = {a, b};
    assert_int_equal(nab_optimize(files, sp, 2, standard, &t, &raw), 0);
    assert_true(t == 0.5);
    assert_near(raw, 0.8597925669097837 - 0.22 + 1.0, TOL);
    unsigned char da[N], db[N];
    for (int i = 0; i < N; i++)
        da[i] = a[i] >= t, db[i] = b[i] >= t;
    nab_counts ca, cb;
    nab_score_file(&files[0], standard, da, &ca);
    nab_score_file(&files[1], standard, db, &cb);
    assert_near(ca.raw + cb.raw, raw, TOL);
}

/* Normalisation: with 4 windows, standard null = -4 and perfect = 4, so raw 1 ->
 * 100 (1 + 4) / 8 = 62.5, -4 -> 0, 4 -> 100; no windows -> NaN. */
static void test_normalisation(void **state) {
    (void)state;
    assert_true(nab_null_score(standard, 4) == -4.0);
    assert_true(nab_perfect_score(standard, 4) == 4.0);
    assert_near(nab_normalized(standard, 4, 1.0), 62.5, TOL);
    assert_near(nab_normalized(standard, 4, -4.0), 0.0, TOL);
    assert_near(nab_normalized(standard, 4, 4.0), 100.0, TOL);
    assert_true(isnan(nab_normalized(standard, 0, 0.0)));
}

/* reward_low_FN_rate doubles the cost of a miss: windows [20, 29] and [60, 69], only
 * the first hit at its first row: 1 - 2 = -1 (standard: 1 - 1 = 0); null = -4,
 * perfect = 2, normalised 100 (-1 + 4) / 6 = 50 (standard: 100 (0 + 2) / 4 = 50 too). A
 * lone miss: -2. */
static void test_low_fn_doubled_miss(void **state) {
    (void)state;
    const nab_window w[] = {{20, 29}, {60, 69}};
    nab_file f = file_of(w, 2, 0);
    nab_counts c = score_rows(&f, low_fn, (const int[]){20, -1});
    assert_true(c.raw == -1.0);
    assert_true(score_rows(&f, standard, (const int[]){20, -1}).raw == 0.0);
    assert_true(nab_null_score(low_fn, 2) == -4.0);
    assert_near(nab_normalized(low_fn, 2, c.raw), 50.0, TOL);
    const nab_window one[] = {{40, 49}};
    nab_file f1 = file_of(one, 1, 0);
    assert_true(score_rows(&f1, low_fn, (const int[]){-1}).raw == -2.0);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_scaled_sigmoid),
        cmocka_unit_test(test_probation),
        cmocka_unit_test(test_hit_first_row),
        cmocka_unit_test(test_hit_last_row),
        cmocka_unit_test(test_fp_before_any_window),
        cmocka_unit_test(test_fp_after_window),
        cmocka_unit_test(test_fp_between_windows),
        cmocka_unit_test(test_two_detections_one_window),
        cmocka_unit_test(test_probation_ignored),
        cmocka_unit_test(test_threshold_optimisation),
        cmocka_unit_test(test_corpus_sweep),
        cmocka_unit_test(test_normalisation),
        cmocka_unit_test(test_low_fn_doubled_miss),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("nab_score", tests, NULL, NULL);
}
