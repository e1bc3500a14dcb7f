/* SPDX-License-Identifier: Apache-2.0 */
/* online.c - online left-NN of newly completed subsequences, CPU backend (OpenMP over
 * streams). The contract and the math are in online.h.
 *
 * Indices. Inside a job everything is indexed from x = ring + pos0: sample e is x[e],
 * subsequence i starts at x[i]. The window after sample e holds x[base .. e] with
 * base = max(0, e + 1 - W). The QT row of subsequence i is stored by lag l = i - j:
 * qt[K - l] = QT[i][i - l] with K = W - m (the largest lag), so the recurrence, which
 * keeps the lag, updates the row in place, and a loop over ascending j walks qt, the
 * samples and the statistics all forwards (one vectorised loop).
 *
 * Drift (DESIGN 4.1). A row value is an exact dot product (the column j = base, or the
 * whole row at an exact refresh) followed by at most TSM_QT_REFRESH recurrence steps;
 * moments slide at most TSM_STATS_REFRESH steps. Centring by c keeps every term of the
 * order of the window's spread rather than its offset. Together they bound the error
 * independently of how many samples went by (tests/online_test.c: 10^7 samples). */
#include "online.h"

#include "dispatch.h"
#include "distance.h"
#include "omp_team.h"
#include "online_step.h"

#include <math.h>
#include <stdlib.h>

/* QT row and left-NN of subsequence i over the window x[base .. i + m - 1]: lags
 * [excl, L], L = i - base (the caller checked L >= excl). Returns the squared lnn and
 * its neighbour through *best_j. O(L) (O(L m) on an exact refresh). d2 is scratch of
 * L + 1 entries. */
TSMI_HOT static double left_nn(tsm_online_job *jb, const double *x, size_t base, size_t i,
                               double *d2, int64_t *best_j) {
    tsm_online_state *st = jb->state;
    const size_t m = jb->m, K = jb->window - m, L = i - base, excl = jb->excl;
    const double *mu = jb->mu + jb->pos0, *inv = jb->inv + jb->pos0;
    const uint8_t *kind = jb->kind + jb->pos0;
    double *qt = jb->qt;
    int exact = st->age_qt >= TSM_QT_REFRESH;
    if (exact) {
        const double delta = tsmi_online_recentre(st);
        for (size_t j = base; j <= i; j++)
            tsmi_put_d(jb->mu, jb, j, mu[j] - delta);
    }
    const double c = st->c;
    const int kind_i = kind[i];
    const double mu_i = mu[i], inv_i = inv[i];
    const size_t jend = i - excl; /* last neighbour */
    /* qt[off + j] = QT[i][j]; off = K - i wraps (unsigned), off + j = K - (i - j) >= 0 */
    const size_t off = K - i;
    /* lag L (j = base): always direct, the recurrence would need x[base - 1] */
    qt[K - L] = tsmi_centred_dot(x + i, x + base, c, m);
    double best = tsm_d2_pair(kind_i, kind[base], qt[K - L], mu_i, inv_i, mu[base], inv[base], m);
    d2[0] = best;
    if (exact) {
        for (size_t j = base + 1; j <= jend; j++)
            qt[off + j] = tsmi_centred_dot(x + i, x + j, c, m);
        st->age_qt = 0;
    } else {
        /* formula (9) on the centred series, in place (the lag is kept) */
        const double a = x[i - 1] - c, b = x[i + m - 1] - c;
#pragma omp simd
        for (size_t j = base + 1; j <= jend; j++)
            qt[off + j] = qt[off + j] - a * (x[j - 1] - c) + b * (x[j + m - 1] - c);
        st->age_qt++;
    }
#pragma omp simd reduction(min : best)
    for (size_t j = base + 1; j <= jend; j++) {
        double d = tsm_d2_pair(kind_i, kind[j], qt[off + j], mu_i, inv_i, mu[j], inv[j], m);
        d2[j - base] = d;
        best = d < best ? d : best;
    }
    size_t at = 0; /* the smallest j at the minimum (DESIGN 3 ties) */
    while (at < L - excl && d2[at] != best)
        at++;
    *best_j = (int64_t)(base + at);
    return best;
}

/* The magnitude view of subsequence i (online.h): the squared plain Euclidean left-NN
 * distance over the same lags, from the QT row left_nn just wrote; its neighbour
 * through *best_j. O(L). d2 is scratch of L + 1 entries. */
TSMI_HOT static double left_nn_raw(const tsm_online_job *jb, size_t base, size_t i, double *d2,
                                   int64_t *best_j) {
    const size_t m = jb->m, K = jb->window - m, L = i - base, jend = i - jb->excl;
    const double *mu = jb->mu + jb->pos0, *m2 = jb->m2 + jb->pos0, *qt = jb->qt;
    const double fm = (double)m, s_i = fma(fm * mu[i], mu[i], m2[i]);
    const size_t off = K - i; /* as in left_nn */
    double best = INFINITY;
#pragma omp simd reduction(min : best)
    for (size_t j = base; j <= jend; j++) {
        double d = tsmi_raw_d2(s_i, m2[j], mu[j], fm, qt[off + j]);
        d2[j - base] = d;
        best = d < best ? d : best;
    }
    size_t at = 0;
    while (at < L - jb->excl && d2[at] != best)
        at++;
    *best_j = (int64_t)(base + at);
    return best;
}

/* All new samples of one job, in order. d2: scratch of W entries. */
static void run_job(tsm_online_job *jb, double *d2) {
    const double *x = jb->ring + jb->pos0;
    tsm_online_state *st = jb->state;
    const size_t m = jb->m, W = jb->window, excl = jb->excl;
    if (!st->valid)
        tsmi_online_rebuild(jb, x);
    for (size_t k = 0; k < jb->nnew; k++) {
        size_t e = jb->fill + k, base = e + 1 > W ? e + 1 - W : 0;
        st->run = tsmi_next_run(x, e, st->run, m);
        jb->nn[k] = NAN;
        jb->nn_index[k] = -1;
        if (jb->mag)
            jb->mag[k] = NAN, jb->mag_index[k] = -1;
        if (e + 1 - base < m)
            continue; /* no subsequence complete yet */
        size_t i = e + 1 - m;
        tsmi_complete_stats(jb, x, i);
        if (i - base < excl) {
            jb->nn[k] = INFINITY; /* no left neighbour in the window */
            if (jb->mag)
                jb->mag[k] = INFINITY;
            continue;
        }
        double best = left_nn(jb, x, base, i, d2, &jb->nn_index[k]);
        jb->nn[k] = sqrt(best);
        if (jb->mag) /* the row's values are those left_nn wrote, in the same centre */
            jb->mag[k] = sqrt(left_nn_raw(jb, base, i, d2, &jb->mag_index[k]));
    }
}

/* Checks one job's sizes; TSM_OK or TSM_EINVAL naming the job. */
static tsm_status check_job(tsm_ctx *ctx, const tsm_online_job *jb, size_t idx) {
    if (!jb->ring || !jb->mu || !jb->inv || !jb->kind || !jb->qt || !jb->state ||
        (jb->nnew && (!jb->nn || !jb->nn_index)))
        return tsm_fail(ctx, TSM_EINVAL, "online job %zu: a required array is NULL", idx);
    if (!jb->m2 != !jb->mag || (jb->mag && jb->nnew && !jb->mag_index))
        return tsm_fail(ctx, TSM_EINVAL,
                        "online job %zu: the magnitude view needs m2, mag and mag_index", idx);
    if (jb->m < 3 || jb->excl < 1 || jb->window < 2 * (uint64_t)jb->m || jb->cap < jb->window ||
        jb->cap > UINT32_MAX / 2)
        return tsm_fail(ctx, TSM_EINVAL,
                        "online job %zu: needs 3 <= m, 2m <= window <= cap, excl >= 1 (m %u, "
                        "window %u, cap %u, excl %u)",
                        idx, jb->m, jb->window, jb->cap, jb->excl);
    if (jb->pos0 >= jb->cap || jb->fill > jb->window || (uint64_t)jb->fill + jb->nnew > jb->cap)
        return tsm_fail(ctx, TSM_EINVAL,
                        "online job %zu: pos0 %u, fill %u and nnew %u do not fit the ring "
                        "(window %u, cap %u)",
                        idx, jb->pos0, jb->fill, jb->nnew, jb->window, jb->cap);
    return TSM_OK;
}

tsm_status tsm_online_update(tsm_ctx *ctx, tsm_online_job *jobs, size_t njobs) {
    size_t wmax = 0;
    for (size_t q = 0; q < njobs; q++) {
        tsm_status st = check_job(ctx, &jobs[q], q);
        if (st != TSM_OK)
            return st;
        wmax = jobs[q].window > wmax ? jobs[q].window : wmax;
    }
    if (njobs == 0)
        return TSM_OK;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_online_update_cuda(ctx, jobs, njobs);
#endif
    const int threads = njobs < 2 ? 1 : tsm_ctx_threads(ctx);
    double *scratch = malloc((size_t)threads * wmax * sizeof *scratch);
    if (!scratch)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for the online scratch (%d x %zu)", threads,
                        wmax);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (size_t q = 0; q < njobs; q++)
        run_job(&jobs[q], scratch + (size_t)tsmi_thread_id() * wmax);
    free(scratch);
    return TSM_OK;
}
