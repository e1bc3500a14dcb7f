/* SPDX-License-Identifier: Apache-2.0 */
/* online.h - the online left nearest neighbour of every newly completed subsequence,
 * batched over many streams (DESIGN 4.1, 5.3 LEFT_DISCORD).
 *
 * Each stream keeps a sliding window of its last W samples in a mirrored ring
 * (sample at ring position p also at p + cap, so any run of up to cap samples is one
 * contiguous array). A call appends nothing: the caller has already written nnew new
 * samples behind the fill samples of the window. For every new sample that completes
 * a subsequence i (start i = e - m + 1 for the sample at e), the kernel
 *   1. computes mean and deviation of T[i,m] from those of T[i-1,m] (the sliding
 *      update of stats.c), exactly every TSM_STATS_REFRESH steps and after a restart;
 *      the kind (normal or constant, DESIGN 3) from the run of equal trailing samples;
 *   2. updates the QT row of i against its left neighbours j = i - l, lags l in
 *      [excl, i - base] (base = window start), by the recurrence of dot.h
 *        QT[i][j] = QT[i-1][j-1] - t[i-1] t[j-1] + t[i+m-1] t[j+m-1]
 *      for every lag but the largest (j = base), which is one direct dot product; the
 *      whole row is recomputed exactly every TSM_QT_REFRESH steps and after a restart,
 *      so every value comes from a chain of at most TSM_QT_REFRESH steps;
 *   3. reports lnn(i) = min over those j of d(i, j) (distance.h, constants per DESIGN
 *      3; ties to the smaller j), and, when the job asks for the magnitude view (DESIGN
 *      5.3), the raw left-NN min over the same j of the plain Euclidean distance
 *        e(i, j)^2 = sum_k (t[i+k] - t[j+k])^2 = S_i + S_j - 2 QT[i][j],
 *      S_j = sum_k (t[j+k] - c)^2 = M2_j + m mu_j^2 (centred moments; M2 does not
 *      depend on the centre, so the stored m2 stays valid when it moves).
 * Values enter every formula centred by a per-stream offset c (re-chosen at each exact
 * refresh, as the mean of the newest subsequence), so that sensor data with a large
 * offset does not cancel in QT - m mu_i mu_j. The windows hold finite values only.
 *
 * Everything a stream needs lives in caller-owned memory described by one
 * tsm_online_job (plain data: the CUDA backend keeps the same arrays on the device and
 * splits a job's rows into chunks of about 128, a thread block each, every chunk but
 * the first starting from a directly computed QT row (online.cu); the CPU backend runs
 * the jobs in an OpenMP loop, schedule(dynamic), one job per iteration, the samples
 * of a job in order). */
#ifndef TSM_ONLINE_H
#define TSM_ONLINE_H

#include "tsm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-stream numeric state carried from one call to the next. valid = 0 (e.g. after
 * a restart of the window or a restore) makes the next call rebuild the statistics of
 * every subsequence already in the window and the QT row from scratch. */
typedef struct {
    double c;           /* centre: formulas use t - c */
    double mu, m2;      /* mean (centred) and centred sum of squares of the last subsequence */
    uint32_t run;       /* equal samples at the end of the window, capped at m */
    uint32_t age_stats; /* sliding updates since the last exact moments */
    uint32_t age_qt;    /* recurrence steps since the last exact QT row */
    uint32_t valid;     /* the fields above and the arrays describe the window */
} tsm_online_state;

/* One stream's work for one call. Positions are ring positions; x = ring + pos0 is the
 * window's oldest sample and x[0 .. fill + nnew - 1] its samples followed by the new
 * ones (fill + nnew <= cap, so nothing needed was overwritten). */
typedef struct {
    const double *ring; /* 2 cap samples, mirrored */
    double *mu;         /* 2 cap, mirrored: mean (centred by state->c) of the subsequence */
    double *inv;        /* 2 cap, mirrored: 1 / (sqrt(m) sigma), 0 unless normal */
    uint8_t *kind;      /* 2 cap, mirrored: TSM_SUB_NORMAL or TSM_SUB_CONSTANT */
    double *qt;         /* window - m + 1 entries: the QT row, by lag (see online.c) */
    tsm_online_state *state;
    double *nn;               /* out, nnew: lnn of the subsequence the k-th new sample completes;
                                 NAN when it completes none (window shorter than m), +INFINITY
                                 when it has no left neighbour (j <= i - excl) in the window */
    int64_t *nn_index;        /* out, nnew: that neighbour's start as an index into x, or -1 */
    uint32_t cap, pos0;       /* ring capacity (>= window) and the ring position of x[0] */
    uint32_t fill;            /* window samples before the new ones (<= window) */
    uint32_t nnew;            /* new samples (fill + nnew <= cap) */
    uint32_t window, m, excl; /* W, 3 <= m, 2m <= W, 1 <= excl */
    /* The magnitude view, optional (all three or none): */
    double *m2;         /* 2 cap, mirrored: centred sum of squares M2 = m sigma^2 */
    double *mag;        /* out, nnew: the plain Euclidean left-NN distance of the
                           subsequence, NAN / +INFINITY as nn */
    int64_t *mag_index; /* out, nnew: its neighbour, as nn_index (ties to the smaller j) */
} tsm_online_job;

/* Processes every job (the jobs are independent; one stream per job). O(nnew W) per job
 * plus O(W m) per exact refresh; per-thread scratch of O(max W). Fails with TSM_EINVAL
 * (naming the job) for inconsistent sizes, before anything is written. */
tsm_status tsm_online_update(tsm_ctx *ctx, tsm_online_job *jobs, size_t njobs);

#ifdef TSMINE_HAVE_CUDA
/* The CUDA backend (online.cu), called by tsm_online_update with validated jobs: every
 * pointer in the jobs is device memory, the jobs array itself host memory. A thread
 * block per chunk of about 128 rows; returns after the results are in the jobs'
 * device arrays. */
tsm_status tsmi_online_update_cuda(tsm_ctx *ctx, const tsm_online_job *jobs, size_t njobs);
#endif

#ifdef __cplusplus
}
#endif
#endif
