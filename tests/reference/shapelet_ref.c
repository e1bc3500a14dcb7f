/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_ref.c - brute-force shapelet definitions (shapelet_ref.h). */
#include "shapelet_ref.h"

#include <math.h>
#include <stdlib.h>

/* z-normalised copy (population sigma; zeros when max == min). */
static void ref_znorm(const double *v, size_t l, double *z) {
    double mn = v[0], mx = v[0], sum = 0.0;
    for (size_t k = 0; k < l; k++) {
        mn = v[k] < mn ? v[k] : mn;
        mx = v[k] > mx ? v[k] : mx;
        sum += v[k];
    }
    double mu = sum / (double)l, var = 0.0;
    for (size_t k = 0; k < l; k++)
        var += (v[k] - mu) * (v[k] - mu);
    double sd = sqrt(var / (double)l);
    for (size_t k = 0; k < l; k++)
        z[k] = (mx == mn || sd == 0.0) ? 0.0 : (v[k] - mu) / sd;
}

/* Full-matrix DTW with squared costs inside |x - y| <= w. */
static double ref_dtw(const double *a, const double *b, size_t l, size_t w) {
    size_t M = l + 1;
    double *D = malloc(M * M * sizeof *D);
    for (size_t k = 0; k < M * M; k++)
        D[k] = INFINITY;
    D[0] = 0.0;
    for (size_t x = 1; x <= l; x++)
        for (size_t y = 1; y <= l; y++) {
            if ((x > y ? x - y : y - x) > w)
                continue;
            double m = D[(x - 1) * M + (y - 1)];
            if (D[(x - 1) * M + y] < m)
                m = D[(x - 1) * M + y];
            if (D[x * M + (y - 1)] < m)
                m = D[x * M + (y - 1)];
            double diff = a[x - 1] - b[y - 1];
            D[x * M + y] = diff * diff + m;
        }
    double r = D[l * M + l];
    free(D);
    return r;
}

double ref_shapelet_subdist(const double *c, size_t l, const double *x, size_t len, size_t w,
                            size_t *pos) {
    double *zc = malloc(l * sizeof *zc), *zs = malloc(l * sizeof *zs);
    ref_znorm(c, l, zc);
    double best = INFINITY;
    size_t bu = 0;
    for (size_t u = 0; u + l <= len; u++) {
        ref_znorm(x + u, l, zs);
        double d;
        if (w == 0) {
            d = 0.0;
            for (size_t k = 0; k < l; k++)
                d += (zc[k] - zs[k]) * (zc[k] - zs[k]);
        } else {
            d = ref_dtw(zc, zs, l, w);
        }
        d = sqrt(d / (double)l);
        if (d < best)
            best = d, bu = u;
    }
    free(zc);
    free(zs);
    if (pos)
        *pos = bu;
    return best;
}

/* Entropy (natural log) of the items of one side. */
static double side_entropy(const double *d, const int *y, size_t n, int nc, double th, int left,
                           size_t *count, double *sum) {
    double h = 0.0;
    *count = 0;
    *sum = 0.0;
    for (size_t j = 0; j < n; j++)
        if ((d[j] <= th) == left)
            (*count)++, *sum += d[j];
    for (int c = 0; c < nc; c++) {
        size_t k = 0;
        for (size_t j = 0; j < n; j++)
            k += (d[j] <= th) == left && y[j] == c;
        if (k > 0) {
            double p = (double)k / (double)*count;
            h -= p * log(p);
        }
    }
    return h;
}

int ref_shapelet_split_at(const double *d, const int *y, size_t n, int nc, double th, double *gain,
                          double *gap) {
    size_t nl, nr, na;
    double sl, sr, sa;
    double hl = side_entropy(d, y, n, nc, th, 1, &nl, &sl);
    double hr = side_entropy(d, y, n, nc, th, 0, &nr, &sr);
    double ha = side_entropy(d, y, n, nc, INFINITY, 1, &na, &sa);
    if (nl == 0 || nr == 0)
        return 0;
    *gain = ha - (double)nl / (double)n * hl - (double)nr / (double)n * hr;
    *gap = sr / (double)nr - sl / (double)nl;
    return 1;
}

tsm_split ref_shapelet_split(const double *d, const int *y, size_t n, int nc) {
    tsm_split best = {0.0, 0.0, 0.0, 0};
    /* thresholds in increasing order: the midpoint below each distinct value */
    double prev = -INFINITY;
    for (;;) {
        double lo = INFINITY; /* smallest distance above prev */
        for (size_t j = 0; j < n; j++)
            if (d[j] > prev && d[j] < lo)
                lo = d[j];
        if (lo == INFINITY)
            break;
        double hi = INFINITY; /* next distinct value above lo */
        for (size_t j = 0; j < n; j++)
            if (d[j] > lo && d[j] < hi)
                hi = d[j];
        prev = lo;
        if (hi == INFINITY)
            break;
        tsm_split s = {0.0, 0.0, 0.5 * (lo + hi), 1};
        if (!ref_shapelet_split_at(d, y, n, nc, s.threshold, &s.gain, &s.gap))
            continue;
        if (!best.valid || s.gain > best.gain + TSM_SHAPELET_GAIN_TOL ||
            (fabs(s.gain - best.gain) <= TSM_SHAPELET_GAIN_TOL &&
             s.gap >
                 best.gap + TSM_SHAPELET_GAP_TOL * fmax(1.0, fmax(fabs(s.gap), fabs(best.gap)))))
            best = s;
    }
    return best;
}

tsm_shapelet ref_shapelet_best(const tsm_shapelet_data *data, const tsm_shapelet_opts *opts) {
    tsm_shapelet best = {0};
    size_t n = data->n, L = data->len;
    double *d = malloc(n * sizeof *d);
    for (size_t l = opts->min_len; l <= opts->max_len; l += opts->step)
        for (size_t i = 0; i < n; i++)
            for (size_t s = 0; s + l <= L; s++) {
                for (size_t j = 0; j < n; j++) {
                    d[j] = ref_shapelet_subdist(data->x + i * L + s, l, data->x + j * L, L, opts->w,
                                                NULL);
                    /* logical shapelets: near both (AND) or near either (OR) */
                    if (opts->op == TSM_SHAPELET_AND)
                        d[j] = fmax(d[j], opts->base[j]);
                    else if (opts->op == TSM_SHAPELET_OR)
                        d[j] = fmin(d[j], opts->base[j]);
                }
                tsm_split sp = ref_shapelet_split(d, data->y, n, data->n_classes);
                /* strictly better only: the first candidate in (l, i, s) order wins ties */
                if (sp.valid &&
                    (!best.split.valid || sp.gain > best.split.gain + TSM_SHAPELET_GAIN_TOL ||
                     (fabs(sp.gain - best.split.gain) <= TSM_SHAPELET_GAIN_TOL &&
                      sp.gap > best.split.gap +
                                   TSM_SHAPELET_GAP_TOL *
                                       fmax(1.0, fmax(fabs(sp.gap), fabs(best.split.gap)))))) {
                    best.series = i, best.start = s, best.length = l;
                    best.split = sp;
                }
            }
    free(d);
    return best;
}

/* n times the weighted entropy of counts c (t items): t log t - sum c log c, in class
 * order (the form of shapelet_split.h, so that equal values compare equal). */
static double ref_part(const int *c, int nc, int t) {
    double acc = t > 0 ? t * log((double)t) : 0.0;
    for (int k = 0; k < nc; k++)
        acc -= c[k] > 0 ? c[k] * log((double)c[k]) : 0.0;
    return acc;
}

/* Swaps items i and j of the pairs (d, y). */
static void ref_swap(double *d, int *y, size_t i, size_t j) {
    double td = d[i];
    d[i] = d[j];
    d[j] = td;
    int ty = y[i];
    y[i] = y[j];
    y[j] = ty;
}

static uint64_t ref_splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tsm_split ref_shapelet_split_heuristic(const double *d0, const int *y0, size_t n, int nc,
                                       uint64_t seed) {
    tsm_split best = {0.0, 0.0, 0.0, 0};
    double *d = malloc(n * sizeof *d);
    int *y = malloc(n * sizeof *y), *cl = calloc((size_t)nc, sizeof *cl),
        *cr = calloc((size_t)nc, sizeof *cr);
    for (size_t j = 0; j < n; j++)
        d[j] = d0[j], y[j] = y0[j];
    uint64_t rng = seed;
    for (size_t i = n - 1; n > 1 && i > 0; i--) { /* Knuth shuffle, Algorithm 4.7 */
        size_t j = (size_t)(ref_splitmix(&rng) % (uint64_t)(i + 1));
        ref_swap(d, y, i, j);
    }
    size_t lo = 0, hi = n > 0 ? n - 1 : 0;
    double last = INFINITY, best_cond = INFINITY, best_th = 0.0;
    while (lo < hi) {
        double pivot = d[hi]; /* Algorithm 4.6: Lomuto partition around the last item */
        size_t p = lo;
        for (size_t q = lo; q < hi; q++)
            if (d[q] < pivot)
                ref_swap(d, y, p++, q);
        ref_swap(d, y, p, hi);
        for (int c = 0; c < nc; c++)
            cl[c] = cr[c] = 0;
        double maxl = -INFINITY;
        for (size_t j = 0; j < n; j++) { /* recount everything: D1 = {d < pivot} */
            if (d[j] < pivot)
                cl[y[j]]++, maxl = d[j] > maxl ? d[j] : maxl;
            else
                cr[y[j]]++;
        }
        double fl = ref_part(cl, nc, (int)p), fr = ref_part(cr, nc, (int)(n - p));
        double cond = (fl + fr) / (double)n;
        if (cond > last)
            break;
        last = cond;
        if (p > 0 && cond < best_cond)
            best_cond = cond, best_th = 0.5 * (maxl + pivot);
        if (fl > fr) { /* the left part is the more mixed: lower thresholds */
            if (p == 0)
                break;
            hi = p - 1;
        } else {
            lo = p + 1;
        }
    }
    if (best_cond < INFINITY) {
        best.threshold = best_th;
        best.valid = ref_shapelet_split_at(d0, y0, n, nc, best_th, &best.gain, &best.gap);
    }
    free(d), free(y), free(cl), free(cr);
    return best;
}
