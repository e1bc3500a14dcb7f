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

#include "distance.h"
#include "dot.h"
#include "omp_team.h"

#include <math.h>
#include <stdlib.h>

/* Writes v at index i (relative to pos0) of a mirrored array: both copies. */
static inline void put_d(double *a, const tsm_online_job *jb, size_t i, double v) {
    size_t p = jb->pos0 + i, q = p < jb->cap ? p : p - jb->cap;
    a[q] = v;
    a[q + jb->cap] = v;
}

static inline void put_u8(uint8_t *a, const tsm_online_job *jb, size_t i, uint8_t v) {
    size_t p = jb->pos0 + i, q = p < jb->cap ? p : p - jb->cap;
    a[q] = v;
    a[q + jb->cap] = v;
}

/* sum_k (a[k] - c)(b[k] - c) over k < m: one QT entry of the centred series, O(m). */
static inline double centred_dot(const double *a, const double *b, double c, size_t m) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (size_t k = 0; k < m; k++)
        acc += (a[k] - c) * (b[k] - c);
    return acc;
}

/* Moments of subsequence i into st->mu, st->m2: exact (two passes) when i == 0 or the
 * sliding chain is TSM_STATS_REFRESH long, else the sliding update of stats.c
 *   mu' = mu + (x_in - x_out) / m,  M2' = M2 + (x_in - x_out)(x_in - mu' + x_out - mu). */
static void moments(const double *x, size_t i, size_t m, tsm_online_state *st) {
    const double c = st->c;
    if (i == 0 || st->age_stats >= TSM_STATS_REFRESH) {
        double sum = 0.0, acc = 0.0;
        for (size_t k = 0; k < m; k++)
            sum += x[i + k] - c;
        double mu = sum / (double)m;
        for (size_t k = 0; k < m; k++)
            acc += (x[i + k] - c - mu) * (x[i + k] - c - mu);
        st->mu = mu, st->m2 = acc, st->age_stats = 0;
        return;
    }
    double x_in = x[i + m - 1] - c, x_out = x[i - 1] - c;
    double mu_new = st->mu + (x_in - x_out) / (double)m;
    st->m2 += (x_in - x_out) * (x_in - mu_new + x_out - st->mu);
    st->mu = mu_new;
    st->age_stats++;
}

/* The run of equal samples ending at x[e], capped at m (a subsequence is constant,
 * max == min, exactly when the run ending at its last sample is >= m). */
static inline uint32_t next_run(const double *x, size_t e, uint32_t run, size_t m) {
    if (e == 0 || x[e] != x[e - 1])
        return 1;
    return run < m ? run + 1 : (uint32_t)m;
}

/* Statistics of subsequence i (moments, kind, inverse norm) into the state and the
 * mirrored arrays. */
static void complete_stats(tsm_online_job *jb, const double *x, size_t i) {
    tsm_online_state *st = jb->state;
    const size_t m = jb->m;
    moments(x, i, m, st);
    uint8_t kind = st->run >= m ? TSM_SUB_CONSTANT : TSM_SUB_NORMAL;
    double sig, inv;
    tsm_finish_moments(&kind, st->m2, m, &sig, &inv);
    put_d(jb->mu, jb, i, st->mu);
    put_d(jb->inv, jb, i, inv);
    put_u8(jb->kind, jb, i, kind);
}

/* Rebuilds the state of a window whose arrays are not valid (restart or restore): the
 * centre, the trailing run and the statistics of every subsequence in x[0 .. fill-1];
 * the next row is then computed exactly. O(fill + fill m / TSM_STATS_REFRESH). */
static void rebuild(tsm_online_job *jb, const double *x) {
    tsm_online_state *st = jb->state;
    const size_t fill = jb->fill, m = jb->m;
    *st = (tsm_online_state){.c = fill ? x[fill - 1] : x[0], .age_qt = TSM_QT_REFRESH};
    for (size_t e = 0; e < fill; e++) {
        st->run = next_run(x, e, st->run, m);
        if (e + 1 >= m)
            complete_stats(jb, x, e + 1 - m);
    }
    st->valid = 1;
}

/* Moves the centre to the mean of the newest subsequence i: every stored mean of the
 * window's subsequences [base, i] shifts by the same amount. O(i - base). */
static void recentre(tsm_online_job *jb, const double *mu, size_t base, size_t i) {
    tsm_online_state *st = jb->state;
    /* the shift actually applied: c + mu rounds, and the stored means must move by
     * exactly what c moved by (c_new - c_old is exact: the two are close) */
    const double c_new = st->c + st->mu, delta = c_new - st->c;
    st->c = c_new;
    st->mu -= delta;
    for (size_t j = base; j <= i; j++)
        put_d(jb->mu, jb, j, mu[j] - delta);
}

/* QT row and left-NN of subsequence i over the window x[base .. i + m - 1]: lags
 * [excl, L], L = i - base (the caller checked L >= excl). Returns the squared lnn and
 * its neighbour through *best_j. O(L) (O(L m) on an exact refresh). d2 is scratch of
 * L + 1 entries. */
static double left_nn(tsm_online_job *jb, const double *x, size_t base, size_t i, double *d2,
                      int64_t *best_j) {
    tsm_online_state *st = jb->state;
    const size_t m = jb->m, K = jb->window - m, L = i - base, excl = jb->excl;
    const double *mu = jb->mu + jb->pos0, *inv = jb->inv + jb->pos0;
    const uint8_t *kind = jb->kind + jb->pos0;
    double *qt = jb->qt;
    int exact = st->age_qt >= TSM_QT_REFRESH;
    if (exact)
        recentre(jb, mu, base, i);
    const double c = st->c;
    const int kind_i = kind[i];
    const double mu_i = mu[i], inv_i = inv[i];
    const size_t jend = i - excl; /* last neighbour */
    /* qt[off + j] = QT[i][j]; off = K - i wraps (unsigned), off + j = K - (i - j) >= 0 */
    const size_t off = K - i;
    /* lag L (j = base): always direct, the recurrence would need x[base - 1] */
    qt[K - L] = centred_dot(x + i, x + base, c, m);
    double best = tsm_d2_pair(kind_i, kind[base], qt[K - L], mu_i, inv_i, mu[base], inv[base], m);
    d2[0] = best;
    if (exact) {
        for (size_t j = base + 1; j <= jend; j++)
            qt[off + j] = centred_dot(x + i, x + j, c, m);
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

/* All new samples of one job, in order. d2: scratch of W entries. */
static void run_job(tsm_online_job *jb, double *d2) {
    const double *x = jb->ring + jb->pos0;
    tsm_online_state *st = jb->state;
    const size_t m = jb->m, W = jb->window, excl = jb->excl;
    if (!st->valid)
        rebuild(jb, x);
    for (size_t k = 0; k < jb->nnew; k++) {
        size_t e = jb->fill + k, base = e + 1 > W ? e + 1 - W : 0;
        st->run = next_run(x, e, st->run, m);
        jb->nn[k] = NAN;
        jb->nn_index[k] = -1;
        if (e + 1 - base < m)
            continue; /* no subsequence complete yet */
        size_t i = e + 1 - m;
        complete_stats(jb, x, i);
        if (i - base < excl) {
            jb->nn[k] = INFINITY; /* no left neighbour in the window */
            continue;
        }
        double best = left_nn(jb, x, base, i, d2, &jb->nn_index[k]);
        jb->nn[k] = sqrt(best);
    }
}

/* Checks one job's sizes; TSM_OK or TSM_EINVAL naming the job. */
static tsm_status check_job(tsm_ctx *ctx, const tsm_online_job *jb, size_t idx) {
    if (!jb->ring || !jb->mu || !jb->inv || !jb->kind || !jb->qt || !jb->state ||
        (jb->nnew && (!jb->nn || !jb->nn_index)))
        return tsm_fail(ctx, TSM_EINVAL, "online job %zu: a required array is NULL", idx);
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
    /* Seam for the CUDA backend (online.cu, one block per job): the jobs' arrays would
     * then be device memory. Until it exists every ctx runs the jobs here. */
    if (njobs == 0)
        return TSM_OK;
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
