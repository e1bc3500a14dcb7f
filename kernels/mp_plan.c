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

#if TSMI_HAVE_AVX512
/* tsmi_mp_exact_cov with AVX-512: the same multiply, then add, per lane and in the
 * same order (no fused multiply-add: the values must equal the plain loop's bit for
 * bit); about 5% of the CPU scan's time in the plain loop's 2-wide vectors. */
TSMI_TARGET_AVX512 static void exact_cov_avx512(const mp_plan *p, size_t i, size_t j, double *out) {
    enum { V = MP_W / 8 };
    const double *t = p->t, *mu = p->mu;
    __m512d acc[V], muj[V];
    for (int v = 0; v < V; v++)
        acc[v] = _mm512_setzero_pd(), muj[v] = _mm512_loadu_pd(mu + j + 8 * v);
    for (size_t k = 0; k < p->m; k++) {
        const __m512d a = _mm512_set1_pd(t[i + k] - mu[i]);
        const double *tj = t + j + k;
        for (int v = 0; v < V; v++) {
            const __m512d x =
                _mm512_mul_round_pd(a, _mm512_sub_pd(_mm512_loadu_pd(tj + 8 * v), muj[v]),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            acc[v] = _mm512_add_round_pd(acc[v], x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
    }
    for (int v = 0; v < V; v++)
        _mm512_storeu_pd(out + 8 * v, acc[v]);
}
#endif

void tsmi_mp_exact_cov(const mp_plan *p, size_t i, size_t j, double *out) {
#if TSMI_HAVE_AVX512
    if (tsmi_cpu_avx512()) {
        exact_cov_avx512(p, i, j, out);
        return;
    }
#endif
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
