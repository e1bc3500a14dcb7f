/* SPDX-License-Identifier: Apache-2.0 */
/* mp_plan.c - the CPU traversal's inputs (mp_plan.h). */
#include "mp_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double *tsmi_mp_make_plan(const tsm_stats *s, const uint8_t *mask, mp_plan *p) {
    size_t n = s->n, m = s->m, N = s->N;
    double *buf = malloc((n + MP_W + 4 * (N + MP_W)) * sizeof *buf);
    if (!buf)
        return NULL;
    double *t = buf, *mu = t + n + MP_W, *df = mu + N + MP_W, *dg = df + N + MP_W,
           *inv = dg + N + MP_W;
    memcpy(t, s->t, n * sizeof *t);
    memset(t + n, 0, MP_W * sizeof *t);
    memcpy(mu, s->mu, N * sizeof *mu);
    memset(mu + N, 0, MP_W * sizeof *mu);
    for (size_t k = 0; k < N + MP_W; k++) {
        int last = k + 1 >= N; /* no successor: the recurrence never leaves it */
        df[k] = last ? 0.0 : (t[k + m] - t[k]) / 2;
        dg[k] = last ? 0.0 : (t[k + m] - mu[k + 1]) + (t[k] - mu[k]);
        inv[k] = k < N && s->kind[k] == TSM_SUB_NORMAL && !(mask && mask[k]) ? s->inv[k] : NAN;
    }
    *p = (mp_plan){N, m, t, mu, df, dg, inv};
    return buf;
}

void tsmi_mp_exact_cov(const mp_plan *p, size_t i, size_t j, double *out) {
    const double *t = p->t, *mu = p->mu;
    double muj[MP_W];
    for (size_t w = 0; w < MP_W; w++)
        out[w] = 0.0, muj[w] = mu[j + w];
    for (size_t k = 0; k < p->m; k++) {
        double a = t[i + k] - mu[i];
        const double *tj = t + j + k;
        for (size_t w = 0; w < MP_W; w++)
            out[w] += a * (tj[w] - muj[w]);
    }
}

size_t tsmi_mp_band_count(size_t N, size_t excl, size_t width) {
    return excl < N ? (N - excl + width - 1) / width : 0;
}
