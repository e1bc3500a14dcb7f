/* SPDX-License-Identifier: Apache-2.0 */
/* reference.c - brute-force discords, motifs and profiles (see reference.h). */
#include "reference.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>

int ref_kind(const double *t, size_t m, size_t i) {
    double lo = t[i], hi = t[i];
    for (size_t k = 0; k < m; k++) {
        if (!isfinite(t[i + k]))
            return TSM_SUB_NONFINITE;
        lo = t[i + k] < lo ? t[i + k] : lo;
        hi = t[i + k] > hi ? t[i + k] : hi;
    }
    return lo == hi ? TSM_SUB_CONSTANT : TSM_SUB_NORMAL;
}

static void mean_std(const double *x, size_t m, double *mu, double *sd) {
    double s = 0;
    for (size_t k = 0; k < m; k++)
        s += x[k];
    *mu = s / (double)m;
    double v = 0;
    for (size_t k = 0; k < m; k++)
        v += (x[k] - *mu) * (x[k] - *mu);
    *sd = sqrt(v / (double)m);
}

double ref_d2(const double *t, size_t m, size_t i, size_t j) {
    int ki = ref_kind(t, m, i), kj = ref_kind(t, m, j);
    if (ki == TSM_SUB_NONFINITE || kj == TSM_SUB_NONFINITE)
        return NAN;
    if (ki == TSM_SUB_CONSTANT && kj == TSM_SUB_CONSTANT)
        return 0.0;
    if (ki == TSM_SUB_CONSTANT || kj == TSM_SUB_CONSTANT)
        return (double)m;
    double mi, si, mj, sj;
    mean_std(t + i, m, &mi, &si);
    mean_std(t + j, m, &mj, &sj);
    double d2 = 0;
    for (size_t k = 0; k < m; k++) {
        double diff = (t[i + k] - mi) / si - (t[j + k] - mj) / sj;
        d2 += diff * diff;
    }
    return d2;
}

double ref_raw_d2(const double *t, size_t m, size_t i, size_t j) {
    double d2 = 0;
    for (size_t k = 0; k < m; k++) {
        if (!isfinite(t[i + k]) || !isfinite(t[j + k]))
            return NAN;
        d2 += (t[i + k] - t[j + k]) * (t[i + k] - t[j + k]);
    }
    return d2;
}

double ref_level(const double *t, size_t base, size_t i, size_t m) {
    double lo = t[base], hi = t[base], slo = t[i], shi = t[i];
    for (size_t k = base; k < i; k++)
        lo = fmin(lo, t[k]), hi = fmax(hi, t[k]);
    for (size_t k = i; k < i + m; k++)
        slo = fmin(slo, t[k]), shi = fmax(shi, t[k]);
    const double scale = fmax(1.0, fmax(fabs(lo), fabs(hi)));
    const double width = fmax(hi - lo, 1e-9 * scale); /* TSS_LEVEL_FLOOR */
    const double dev = fmax(0.0, fmax(shi - hi, lo - slo));
    return dev / width;
}

void ref_profile(const double *t, size_t n, size_t m, size_t excl, int left, double *dist,
                 int64_t *index) {
    size_t N = n - m + 1;
    for (size_t i = 0; i < N; i++) {
        dist[i] = INFINITY;
        index[i] = -1;
        if (ref_kind(t, m, i) == TSM_SUB_NONFINITE) {
            dist[i] = NAN;
            continue;
        }
        double best = INFINITY;
        for (size_t j = 0; j < N; j++) {
            size_t gap = i > j ? i - j : j - i;
            if (gap < excl || (left && j > i))
                continue;
            double d2 = ref_d2(t, m, i, j);
            if (isnan(d2))
                continue;
            if (d2 < best) { /* strict: the smaller j wins ties */
                best = d2;
                index[i] = (int64_t)j;
            }
        }
        dist[i] = sqrt(best);
    }
}

size_t ref_range_discords(const double *dist, const int64_t *index, size_t N, double r,
                          tsm_discord *out) {
    size_t c = 0;
    for (size_t i = 0; i < N; i++)
        if (isfinite(dist[i]) && dist[i] >= r)
            out[c++] = (tsm_discord){(int64_t)i, dist[i], index[i]};
    return c;
}

size_t ref_topk_discords(const double *dist, const int64_t *index, size_t N, size_t excl, size_t k,
                         tsm_discord *out) {
    size_t c = 0;
    while (c < k) {
        int64_t best = -1;
        for (size_t i = 0; i < N; i++) {
            if (!isfinite(dist[i]))
                continue;
            int clash = 0;
            for (size_t q = 0; q < c; q++) {
                int64_t gap = out[q].index - (int64_t)i;
                clash |= (size_t)(gap < 0 ? -gap : gap) < excl;
            }
            if (!clash && (best < 0 || dist[i] > dist[best]))
                best = (int64_t)i;
        }
        if (best < 0)
            break;
        out[c++] = (tsm_discord){best, dist[best], index[best]};
    }
    return c;
}

typedef struct {
    double d2;
    int64_t a, b;
} pair;

static int pair_cmp(const void *x, const void *y) {
    const pair *p = x, *q = y;
    if (p->d2 != q->d2)
        return p->d2 < q->d2 ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

static int near_any(int64_t x, const tsm_motif *chosen, size_t c, size_t excl) {
    for (size_t q = 0; q < c; q++) {
        int64_t ga = x - chosen[q].a, gb = x - chosen[q].b;
        if ((size_t)(ga < 0 ? -ga : ga) < excl || (size_t)(gb < 0 ? -gb : gb) < excl)
            return 1;
    }
    return 0;
}

size_t ref_topk_motifs(const double *t, size_t n, size_t m, size_t excl, size_t k, tsm_motif *out) {
    size_t N = n - m + 1, np = 0;
    pair *all = malloc((N * N / 2 + 1) * sizeof *all);
    if (!all)
        return 0;
    for (size_t a = 0; a < N; a++)
        for (size_t b = a + excl; b < N; b++) {
            double d2 = ref_d2(t, m, a, b);
            if (!isnan(d2))
                all[np++] = (pair){d2, (int64_t)a, (int64_t)b};
        }
    qsort(all, np, sizeof *all, pair_cmp);
    size_t c = 0;
    for (size_t p = 0; p < np && c < k; p++) {
        if (near_any(all[p].a, out, c, excl) || near_any(all[p].b, out, c, excl))
            continue;
        out[c++] = (tsm_motif){all[p].a, all[p].b, sqrt(all[p].d2)};
    }
    free(all);
    return c;
}
