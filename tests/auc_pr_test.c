/* SPDX-License-Identifier: Apache-2.0 */
/* auc_pr_test.c - the precision-recall areas (lib/auc_pr.h) on small rankings
 * whose areas are worked out by hand in the comments.
 *
 * Notation: thresholds are the distinct scores, highest first; at each, TP and FP rows
 * scored at or above it, precision P = TP / (TP + FP), recall R = TP / positives, from
 * (R, P) = (0, 1). AP = sum dR P; trapezoid = sum dR (P + P_before) / 2. Tolerance:
 * 1e-15 absolute (sums of a few exact fractions), except where a case says "exactly". */
#include "testutil.h"

#include "lib/auc_pr.h"

#include <math.h>

#define TOL 1e-15

/* Fails the case, printing both numbers, unless |a - b| <= tol. */
#define assert_near(a, b, tol) near_((a), (b), (tol), __FILE__, __LINE__)
static void near_(double a, double b, double tol, const char *file, int line) {
    if (!(fabs(a - b) <= tol)) {
        print_error("%.17g != %.17g (tolerance %g)\n", a, b, tol);
        _fail(file, line);
    }
}

/* The areas of n rows. */
static auc_pr_result areas(const double *score, const unsigned char *positive, size_t n) {
    auc_pr_result r;
    assert_int_equal(auc_pr(score, positive, n, &r), 0);
    assert_int_equal(r.rows, n);
    return r;
}

/* Every positive above every other row: at the threshold that takes the last positive,
 * R = 1 and P = 1; AP = 1 and the trapezoid 1 exactly, whatever follows. */
static void test_perfect_ranking(void **state) {
    (void)state;
    const double s[] = {0.2, 0.9, 0.1, 0.8, 0.3, 0.0};
    const unsigned char y[] = {0, 1, 0, 1, 0, 0};
    auc_pr_result r = areas(s, y, 6);
    assert_int_equal(r.positives, 2);
    assert_int_equal(r.thresholds, 6);
    assert_true(r.average_precision == 1.0);
    assert_true(r.trapezoid == 1.0);
}

/* Every positive below every other row, scores 4 3 2 1 with the positive at 1: the
 * only step is dR = 1 at P = 1/4: AP = 1/4; trapezoid: (0,1) -> (0,0) (dR 0), then
 * (0,0) -> (1,1/4): (0 + 1/4) / 2 = 1/8. */
static void test_worst_ranking(void **state) {
    (void)state;
    const double s[] = {4, 3, 2, 1};
    const unsigned char y[] = {0, 0, 0, 1};
    auc_pr_result r = areas(s, y, 4);
    assert_near(r.average_precision, 0.25, TOL);
    assert_near(r.trapezoid, 0.125, TOL);
}

/* Scores 3 2 2 1, labels 0 1 0 1: the tie at 2 enters as one threshold.
 * t = 3: TP 0, FP 1: (0, 0); t = 2: TP 1, FP 2: (1/2, 1/3); t = 1: TP 2, FP 2: (1, 1/2).
 * AP = 1/2 * 1/3 + 1/2 * 1/2 = 5/12. Trapezoid: 0 + 1/2 * (0 + 1/3) / 2
 * + 1/2 * (1/3 + 1/2) / 2 = 1/12 + 5/24 = 7/24. Breaking the tie by row order (the
 * positive first) would give 1/2 * 1/2 + 1/2 * 1/2 = 1/2 instead. Either order of the
 * tied rows gives the same areas. */
static void test_ties_enter_together(void **state) {
    (void)state;
    const double s[] = {3, 2, 2, 1};
    const unsigned char y[] = {0, 1, 0, 1};
    auc_pr_result r = areas(s, y, 4);
    assert_int_equal(r.thresholds, 3);
    assert_near(r.average_precision, 5.0 / 12, TOL);
    assert_near(r.trapezoid, 7.0 / 24, TOL);
    const double s2[] = {3, 2, 2, 1};
    const unsigned char y2[] = {0, 0, 1, 1};
    auc_pr_result r2 = areas(s2, y2, 4);
    assert_near(r2.average_precision, 5.0 / 12, TOL);
    assert_near(r2.trapezoid, 7.0 / 24, TOL);
}

/* Every score equal, 1 positive of 8: one threshold, (1, 1/8). AP = 1/8; trapezoid
 * (1 + 1/8) / 2 = 9/16: what TSB-UAD's measure gives a constant score. */
static void test_all_equal(void **state) {
    (void)state;
    double s[8];
    unsigned char y[8] = {0, 0, 0, 0, 0, 1, 0, 0};
    for (int i = 0; i < 8; i++)
        s[i] = 0.5;
    auc_pr_result r = areas(s, y, 8);
    assert_int_equal(r.thresholds, 1);
    assert_near(r.average_precision, 0.125, TOL);
    assert_near(r.trapezoid, 9.0 / 16, TOL);
}

/* No positive row: recall is undefined, both areas NaN; the counts still hold. No
 * row at all: the same. */
static void test_no_positives(void **state) {
    (void)state;
    const double s[] = {0.1, 0.7, 0.3};
    const unsigned char y[] = {0, 0, 0};
    auc_pr_result r = areas(s, y, 3);
    assert_int_equal(r.positives, 0);
    assert_int_equal(r.thresholds, 3);
    assert_true(isnan(r.average_precision) && isnan(r.trapezoid));
    r = areas(s, y, 0);
    assert_int_equal(r.positives, 0);
    assert_int_equal(r.thresholds, 0);
    assert_true(isnan(r.average_precision) && isnan(r.trapezoid));
}

/* NaN (no score) ranks below every number, tied with -Inf: scores NaN 1 0 -Inf NaN,
 * labels 1 0 1 0 0. t = 1: (0, 0); t = 0: TP 1, FP 1: (1/2, 1/2); the NaN/-Inf group
 * (3 rows, one positive): TP 2, FP 3: (1, 2/5). AP = 1/2 * 1/2 + 1/2 * 2/5 = 9/20;
 * trapezoid 0 + 1/2 * (0 + 1/2) / 2 + 1/2 * (1/2 + 2/5) / 2 = 1/8 + 9/40 = 7/20. */
static void test_nan_lowest(void **state) {
    (void)state;
    const double s[] = {NAN, 1, 0, -INFINITY, NAN};
    const unsigned char y[] = {1, 0, 1, 0, 0};
    auc_pr_result r = areas(s, y, 5);
    assert_int_equal(r.thresholds, 3);
    assert_near(r.average_precision, 9.0 / 20, TOL);
    assert_near(r.trapezoid, 7.0 / 20, TOL);
}

/* -0 and +0 are one score (one threshold), and a label's value is only zero or not:
 * scores 1 -0 +0, labels 0 7 0: t = 1: (0, 0); t = 0: TP 1, FP 2: (1, 1/3): AP 1/3,
 * trapezoid (0 + 1/3) / 2 = 1/6. */
static void test_signed_zero_and_label_values(void **state) {
    (void)state;
    const double s[] = {1, -0.0, 0.0};
    const unsigned char y[] = {0, 7, 0};
    auc_pr_result r = areas(s, y, 3);
    assert_int_equal(r.positives, 1);
    assert_int_equal(r.thresholds, 2);
    assert_near(r.average_precision, 1.0 / 3, TOL);
    assert_near(r.trapezoid, 1.0 / 6, TOL);
}

/* Every row positive: every threshold has P = 1, so both areas are 1 exactly. */
static void test_all_positive(void **state) {
    (void)state;
    const double s[] = {0.3, 0.1, NAN, 0.3};
    const unsigned char y[] = {1, 1, 1, 1};
    auc_pr_result r = areas(s, y, 4);
    assert_true(r.average_precision == 1.0);
    assert_true(r.trapezoid == 1.0);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perfect_ranking),
        cmocka_unit_test(test_worst_ranking),
        cmocka_unit_test(test_ties_enter_together),
        cmocka_unit_test(test_all_equal),
        cmocka_unit_test(test_no_positives),
        cmocka_unit_test(test_nan_lowest),
        cmocka_unit_test(test_signed_zero_and_label_values),
        cmocka_unit_test(test_all_positive),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("auc_pr", tests, NULL, NULL);
}
