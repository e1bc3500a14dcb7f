/* SPDX-License-Identifier: Apache-2.0 */
/* nab_score.c - the scoring rules of the Numenta Anomaly Benchmark (nab_score.h). */
#include "lib/nab_score.h"

#include <math.h>
#include <stdlib.h>

const nab_profile nab_profiles[NAB_N_PROFILES] = {
    {"standard", 1.0, 0.11, 1.0},
    {"reward_low_FP_rate", 1.0, 0.22, 1.0},
    {"reward_low_FN_rate", 1.0, 0.11, 2.0},
};

double nab_scaled_sigmoid(double y) {
    if (y >= 3.0)
        return -1.0;
    return 2.0 * (1.0 / (1.0 + exp(5.0 * y))) - 1.0;
}

size_t nab_probation(size_t n_rows, double fraction) {
    double limit = fmin(floor(fraction * (double)n_rows), fraction * 5000.0);
    /* rows i < limit: the whole numbers below it */
    return limit <= 0 ? 0 : (size_t)ceil(limit);
}

/* What the earliest detection of window w, at row i inside it, earns under p. */
static double hit_weight(const nab_window *w, size_t i, const nab_profile *p) {
    double width = (double)(w->b - w->a + 1);
    double position = -(double)(w->b - i + 1) / width; /* -1 at a, -1/width at b */
    return nab_scaled_sigmoid(position) * p->tp / nab_scaled_sigmoid(-1.0);
}

/* What a detection at row i outside every window costs under p (a negative number);
 * prev is the last window that ended before row i, or NULL. */
static double false_weight(const nab_window *prev, size_t i, const nab_profile *p) {
    if (!prev || prev->b == prev->a) /* before any window; or after one of width 1 */
        return -p->fp;
    double position = (double)(i - prev->b) / (double)(prev->b - prev->a); /* w' - 1 */
    return nab_scaled_sigmoid(position) * p->fp;
}

/* The first window of f that ends at or after row i (n_windows when none). O(log). */
static size_t window_from(const nab_file *f, size_t i) {
    size_t lo = 0, hi = f->n_windows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->windows[mid].b < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

double nab_detection_weight(const nab_file *f, const nab_profile *p, size_t i, size_t *window) {
    size_t k = window_from(f, i);
    int inside = k < f->n_windows && f->windows[k].a <= i;
    if (window)
        *window = inside ? k : NAB_NO_ROW;
    if (inside)
        return hit_weight(&f->windows[k], i, p);
    return false_weight(k > 0 ? &f->windows[k - 1] : NULL, i, p);
}

void nab_first_detections(const nab_file *f, const unsigned char *detected, size_t *first,
                          size_t *count) {
    for (size_t k = 0; k < f->n_windows; k++) {
        first[k] = NAB_NO_ROW;
        if (count)
            count[k] = 0;
    }
    size_t k = 0;
    for (size_t i = f->probation; i < f->n_rows; i++) {
        if (!detected[i])
            continue;
        while (k < f->n_windows && f->windows[k].b < i)
            k++;
        if (k == f->n_windows)
            break;
        if (f->windows[k].a > i)
            continue;
        if (first[k] == NAB_NO_ROW)
            first[k] = i;
        if (count)
            count[k]++;
    }
}

void nab_score_file(const nab_file *f, const nab_profile *p, const unsigned char *detected,
                    nab_counts *out) {
    *out = (nab_counts){0};
    for (size_t k = 0; k < f->n_windows; k++)
        out->windows += f->windows[k].b >= f->probation;
    /* Rows in ascending order meet the windows in order, so a window's first detection
     * comes before any of the next window's: one cursor and the last window hit. */
    size_t k = 0, last_hit = NAB_NO_ROW;
    for (size_t i = f->probation; i < f->n_rows; i++) {
        if (!detected[i])
            continue;
        out->detections++;
        while (k < f->n_windows && f->windows[k].b < i)
            k++;
        if (k < f->n_windows && f->windows[k].a <= i) {
            out->in_windows++;
            if (last_hit != k) {
                last_hit = k;
                out->windows_hit++;
                out->raw += hit_weight(&f->windows[k], i, p);
            }
        } else {
            out->false_detections++;
            out->raw += false_weight(k > 0 ? &f->windows[k - 1] : NULL, i, p);
        }
    }
    out->raw -= p->fn * (double)(out->windows - out->windows_hit);
}

/* One scored row of the corpus, for the sweep. */
typedef struct {
    double score;  /* the detector's anomaly score */
    double weight; /* what it is worth as a detection (nab_detection_weight) */
    size_t window; /* its window's index in the corpus, or NAB_NO_ROW */
    size_t order;  /* its place in the corpus (file, then row): ties keep it */
} sweep_row;

/* qsort order: descending score, then corpus order. */
static int by_score_desc(const void *pa, const void *pb) {
    const sweep_row *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The sweep: rows in descending score become detections one group of equal scores at
 * a time; the corpus score after each group is that of the threshold equal to the
 * group's score. Each window keeps its best detection's weight (-fn until hit), and
 * false detections add up; both sums are kept as they change. */
int nab_optimize(const nab_file *files, const double *const *score, size_t n_files,
                 const nab_profile *p, double *threshold, double *raw) {
    size_t n_rows = 0, n_windows = 0;
    for (size_t k = 0; k < n_files; k++) {
        n_rows += files[k].n_rows - files[k].probation;
        n_windows += files[k].n_windows;
    }
    sweep_row *rows = malloc((n_rows ? n_rows : 1) * sizeof *rows);
    double *part = malloc((n_windows ? n_windows : 1) * sizeof *part);
    if (!rows || !part) {
        free(rows), free(part);
        return -1;
    }
    double window_sum = 0, false_sum = 0;
    size_t r = 0, w0 = 0;
    for (size_t k = 0; k < n_files; k++) {
        const nab_file *f = &files[k];
        for (size_t w = 0; w < f->n_windows; w++) {
            int scored = f->windows[w].b >= f->probation;
            part[w0 + w] = scored ? -p->fn : 0.0;
            window_sum += part[w0 + w];
        }
        for (size_t i = f->probation; i < f->n_rows; i++, r++) {
            size_t w;
            rows[r].score = score[k][i];
            rows[r].weight = nab_detection_weight(f, p, i, &w);
            rows[r].window = w == NAB_NO_ROW ? NAB_NO_ROW : w0 + w;
            rows[r].order = r;
        }
        w0 += f->n_windows;
    }
    qsort(rows, n_rows, sizeof *rows, by_score_desc);

    double best_t = NAB_THRESHOLD_NONE, best = false_sum + window_sum;
    for (size_t j = 0; j < n_rows;) {
        double t = rows[j].score;
        for (; j < n_rows && rows[j].score == t; j++) {
            const sweep_row *row = &rows[j];
            if (row->window == NAB_NO_ROW) {
                false_sum += row->weight;
            } else if (row->weight > part[row->window]) {
                window_sum += row->weight - part[row->window];
                part[row->window] = row->weight;
            }
        }
        if (false_sum + window_sum > best) {
            best = false_sum + window_sum;
            best_t = t;
        }
    }
    free(rows), free(part);
    *threshold = best_t;
    *raw = best;
    return 0;
}

double nab_null_score(const nab_profile *p, size_t windows) {
    return -p->fn * (double)windows;
}

double nab_perfect_score(const nab_profile *p, size_t windows) {
    return p->tp * (double)windows;
}

double nab_normalized(const nab_profile *p, size_t windows, double raw) {
    if (windows == 0)
        return NAN;
    double null = nab_null_score(p, windows);
    return 100.0 * (raw - null) / (nab_perfect_score(p, windows) - null);
}
