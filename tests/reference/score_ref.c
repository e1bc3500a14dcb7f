/* SPDX-License-Identifier: Apache-2.0 */
/* score_ref.c - the calibrated score and the events, from their definitions. */
#include "score_ref.h"

#include "calib.h"  /* the definition's constants: history, grid, tail share, floor */
#include "robust.h" /* its constants and Student's t tail (tested against tables in robust_test) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The grid: bin of a raw score, and the value a bin stands for (its centre; bin 0, an
 * exact repeat, stands for 0). */
static int bin(double raw, uint32_t m) {
    double u = raw / (2.0 * sqrt((double)m));
    if (!(u >= TSS_CALIB_FLOOR))
        return 0;
    return u >= 1.0 ? TSS_CALIB_BINS - 1 : (int)(u * TSS_CALIB_BINS);
}

static double value(int b) {
    return b == 0 ? 0.0 : (2.0 * b + 1.0) / (2.0 * TSS_CALIB_BINS);
}

static int ascending(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The GPD tail probability of excess y over t, fitted by moments to the k excesses e. */
static double gpd_survival(const double *e, size_t k, double t, double y) {
    double mu = 0, m2 = 0;
    for (size_t i = 0; i < k; i++)
        mu += e[i], m2 += e[i] * e[i];
    mu /= (double)k, m2 /= (double)k;
    double var = m2 - mu * mu;
    if (mu < TSS_CALIB_EXCESS * t) { /* too tight: exponential, mean excess at the floor */
        mu = TSS_CALIB_EXCESS * t;
        var = mu * mu;
    }
    if (mu <= 0.0)
        mu = 0.5 / TSS_CALIB_BINS;
    double gamma = 0.0, sigma = mu;
    if (var > 1e-300) {
        double r = mu * mu / var;
        gamma = fmin(0.5, fmax(-0.5, 0.5 * (1.0 - r)));
        sigma = 0.5 * mu * (1.0 + r);
    }
    if (fabs(gamma) < 1e-6)
        return exp(-y / sigma);
    double base = 1.0 + gamma * y / sigma;
    return base <= 0.0 ? 0.0 : pow(base, -1.0 / gamma);
}

double ref_score(const double *hist, size_t n, double raw, uint32_t m, int far_only, int *tail) {
    if (tail)
        *tail = 0;
    const int b = bin(raw, m);
    if (n < TSS_CALIB_MIN || b == 0)
        return 0.0;
    int *s = malloc(n * sizeof *s);
    double *e = malloc(n * sizeof *e);
    for (size_t i = 0; i < n; i++)
        s[i] = bin(hist[i], m);
    qsort(s, n, sizeof *s, ascending);
    size_t k = (size_t)(TSS_CALIB_TAIL * (double)n);
    k = k < 5 ? 5 : k;
    const double n1 = (double)n + 1.0;
    /* FAR: the k largest; t the k-th largest */
    const int efar = s[n - k];
    double p_far;
    if (b > efar) {
        for (size_t i = 0; i < k; i++)
            e[i] = value(s[n - 1 - i]) - value(efar);
        p_far = (double)k / n1 * gpd_survival(e, k, value(efar), value(b) - value(efar));
    } else {
        size_t ge = 0;
        for (size_t i = 0; i < n; i++)
            ge += s[i] >= b;
        p_far = (1.0 + (double)ge) / n1;
    }
    /* NEAR: the k smallest; t the k-th smallest */
    const int enear = s[k - 1];
    double p_near;
    if (b < enear) {
        for (size_t i = 0; i < k; i++)
            e[i] = value(enear) - value(s[i]);
        p_near = (double)k / n1 * gpd_survival(e, k, value(enear), value(enear) - value(b));
    } else {
        size_t le = 0;
        for (size_t i = 0; i < n; i++)
            le += s[i] <= b;
        p_near = (1.0 + (double)le) / n1;
    }
    free(s), free(e);
    double p = far_only || p_far <= p_near ? p_far : p_near;
    if (2.0 * p >= 1.0)
        return 0.0;
    if (tail)
        *tail = far_only || p_far <= p_near ? 1 : 2;
    return 1.0 - 2.0 * p;
}

void ref_history_add(ref_history *h, double raw) {
    if (!isfinite(raw))
        return;
    h->v[h->head] = raw;
    h->head = (h->head + 1) % TSS_CALIB_HISTORY;
    if (h->n < TSS_CALIB_HISTORY)
        h->n++;
}

size_t ref_history_get(const ref_history *h, double *out) {
    for (size_t k = 0; k < h->n; k++)
        out[k] = h->v[(h->head + TSS_CALIB_HISTORY - h->n + k) % TSS_CALIB_HISTORY];
    return h->n;
}

double ref_comparable(double raw, uint32_t m, double n, double n_full) {
    if (n < 1 || n >= n_full)
        return raw;
    const double v = raw * pow(n / n_full, 1.0 / (TSS_CALIB_DIM * m));
    return bin(v, m) == 0 && bin(raw, m) != 0 ? raw : v;
}

/* Whether a subsequence opens (level = threshold) or keeps open an event: its event
 * score (NAN never passes), or its raw score against a numeric range. */
static int passes(const ref_events *ev, double raw, double score, double level) {
    return isnan(ev->range) ? score >= level : raw >= ev->range;
}

static ref_alert subsequence(const ref_events *ev, int kind, uint64_t start, double raw,
                             uint64_t neighbor, double score, double shape) {
    return (ref_alert){kind, start, neighbor, start, start + ev->m, start + ev->m - 1,
                       raw,  score, shape,    1};
}

size_t ref_events_close(ref_events *ev, uint64_t detected, ref_alert *out) {
    if (!ev->open)
        return 0;
    ev->open = 0;
    *out =
        (ref_alert){6,        ev->peak_start, ev->peak_neighbor, ev->first,      ev->last + ev->m,
                    detected, ev->peak_raw,   ev->peak_score,    ev->peak_shape, ev->tail};
    return 1;
}

size_t ref_events_step(ref_events *ev, uint64_t start, double raw, uint64_t neighbor,
                       double mag_score, uint64_t fill, int armed, ref_alert *out) {
    double hist[TSS_CALIB_HISTORY];
    size_t n = ref_history_get(&ev->hist, hist), count = 0;
    const double n_full = (double)ev->window - ev->m - ev->excl + 1;
    const double v = ref_comparable(
        raw, ev->m, (double)(fill < ev->window ? fill : ev->window) - ev->m - ev->excl + 1, n_full);
    const double shape = ref_score(hist, n, v, ev->m, 0, NULL);
    const double score = isnan(ev->range) ? mag_score : shape;
    if (ev->open) {
        if (passes(ev, raw, score, ev->threshold_end)) { /* the peak: within the extent */
            int higher = isnan(ev->range) ? score > ev->peak_score : raw > ev->peak_raw;
            if (higher) {
                ev->peak_start = start, ev->peak_neighbor = neighbor;
                ev->peak_raw = raw, ev->peak_score = score, ev->peak_shape = shape;
            }
            ev->last = start;
            ev->below = 0;
        } else if (++ev->below >= ev->m) {
            count += ref_events_close(ev, start + ev->m - 1, out + count);
        }
    } else if (armed && passes(ev, raw, score, ev->threshold)) {
        out[count++] = subsequence(ev, 5, start, raw, neighbor, score, shape);
        ev->open = 1;
        ev->tail = 1;
        ev->first = ev->last = start;
        ev->below = 0;
        ev->peak_start = start, ev->peak_neighbor = neighbor;
        ev->peak_raw = raw, ev->peak_score = score, ev->peak_shape = shape;
    }
    if (ev->left_discord && armed && passes(ev, raw, score, ev->threshold))
        out[count++] = subsequence(ev, 2, start, raw, neighbor, score, shape);
    ref_history_add(&ev->hist, v);
    return count;
}

void ref_robust_add(ref_robust *r, double v) {
    if (!isfinite(v))
        return;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        if (!r->v)
            abort();
    }
    r->v[r->n++] = v;
    if (r->n == TSS_ROBUST_MIN || (r->refreshed && r->n - r->refreshed == TSS_ROBUST_REFRESH))
        r->refreshed = r->n;
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1; v is sorted in place): the mean of the two middle
 * values for an even n. */
static double sorted_median(double *v, size_t n) {
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ref_robust_score(const ref_robust *r, double v, double unit) {
    if (!r->refreshed || !isfinite(v))
        return NAN;
    const size_t h = r->refreshed < TSS_ROBUST_HISTORY ? r->refreshed : TSS_ROBUST_HISTORY;
    double a[TSS_ROBUST_HISTORY];
    memcpy(a, r->v + r->refreshed - h, h * sizeof *a);
    const double med = sorted_median(a, h);
    for (size_t k = 0; k < h; k++)
        a[k] = fabs(r->v[r->refreshed - h + k] - med);
    const double mad = sorted_median(a, h);
    return 1.0 - tss_t4_sf((v - med) / fmax(fmax(1.4826 * mad, unit), 1e-300));
}

void ref_robust_free(ref_robust *r) {
    free(r->v);
    *r = (ref_robust){0};
}
