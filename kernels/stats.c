/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c - sliding means, deviations and kinds of all subsequences (CPU). */
#include "stats.h"

#ifdef TSMINE_HAVE_CUDA
#include "cuda_backend.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tsm_centre_series(const double *raw, size_t n, double *t) {
    double sum = 0.0;
    size_t finite = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(raw[k]))
            sum += raw[k], finite++;
    const double c = finite ? sum / (double)finite : 0.0;
    for (size_t k = 0; k < n; k++)
        t[k] = isfinite(raw[k]) ? raw[k] - c : 0.0;
}

/* Marks each subsequence NORMAL, CONSTANT (max == min) or NONFINITE in O(n): a
 * running count of non-finite values in the window, and the length of the run of
 * equal values that starts at each position, computed right to left. */
static void classify(const double *raw, size_t n, size_t m, uint8_t *kind, size_t *run) {
    size_t N = n - m + 1;
    run[n - 1] = 1;
    for (size_t k = n - 1; k-- > 0;)
        run[k] = (raw[k] == raw[k + 1]) ? run[k + 1] + 1 : 1;
    size_t bad = 0;
    for (size_t k = 0; k < m; k++)
        bad += !isfinite(raw[k]);
    for (size_t i = 0; i < N; i++) {
        if (i > 0)
            bad += !isfinite(raw[i + m - 1]) - !isfinite(raw[i - 1]);
        kind[i] = bad ? TSM_SUB_NONFINITE : (run[i] >= m ? TSM_SUB_CONSTANT : TSM_SUB_NORMAL);
    }
}

/* Sliding moments on the CPU: on a shift by one, with x_out leaving and x_in entering,
 *   mu'  = mu + (x_in - x_out) / m
 *   M2'  = M2 + (x_in - x_out) (x_in - mu' + x_out - mu)
 * (Welford's update for a window); every TSM_STATS_REFRESH steps it restarts exactly
 * (the zeros that replace non-finite values keep the sums finite). O(n + n m /
 * TSM_STATS_REFRESH). */
static void sliding_moments(tsm_stats *s) {
    const double *t = s->t;
    const size_t m = s->m;
    double mu = 0.0, m2 = 0.0;
    for (size_t i = 0; i < s->N; i++) {
        if (i % TSM_STATS_REFRESH == 0) {
            tsm_exact_moments(t + i, m, &mu, &m2);
        } else {
            double x_in = t[i + m - 1], x_out = t[i - 1];
            double mu_new = mu + (x_in - x_out) / (double)m;
            m2 += (x_in - x_out) * (x_in - mu_new + x_out - mu);
            mu = mu_new;
        }
        s->mu[i] = mu;
        tsm_finish_moments(&s->kind[i], m2, m, &s->sig[i], &s->inv[i]);
    }
}

tsm_status tsm_stats_new(tsm_ctx *ctx, const double *raw, size_t n, size_t m, tsm_stats **out) {
    *out = NULL;
    tsm_status st = tsm_check_shape(ctx, n, m, 1);
    if (st != TSM_OK)
        return st;
    size_t N = n - m + 1;
    tsm_stats *s = calloc(1, sizeof *s);
    size_t *run = malloc(n * sizeof *run);
    if (!s || !run)
        goto nomem;
    s->n = n, s->m = m, s->N = N;
    s->t = malloc(n * sizeof *s->t);
    s->mu = malloc(N * sizeof *s->mu);
    s->inv = malloc(N * sizeof *s->inv);
    s->sig = malloc(N * sizeof *s->sig);
    s->kind = malloc(N);
    if (!s->t || !s->mu || !s->inv || !s->sig || !s->kind)
        goto nomem;

    tsm_centre_series(raw, n, s->t);
    classify(raw, n, m, s->kind, run);
    free(run);
    run = NULL;

#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA) {
        st = tsmi_stats_cuda(ctx, s); /* moments on the device, copies on both sides */
        if (st != TSM_OK) {
            tsm_stats_destroy(&s);
            return st;
        }
    } else
#endif
        sliding_moments(s);

    for (size_t i = 0; i < N; i++) {
        s->n_normal += s->kind[i] == TSM_SUB_NORMAL;
        s->n_constant += s->kind[i] == TSM_SUB_CONSTANT;
        s->n_nonfinite += s->kind[i] == TSM_SUB_NONFINITE;
    }
    *out = s;
    return TSM_OK;

nomem:
    free(run);
    tsm_stats_destroy(&s);
    return tsm_fail(ctx, TSM_ENOMEM, "out of memory for the statistics of %zu values", n);
}

void tsm_stats_destroy(tsm_stats **self_p) {
    if (*self_p) {
        tsm_stats *s = *self_p;
        free(s->t);
        free(s->mu);
        free(s->inv);
        free(s->sig);
        free(s->kind);
#ifdef TSMINE_HAVE_CUDA
        tsmi_stats_dev_free(s->dev);
#endif
        free(s);
        *self_p = NULL;
    }
}
