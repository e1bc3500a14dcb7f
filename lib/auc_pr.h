/* SPDX-License-Identifier: Apache-2.0 */
/* auc_pr.h - the area under the precision-recall curve of a ranking: how well a
 * continuous anomaly score ranks labelled rows above the others, at every threshold at
 * once (no threshold chosen). A pure function over arrays: no I/O. `tsmine score`
 * (cmd_score.c) places the per-row scores of `tsmine detect --scores` on rows and calls
 * it once per data file.
 *
 * Rows i = 0..n-1 have a score s[i] and a label (positive or not). A threshold t makes
 * the rows with s[i] >= t detections; only the distinct scores t_1 > t_2 > ... > t_K
 * are thresholds, so rows of equal score always enter together (ties are never broken
 * by row order). At t_k, with TP_k and FP_k the positive and other rows scored >= t_k
 * and P the positive rows: precision P_k = TP_k / (TP_k + FP_k), recall
 * R_k = TP_k / P; R_0 = 0 and P_0 = 1 (the curve's start, no detection).
 *   - average precision, the step-wise area: AP = sum_k (R_k - R_(k-1)) P_k
 *     (scikit-learn's average_precision_score);
 *   - the trapezoid area: sum_k (R_k - R_(k-1)) (P_k + P_(k-1)) / 2 (scikit-learn's
 *     auc(recall, precision) over precision_recall_curve: TSB-UAD's published AUC-PR).
 *     It credits ties: a constant score gets (1 + P/n) / 2 against AP's P/n.
 * A NaN score is a row without a score: it ranks below every number, tied with every
 * other NaN and with -Inf. Without positive rows, recall is undefined and both areas
 * are NaN. */
#ifndef TSMINE_AUC_PR_H
#define TSMINE_AUC_PR_H

#include <stddef.h>

typedef struct {
    size_t rows;              /* n */
    size_t positives;         /* P */
    size_t thresholds;        /* K: the distinct scores (NaN and -Inf counted as one) */
    double average_precision; /* AP, in (0, 1]; NaN when P = 0 */
    double trapezoid;         /* the trapezoid area; NaN when P = 0 */
} auc_pr_result;

/* The precision-recall areas of the scores score[0..n) against the labels positive[0..n)
 * (nonzero: a positive row) into *out. O(n log n) time, O(n) scratch. Returns 0, or -1
 * when out of memory (*out untouched). */
int auc_pr(const double *score, const unsigned char *positive, size_t n, auc_pr_result *out);

#endif
