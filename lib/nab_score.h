/* SPDX-License-Identifier: Apache-2.0 */
/* nab_score.h - the scoring rules of the Numenta Anomaly Benchmark (Lavin and Ahmad,
 * "Evaluating Real-time Anomaly Detection Algorithms - the Numenta Anomaly Benchmark",
 * 2015, as NAB's sweeper and optimizer apply them), as pure functions over arrays of
 * rows, windows and detections: no I/O. `tsmine score` (cmd_score.c) reads the files
 * and calls these.
 *
 * A data file has rows 0..n-1 and labelled windows [a, b] of rows (inclusive, in
 * ascending order, disjoint). Its first `probation` rows are not scored at all
 * (nab_probation). A detector gives every row an anomaly score, and a row is a
 * detection when its score >= the threshold. Under a profile (weights tp, fp, fn), with
 * S(y) = 2 / (1 + exp(5 y)) - 1 (the scaled sigmoid; -1 for y >= 3):
 *   - the earliest detection inside a window of width w = b - a + 1, at row i, earns
 *     tp * S(-(b - i + 1) / w) / S(-1): tp at the window's first row, a small fraction
 *     of it at the last; later detections in the same window earn nothing;
 *   - a window without a detection costs -fn;
 *   - a detection outside every window costs -fp before the first window, and
 *     fp * S((i - b') / (w' - 1)) after one, where [a', b'] is the last window that
 *     ended before row i and w' its width: a small cost just after a window, the full
 *     -fp from three widths on (-fp too after a window one row wide).
 * A window that ends inside the probationary period is not scored (neither hit nor
 * missed); one that straddles its end is, and only its rows past it can hit it.
 *
 * The raw score of a corpus is the sum of its files' scores. Its normalised score is
 * 100 (raw - null) / (perfect - null), null = -fn W being the score of a detector that
 * detects nothing and perfect = tp W that of one that hits every window at its first
 * row, W the windows scored. (NAB counts every window of its label file in `perfect`;
 * the two agree unless a window ends inside the probationary period, which none of
 * NAB's do.) NAB chooses one threshold per detector and profile, the one that gives
 * the whole corpus its best raw score (nab_optimize). */
#ifndef TSMINE_NAB_SCORE_H
#define TSMINE_NAB_SCORE_H

#include <stddef.h>

/* A cost matrix: what a hit window earns at best, what a false detection and a missed
 * window cost. */
typedef struct {
    const char *name;
    double tp, fp, fn;
} nab_profile;

/* NAB's three profiles: "standard", "reward_low_FP_rate", "reward_low_FN_rate". */
#define NAB_N_PROFILES 3
extern const nab_profile nab_profiles[NAB_N_PROFILES];

/* The fraction of each file's rows that NAB leaves unscored (of at most 5000 rows). */
#define NAB_PROBATION_DEFAULT 0.15

/* The threshold that detects nothing (above every score in [0, 1]), as NAB names it. */
#define NAB_THRESHOLD_NONE 1.1

/* "No row": a window without a detection in nab_first_detections. */
#define NAB_NO_ROW ((size_t)-1)

/* A labelled window: rows a..b, a <= b. */
typedef struct {
    size_t a, b;
} nab_window;

/* A data file as the scorer sees it. */
typedef struct {
    size_t n_rows;
    size_t probation;          /* rows [0, probation) are not scored: nab_probation() */
    const nab_window *windows; /* n_windows, ascending and disjoint, b < n_rows */
    size_t n_windows;
} nab_file;

/* What one detection set gives one file (or, summed, a corpus) under a profile. */
typedef struct {
    double raw;              /* the score */
    size_t windows;          /* windows scored: those that end at or after the probation */
    size_t windows_hit;      /* ... with a detection past the probation */
    size_t detections;       /* detections past the probation */
    size_t in_windows;       /* ... inside a window */
    size_t false_detections; /* ... outside every window */
} nab_counts;

/* S(y) = 2 / (1 + exp(5 y)) - 1, and -1 for y >= 3: from 0.9866 at y = -1 through 0 at
 * y = 0 to -0.9866 at y = 1. */
double nab_scaled_sigmoid(double y);

/* How many leading rows of a file of n_rows rows are probationary: those rows i with
 * i < min(floor(fraction n_rows), fraction 5000). fraction in [0, 1]. */
size_t nab_probation(size_t n_rows, double fraction);

/* What a detection at row i (probation <= i < n_rows) of f is worth under p, taken
 * alone: positive inside a window, negative outside. *window (when not NULL) gets the
 * index of the window holding row i, or NAB_NO_ROW. O(log windows). */
double nab_detection_weight(const nab_file *f, const nab_profile *p, size_t i, size_t *window);

/* For each window k of f: first[k] = its first detected row past the probation (or
 * NAB_NO_ROW) and count[k] (when not NULL) how many detections past the probation it
 * holds. detected has n_rows flags. O(n_rows). */
void nab_first_detections(const nab_file *f, const unsigned char *detected, size_t *first,
                          size_t *count);

/* Scores the detection set detected (n_rows flags: row i is a detection when
 * detected[i] != 0) of f under p into *out. O(n_rows). */
void nab_score_file(const nab_file *f, const nab_profile *p, const unsigned char *detected,
                    nab_counts *out);

/* NAB's threshold optimisation: among NAB_THRESHOLD_NONE and every distinct score of
 * a row past the probation (score[k] holds the n_rows scores of files[k], each in
 * [0, 1]), the threshold that gives the corpus its best raw score under p, the higher
 * threshold on ties; *threshold and *raw get it and its score. One descending sweep
 * over all scored rows: O(R log R) for R rows. Returns 0, or -1 when out of memory. */
int nab_optimize(const nab_file *files, const double *const *score, size_t n_files,
                 const nab_profile *p, double *threshold, double *raw);

/* The raw score of a detector that detects nothing (-fn windows) and of a perfect one
 * (tp windows), for a corpus with `windows` scored windows. */
double nab_null_score(const nab_profile *p, size_t windows);
double nab_perfect_score(const nab_profile *p, size_t windows);

/* 100 (raw - null) / (perfect - null): 0 for detecting nothing, 100 for perfect; NaN
 * when there are no windows. */
double nab_normalized(const nab_profile *p, size_t windows, double raw);

#endif
