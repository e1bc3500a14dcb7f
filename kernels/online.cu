/* SPDX-License-Identifier: Apache-2.0 */
/* online.cu - online left-NN of newly completed subsequences on the GPU (the CUDA
 * backend of online.h; online.c is the reference and shares its scalar steps through
 * online_step.h, so both backends run the same formulas on the same values).
 *
 * A job's rows are split into chunks of about OB_C, one thread block each, so that a
 * round's rows of one stream run side by side (the latency of a round is that of one
 * chunk, not of the whole round). Chunks start at the rows whose age (age_qt: rows
 * since the CPU's last exact refresh) is a multiple of OB_C, which depends on the
 * stream's history only, not on how its samples were split into calls: the values are
 * the same for every batching. Three launches per slice of jobs:
 *   1. plan (a block per job, over the samples staged in shared memory): trailing
 *      run and statistics of every new subsequence, the outputs of samples that
 *      complete none (NAN) or have no left neighbour (+inf), the CPU's exact-refresh
 *      row kx if one falls in the call (age_qt >= TSM_QT_REFRESH: recentre, as
 *      online.c) and the state written back. The stored means of the window are NOT
 *      shifted here (step 3 does it). Only the moments form a chain (online_step.h),
 *      and it restarts from exact moments every TSM_STATS_REFRESH + 1 steps: the
 *      lanes of warp 0 run its pieces side by side, a tile of OB_TILE subsequences
 *      at a time (a tile ends at kx, whose recentre moves the centre of the later
 *      pieces), then every thread finishes the statistics of its subsequences (the
 *      run looked back from the samples, the kind, the inverse norm); the rows, chunk
 *      starts and kx follow from the state's ages in closed form. The values are
 *      those of the chain in sample order.
 *   2. rows (a block per chunk): the chunk's rows in groups of up to OB_G rows, as
 *      the single-block kernel did: warp w takes the direct dot of each row's largest
 *      lag (j = base); thread x owns the lags excl + x, excl + x + OB_T, ..., reads
 *      its QT entry once per group, runs it through the group's rows by the
 *      recurrence of dot.h on the centred series
 *        QT[i][j] = QT[i-1][j-1] - a (t[j-1] - c) + b (t[j+m-1] - c),
 *      takes each row's distance and best (d2, j), and writes the lag back. Below
 *      the group's direct lags a cell needs no test: row q's neighbour is
 *      j0 + q, at fixed offsets from one address per lag. Chunk 0 (the call's rows
 *      before its first chunk start; often empty) continues the stored QT row; every
 *      other chunk's first row is computed directly (every lag a centred dot product,
 *      O(W m), four neighbouring lags per thread sharing their samples). Row kx
 *      (age 0) always starts a chunk, so it is direct, as on the CPU, and a chunk's
 *      rows share their centre. Each chunk keeps its row in scratch.
 *      Means: from kx on, a stored mean of j <= ix (the window at kx) counts as
 *      mu[j] - delta, the value online.c stores there at kx.
 *   3. finish (a block per job): the last chunk's row into the job's QT row; the
 *      shift of the stored means at kx (mu[j] -= delta over kx's window).
 * Values: those of online.c up to rounding (the order of the terms in direct sums,
 * FMA contraction) and the extra direct rows at chunk starts, which only shorten the
 * recurrence chains (each value is exact or at most OB_C steps from exact).
 * The decisions on the outputs (lnn >= r) are the callers' and the same for both.
 *
 * Calls with more than OB_PASS new samples in a job run as several passes (the job
 * advanced over the samples done, its neighbours' indices shifted back), so a pass
 * holds at most one exact-refresh row. Jobs go in slices whose chunk rows fit
 * OB_ROWS_BYTES of scratch (online_slices.h, host code). Memory: the jobs, their
 * places and the chunk table go up per call through the ctx's scratch (cuda_backend.h),
 * one copy; the chunk rows are device scratch. Cost per job: O(nnew W / OB_T) steps
 * per thread plus O(W m / OB_T) per chunk (its direct first row). */
#include "cuda_util.cuh"
#include "distance.h"
#include "online.h"
#include "online_slices.h"
#include "online_step.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define OB_T     256 /* threads per block */
#define OB_NW    (OB_T / 32)
#define OB_G     8                       /* rows per group */
#define OB_STAGE 3072                    /* samples the plan block stages in shared memory */
#define OB_TILE  1024                    /* subsequences whose moments the plan block holds */
#define OB_PIECE (TSM_STATS_REFRESH + 1) /* an exact moment and the sliding steps after it */
#define OB_SEGS  (OB_PASS / OB_C + 4)    /* chunk starts of a pass, and the end */
#define OB_FULL  0xffffffffu
#define OB_NONE  UINT32_MAX
static_assert(1 + (OB_TILE + OB_PIECE - 1) / OB_PIECE <= 32, "a tile's pieces fit one warp");

/* What the plan launch tells the other two about a job (device scratch). */
typedef struct {
    uint32_t seg[OB_SEGS]; /* chunk b: new samples [seg[b], seg[b + 1]), later ones nnew */
    uint32_t nseg;         /* chunks with rows; chunk 0 continues the stored QT row, the
                            * others start at a direct row (possibly chunk 0 is empty) */
    uint32_t k0;           /* first new sample that completes a row with neighbours (nnew: none) */
    uint32_t kx;           /* the sample of the exact-refresh row, OB_NONE if none */
    uint32_t ix, bx;       /* its subsequence and window start: means of [bx, ix] shift at kx */
    double delta;          /* the shift */
    double c0, c1;         /* centre before kx, from kx on */
} ob_plan;

/* The run of equal samples ending at x[e] (e >= fill), capped at m: the value that
 * the chain of tsmi_next_run from run0 (the run at x[fill - 1]) reaches at e, found
 * by looking back from e (at most m - 1 samples), so that every sample's run is known
 * without the ones before it. */
__device__ static uint32_t run_at(const double *x, size_t e, size_t fill, uint32_t run0,
                                  uint32_t m) {
    for (uint32_t d = 0;; e--) { /* d: equal neighbours found after x[e] */
        if (e == 0 || x[e] != x[e - 1])
            return min(d + 1, m); /* the run restarts at e */
        d++;
        if (e == fill)
            return min(run0 + d, m);
        if (d >= m - 1)
            return m; /* the run before e is at least 1 */
    }
}

/* The first new sample of jb that completes a subsequence (*kc) and the first whose
 * subsequence has a left neighbour (*k0), nnew where none: the tests of online.c
 * (e + 1 - base >= m, i - base >= excl) solved for e, both being monotone in e. */
__device__ static void first_rows(const tsm_online_job *jb, uint32_t *kc, uint32_t *k0) {
    const uint64_t m = jb->m, fill = jb->fill, nnew = jb->nnew;
    const uint64_t ec = m - 1, e0 = m - 1 + jb->excl; /* the first e of each */
    *kc = (uint32_t)min(nnew, fill >= ec ? 0 : ec - fill);
    *k0 = (uint64_t)jb->window - m < jb->excl ? (uint32_t)nnew
                                              : (uint32_t)min(nnew, fill >= e0 ? 0 : e0 - fill);
}

/* The chunk starts of the rows k0 .. nnew - 1 into p->seg, and the exact-refresh row
 * p->kx: row k gets age_qt a0 + 1 + (k - k0) before kx (a0: the state's), 0 at kx
 * (the first row whose age before it is >= TSM_QT_REFRESH), k - kx after; a chunk
 * starts at k0 and at every row whose age is a multiple of OB_C (the sequence of
 * online.c's age_qt in closed form). Returns age_qt after the call. */
__device__ static uint32_t chunk_starts(ob_plan *p, uint32_t k0, uint32_t nnew, uint32_t a0) {
    p->nseg = 0, p->kx = OB_NONE;
    if (k0 >= nnew)
        return a0;
    const uint32_t kx = a0 >= TSM_QT_REFRESH ? k0 : k0 + (TSM_QT_REFRESH - a0);
    p->seg[p->nseg++] = k0;
    for (uint32_t k = k0 + (OB_C - (a0 + 1) % OB_C) % OB_C; k < min(kx, nnew); k += OB_C)
        p->seg[p->nseg++] = k;
    for (uint32_t k = kx; k < nnew; k += OB_C)
        p->seg[p->nseg++] = k;
    if (kx >= nnew)
        return a0 + (nnew - k0);
    p->kx = kx;
    return nnew - 1 - kx;
}

/* The moments of subsequences i0 + s, s in [sa, sb), into mu[s - sa], m2[s - sa], by
 * the chain of tsmi_online_moments from st, split into pieces, lane L of the calling
 * warp taking the L-th: the chain recomputes exactly every OB_PIECE steps
 * (age_stats), so a piece that starts at an exact step needs nothing of the ones
 * before it; piece 0 (up to the first exact step) continues st. The lane that ends
 * the range leaves its state in st. O(m + OB_PIECE) per lane. */
__device__ static void moments_pieces(const double *x, size_t i0, size_t m, uint32_t sa,
                                      uint32_t sb, tsm_online_state *st, double *mu, double *m2) {
    const uint32_t lane = threadIdx.x & 31;
    tsm_online_state ls = *st;
    __syncwarp(); /* every lane has read st before one writes it */
    /* the first exact step: tsmi_online_moments' test (i == 0 or the age) */
    const uint32_t f = i0 + sa == 0 || ls.age_stats >= TSM_STATS_REFRESH
                           ? sa
                           : sa + (TSM_STATS_REFRESH - ls.age_stats);
    const uint32_t b = lane == 0 ? sa : f + (lane - 1) * OB_PIECE,
                   e = lane == 0 ? min(f, sb) : min(b + OB_PIECE, sb);
    if (b >= e)
        return;
    if (lane > 0)
        ls.age_stats = TSM_STATS_REFRESH; /* starts exact, as the chain does there */
    for (uint32_t s = b; s < e; s++) {
        tsmi_online_moments(x, i0 + s, m, &ls);
        mu[s - sa] = ls.mu, m2[s - sa] = ls.m2;
    }
    if (e == sb)
        st->mu = ls.mu, st->m2 = ls.m2, st->age_stats = ls.age_stats;
}

/* The state of a job: its stored state, or a rebuilt one (thread 0). */
__device__ static void load_state(tsm_online_job jb, const double *x, tsm_online_state *st) {
    const tsm_online_state *home = jb.state;
    /* a state to rebuild may never have been written (a new stream's arena region):
     * read only its flag then, rebuild writes every field */
    if (home->valid)
        *st = *home;
    else
        st->valid = 0;
    jb.state = st;
    if (!st->valid)
        tsmi_online_rebuild(&jb, x);
}

/* Launch 1: the plan of job blockIdx.x (see the top of the file). Thread 0 loads (or
 * rebuilds) the state and lays out the rows in closed form; then, a tile of
 * subsequences at a time, warp 0 runs the moments' chain in pieces and every thread
 * stores the statistics (run, kind, inverse norm) of the tile's subsequences. The
 * tile ends at kx's subsequence, whose recentre (thread 0) the chain after it uses. */
__global__ static void __launch_bounds__(OB_T)
    plan_kernel(const tsm_online_job *jobs, ob_plan *plans) {
    __shared__ double xs[OB_STAGE];
    __shared__ double smu[OB_TILE], sm2[OB_TILE];
    __shared__ tsm_online_state st;
    __shared__ ob_plan p;
    __shared__ uint32_t kc, k0, age_qt;
    tsm_online_job jb = jobs[blockIdx.x];
    const int tid = threadIdx.x;
    const double *x = jb.ring + jb.pos0;
    const size_t m = jb.m, W = jb.window, fill = jb.fill;
    const uint32_t nnew = jb.nnew;
    /* every sample the steps read: x[fill - m .. fill + nnew - 1] */
    const size_t lo = fill > m ? fill - m : 0, hi = fill + nnew;
    const bool staged = hi - lo <= OB_STAGE;
    for (size_t q = lo + tid; staged && q < hi; q += OB_T)
        xs[q - lo] = x[q];
    if (tid == 0) {
        load_state(jb, x, &st);
        first_rows(&jb, &kc, &k0);
        age_qt = chunk_starts(&p, k0, nnew, st.age_qt);
        p.k0 = k0, p.ix = p.bx = 0, p.delta = 0.0, p.c0 = p.c1 = st.c;
        if (p.kx != OB_NONE) {
            const size_t e = fill + p.kx;
            p.ix = (uint32_t)(e + 1 - m), p.bx = (uint32_t)(e + 1 > W ? e + 1 - W : 0);
        }
        for (uint32_t b = p.nseg; b < OB_SEGS; b++)
            p.seg[b] = nnew;
    }
    __syncthreads();
    const double *xr = staged ? xs - lo : x; /* xr[e] = x[e] for e >= lo */
    const uint32_t run0 = st.run;
    for (uint32_t k = tid; k < k0; k += OB_T) { /* no subsequence, or no left neighbour */
        jb.nn[k] = k < kc ? NAN : INFINITY;
        jb.nn_index[k] = -1;
        if (jb.mag)
            jb.mag[k] = jb.nn[k], jb.mag_index[k] = -1;
    }
    /* subsequence s of the call: i0 + s, completed by sample kc + s */
    const size_t i0 = fill + kc + 1 - m;
    const uint32_t ns = nnew - kc, sx = p.kx == OB_NONE ? ns : p.kx - kc;
    for (uint32_t sa = 0, sb; sa < ns; sa = sb) {
        sb = min(ns, sa + OB_TILE);
        if (sx >= sa && sx < sb)
            sb = sx + 1;
        if (tid < 32)
            moments_pieces(xr, i0, m, sa, sb, &st, smu, sm2);
        __syncthreads();
        if (tid == 0 && sb == sx + 1) { /* the exact refresh at kx: recentre, as online.c */
            p.delta = tsmi_online_recentre(&st);
            p.c1 = st.c;
        }
        for (uint32_t s = sa + tid; s < sb; s += OB_T)
            tsmi_store_stats(&jb, i0 + s, run_at(xr, fill + kc + s, fill, run0, (uint32_t)m),
                             smu[s - sa], sm2[s - sa]);
        __syncthreads(); /* the tile's moments are read, the state is the chain's */
    }
    /* every thread has read st.run (run0) before thread 0 writes it: with no tile
     * (ns == 0) the loop above has no barrier (compute-sanitizer racecheck) */
    __syncthreads();
    if (tid == 0) {
        if (nnew)
            st.run = run_at(xr, fill + nnew - 1, fill, run0, (uint32_t)m);
        st.age_qt = age_qt;
        *jb.state = st;
        plans[blockIdx.x] = p;
    }
}

/* A group of rows (shared memory): rows k .. k + n - 1 of the chunk, subsequences
 * i[0] + q. */
typedef struct {
    uint32_t i[OB_G], L[OB_G];
    double2 ab[OB_G]; /* a, b of the recurrence: x[i - 1] - c, x[i + m - 1] - c */
    double2 mi[OB_G]; /* mean and inverse norm of i */
    double si[OB_G];  /* the magnitude view: S_i = M2_i + m mu_i^2 (online.h) */
    double dd[OB_G];
    uint8_t kind[OB_G];
} ob_group;

/* What the rows of a chunk read: the job's window and statistics (from x[0]), the
 * centre and whether the stored means of kx's window count shifted. Both are the
 * chunk's: kx starts a chunk, so its rows all come before kx or all from kx on. */
typedef struct {
    const double *x, *mu, *inv, *m2; /* m2: the magnitude view's (NULL: not asked for) */
    const uint8_t *kind;
    double c, delta;
    uint32_t ix, m, K, excl;
    int shift;
} ob_view;

/* The mean of subsequence j as online.c has it stored when it scores a row: shifted
 * by the exact refresh when the row comes at or after kx and j was in kx's window. */
__device__ static inline double mean_at(const ob_view *v, uint32_t j) {
    return v->shift && j <= v->ix ? v->mu[j] - v->delta : v->mu[j];
}

/* Row q of group g at lag l: its distance (QT value qv, neighbour j = i_q - l). */
__device__ static inline double cell_d2(const ob_view *v, const ob_group *g, int q, uint32_t j,
                                        double qv) {
    return tsm_d2_pair(g->kind[q], v->kind[j], qv, g->mi[q].x, g->mi[q].y, mean_at(v, j), v->inv[j],
                       v->m);
}

/* Row q of group g at lag l: its plain squared distance (the magnitude view). */
__device__ static inline double cell_raw(const ob_view *v, const ob_group *g, int q, uint32_t j,
                                         double qv) {
    return tsmi_raw_d2(g->si[q], v->m2[j], mean_at(v, j), (double)v->m, qv);
}

/* (d, j) into a thread's best of a row if smaller, ties to the smaller j. */
__device__ static inline void keep_best(double d, uint32_t j, double *bd, uint32_t *bj) {
    if (d < *bd || (d == *bd && j < *bj))
        *bd = d, *bj = j;
}

/* The best (d, j) of the calling warp's lanes, into every lane's (*d, *j). */
__device__ static inline void warp_best(double *d, uint32_t *j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const double d2 = __shfl_xor_sync(OB_FULL, *d, o);
        const uint32_t j2 = __shfl_xor_sync(OB_FULL, *j, o);
        keep_best(d2, j2, d, j);
    }
}

/* The direct first row of a chunk (group g: one row i, lags excl .. L), thread tid's
 * lags into row and (bd, bj): every lag but L a centred dot product summed in
 * tsmi_centred_dot's order, lag L (j = base) the warp's g->dd[0]. A thread takes
 * four neighbouring lags l + t (j = i - l - t) at once, so that each sample is loaded
 * and centred once for the four: w0..w3 hold x[i - l - 3 + h .. i - l + h] - c. */
template <bool MAG>
__device__ static void direct_row(const ob_view *v, const ob_group *g, double *row, double *bd,
                                  uint32_t *bj, double *rd, uint32_t *rj) {
    const double *x = v->x, c = v->c;
    const uint32_t i = g->i[0], L = g->L[0];
    for (uint32_t l = v->excl + 4 * threadIdx.x; l < L; l += 4 * OB_T) {
        const uint32_t j = i - l;
        double acc[4] = {0.0, 0.0, 0.0, 0.0};
        double w0 = l + 3 < L ? x[j - 3] - c : 0.0, w1 = l + 2 < L ? x[j - 2] - c : 0.0,
               w2 = l + 1 < L ? x[j - 1] - c : 0.0;
        for (uint32_t h = 0; h < v->m; h++) {
            const double u = x[i + h] - c, w3 = x[j + h] - c;
            acc[0] += u * w3, acc[1] += u * w2, acc[2] += u * w1, acc[3] += u * w0;
            w0 = w1, w1 = w2, w2 = w3;
        }
#pragma unroll
        for (uint32_t t = 0; t < 4; t++) {
            if (l + t >= L)
                break;
            row[v->K - l - t] = acc[t];
            keep_best(cell_d2(v, g, 0, j - t, acc[t]), j - t, bd, bj);
            if (MAG)
                keep_best(cell_raw(v, g, 0, j - t, acc[t]), j - t, rd, rj);
        }
    }
    if (threadIdx.x == 0) {
        row[v->K - L] = g->dd[0];
        keep_best(cell_d2(v, g, 0, i - L, g->dd[0]), i - L, bd, bj);
        if (MAG)
            keep_best(cell_raw(v, g, 0, i - L, g->dd[0]), i - L, rd, rj);
    }
}

/* The lags below L_0 of group_rows (every row continues its predecessor's value by
 * the recurrence; row q's neighbour is j0 + q, j0 = i_0 - l: one base address per
 * lag, fixed offsets per row, no test per cell), from lag *lp on; *lp: the first lag
 * left. SHIFT: the chunk's v->shift (the test of mean_at, out of the loop). */
template <bool SHIFT, bool MAG>
__device__ static void group_main(const ob_view *v, const ob_group *g, uint32_t n,
                                  const double *src, double *row, double *bd, uint32_t *bj,
                                  double *rd, uint32_t *rj, uint32_t *lp) {
    const double c = v->c;
    const uint32_t m = v->m, K = v->K, i0 = g->i[0], L0 = g->L[0];
    const double2 *ab = g->ab, *mi = g->mi; /* shared: the rows' constants stay out of registers */
    const uint8_t *ki = g->kind;
    uint32_t l = *lp;
    for (; l < L0; l += OB_T) {
        const uint32_t j0 = i0 - l;
        const double *xa = v->x + j0 - 1, *xb = v->x + j0 + m - 1, *mu = v->mu + j0,
                     *inv = v->inv + j0, *m2 = MAG ? v->m2 + j0 : NULL;
        const uint8_t *kind = v->kind + j0;
        double qv = src[K - l];
#pragma unroll
        for (int q = 0; q < OB_G; q++) {
            if (q >= (int)n)
                break;
            qv = qv - ab[q].x * (xa[q] - c) + ab[q].y * (xb[q] - c);
            const double muj = SHIFT && j0 + q <= v->ix ? mu[q] - v->delta : mu[q];
            const double d = tsm_d2_pair(ki[q], kind[q], qv, mi[q].x, mi[q].y, muj, inv[q], m);
            if (d <= bd[q])
                bd[q] = d, bj[q] = j0 + q;
            if (MAG) {
                const double r = tsmi_raw_d2(g->si[q], m2[q], muj, (double)m, qv);
                if (r <= rd[q])
                    rd[q] = r, rj[q] = j0 + q;
            }
        }
        row[K - l] = qv;
    }
    *lp = l;
}

/* Rows 0 .. n - 1 of group g (none direct), thread tid's lags l = excl + tid + s OB_T,
 * into row and (bd, bj). src holds the previous row. A lag's j falls as l grows, so a
 * later equal distance has the smaller j (d <= best). Below L_0, the group's
 * smallest direct lag, every row continues (group_main); lags from L_0 on (at most
 * OB_G) start with a direct dot (row q's new lag is L_0 + q), so src is not read
 * there. */
template <bool MAG>
__device__ static void group_rows(const ob_view *v, const ob_group *g, uint32_t n,
                                  const double *src, double *row, double *bd, uint32_t *bj,
                                  double *rd, uint32_t *rj) {
    const double *x = v->x, c = v->c;
    const uint32_t m = v->m, K = v->K, Lmax = g->L[n - 1];
    uint32_t l = v->excl + threadIdx.x;
    if (v->shift)
        group_main<true, MAG>(v, g, n, src, row, bd, bj, rd, rj, &l);
    else
        group_main<false, MAG>(v, g, n, src, row, bd, bj, rd, rj, &l);
    for (; l <= Lmax; l += OB_T) {
        double qv = 0.0;
#pragma unroll
        for (int q = 0; q < OB_G; q++) {
            if (q >= (int)n || l > g->L[q])
                continue;
            const uint32_t j = g->i[q] - l;
            if (l == g->L[q])
                qv = g->dd[q]; /* j = base: direct */
            else
                qv = qv - g->ab[q].x * (x[j - 1] - c) + g->ab[q].y * (x[j + m - 1] - c);
            const double d = cell_d2(v, g, q, j, qv);
            if (d <= bd[q])
                bd[q] = d, bj[q] = j;
            if (MAG) {
                const double r = cell_raw(v, g, q, j, qv);
                if (r <= rd[q])
                    rd[q] = r, rj[q] = j;
            }
        }
        row[K - l] = qv;
    }
}

/* Launch 2: the rows of chunk blockIdx.x (see the top of the file). rows: the chunks'
 * QT rows, job q's chunk c at rows + off[q].row + c (W - m + 1). */
/* Four blocks per SM without the magnitude view (64 registers); two with it, whose
 * second best per row takes 80 registers and spilled 480 bytes at three blocks. */
template <bool MAG>
__global__ static void __launch_bounds__(OB_T, MAG ? 2 : 4)
    rows_kernel(const tsm_online_job *jobs, const ob_plan *plans, const ob_chunk *chunks,
                const ob_place *off, double *rows) {
    __shared__ tsm_online_job jb;
    __shared__ ob_plan p;
    __shared__ ob_group g;
    __shared__ double red_v[OB_NW][OB_G], red_r[MAG ? OB_NW : 1][OB_G];
    __shared__ uint32_t red_j[OB_NW][OB_G], red_k[MAG ? OB_NW : 1][OB_G];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const ob_chunk ch = chunks[blockIdx.x];
    if (tid == 0)
        jb = jobs[ch.q], p = plans[ch.q];
    __syncthreads();
    const uint32_t kbeg = p.seg[ch.c], kend = p.seg[ch.c + 1];
    if (kbeg >= kend)
        return;
    ob_view v;
    v.x = jb.ring + jb.pos0, v.mu = jb.mu + jb.pos0, v.inv = jb.inv + jb.pos0;
    v.kind = jb.kind + jb.pos0, v.m2 = MAG ? jb.m2 + jb.pos0 : NULL;
    v.shift = kbeg >= p.kx, v.c = v.shift ? p.c1 : p.c0, v.delta = p.delta, v.ix = p.ix;
    v.m = jb.m, v.K = jb.window - jb.m, v.excl = jb.excl;
    const double *x = v.x, c = v.c;
    const size_t m = jb.m, W = jb.window;
    double *row = rows + off[ch.q].row + (size_t)ch.c * (v.K + 1);
    const int64_t idx0 = off[ch.q].shift; /* the pass's x[0] in the job's x */
    for (uint32_t k = kbeg; k < kend;) {
        const bool direct = k == kbeg && ch.c > 0; /* chunk 0 continues the stored row */
        const uint32_t n = direct ? 1 : min((uint32_t)OB_G, kend - k);
        const double *src = k == kbeg ? jb.qt : row;
        __syncthreads(); /* the previous group's g and reductions are read */
        if (tid < (int)n) {
            const size_t e = jb.fill + k + tid, i = e + 1 - m, base = e + 1 > W ? e + 1 - W : 0;
            g.i[tid] = (uint32_t)i, g.L[tid] = (uint32_t)(i - base);
            g.ab[tid] = make_double2(x[i - 1] - c, x[i + m - 1] - c);
            const double mu_i = mean_at(&v, (uint32_t)i);
            g.mi[tid] = make_double2(mu_i, v.inv[i]);
            g.kind[tid] = v.kind[i];
            if (MAG)
                g.si[tid] = fma((double)m * mu_i, mu_i, v.m2[i]);
        }
        __syncthreads();
        for (int q = warp; q < (int)n; q += OB_NW) { /* direct dot of lag L_q, lanes over m */
            const double *u = x + g.i[q], *w = x + g.i[q] - g.L[q];
            double s = 0.0;
            for (size_t h = lane; h < m; h += 32)
                s += (u[h] - c) * (w[h] - c);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(OB_FULL, s, o);
            if (lane == 0)
                g.dd[q] = s;
        }
        __syncthreads();

        double bd[OB_G], rd[MAG ? OB_G : 1];
        uint32_t bj[OB_G], rj[MAG ? OB_G : 1];
#pragma unroll
        for (int q = 0; q < OB_G; q++)
            bd[q] = INFINITY, bj[q] = UINT32_MAX;
#pragma unroll
        for (int q = 0; q < (MAG ? OB_G : 1); q++)
            rd[q] = INFINITY, rj[q] = UINT32_MAX;
        /* the thread's lags, then the per-row minima: warps, then one thread per row
         * over the warps' slots */
        if (direct)
            direct_row<MAG>(&v, &g, row, bd, bj, rd, rj);
        else
            group_rows<MAG>(&v, &g, n, src, row, bd, bj, rd, rj);
#pragma unroll
        for (int q = 0; q < OB_G; q++) {
            if (q >= (int)n)
                break;
            warp_best(&bd[q], &bj[q]);
            if (lane == 0)
                red_v[warp][q] = bd[q], red_j[warp][q] = bj[q];
            if (MAG) {
                warp_best(&rd[q], &rj[q]);
                if (lane == 0)
                    red_r[warp][q] = rd[q], red_k[warp][q] = rj[q];
            }
        }
        __syncthreads();
        if (tid < (int)n) {
            double d = red_v[0][tid];
            uint32_t j = red_j[0][tid];
            for (int w = 1; w < OB_NW; w++)
                keep_best(red_v[w][tid], red_j[w][tid], &d, &j);
            jb.nn[k + tid] = sqrt(d);
            jb.nn_index[k + tid] = (int64_t)j + idx0;
            if (MAG) {
                d = red_r[0][tid], j = red_k[0][tid];
                for (int w = 1; w < OB_NW; w++)
                    keep_best(red_r[w][tid], red_k[w][tid], &d, &j);
                jb.mag[k + tid] = sqrt(d);
                jb.mag_index[k + tid] = (int64_t)j + idx0;
            }
        }
        k += n;
    }
}

/* Launch 3: job blockIdx.x's last chunk row into its QT row, then the shift of the
 * stored means at kx (after launch 2, which reads them unshifted). */
__global__ static void __launch_bounds__(OB_T)
    finish_kernel(const tsm_online_job *jobs, const ob_plan *plans, const ob_place *off,
                  const double *rows) {
    const tsm_online_job jb = jobs[blockIdx.x];
    const ob_plan p = plans[blockIdx.x];
    if (p.nseg == 0)
        return; /* no row with neighbours: neither a QT row nor a refresh */
    const size_t m = jb.m, W = jb.window, K = W - m, e = jb.fill + jb.nnew - 1;
    const size_t L = e + 1 - m - (e + 1 > W ? e + 1 - W : 0); /* the last row's largest lag */
    const double *row = rows + off[blockIdx.x].row + (size_t)(p.nseg - 1) * (K + 1);
    for (size_t l = jb.excl + threadIdx.x; l <= L; l += OB_T)
        jb.qt[K - l] = row[K - l];
    if (p.kx == OB_NONE)
        return;
    const double *mu = jb.mu + jb.pos0;
    for (size_t j = p.bx + threadIdx.x; j <= p.ix; j += OB_T)
        tsmi_put_d(jb.mu, &jb, j, mu[j] - p.delta);
}

extern "C" tsm_status tsmi_online_update_cuda(tsm_ctx *ctx, const tsm_online_job *jobs,
                                              size_t njobs) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    unsigned char *h = NULL, *d = NULL;
    size_t bytes, maxrows, maxjobs, maxnew = 0;
    if (njobs > INT_MAX)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_online_update: %zu jobs in one call (at most %d)",
                        njobs, INT_MAX);
    /* the magnitude view: asked for by every job of a call or by none (one rows kernel
     * per launch; the engine asks for all its streams alike) */
    const bool mag = njobs && jobs[0].mag;
    for (size_t q = 0; q < njobs; q++) {
        maxnew = jobs[q].nnew > maxnew ? jobs[q].nnew : maxnew;
        if (!jobs[q].mag != !mag)
            return tsm_fail(ctx, TSM_EINVAL,
                            "tsm_online_update: the magnitude view for some jobs of a call "
                            "and not others (job %zu)",
                            q);
    }
    const size_t passes = maxnew / OB_PASS + 1;
    ob_slice *sl = (ob_slice *)malloc(njobs * passes * sizeof *sl);
    if (!sl)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for the online slices of %zu jobs", njobs);
    const size_t ns = plan_slices(jobs, njobs, sl, &bytes, &maxrows, &maxjobs);
    const size_t at_plans = ob_align(bytes),
                 at_rows = at_plans + ob_align(maxjobs * sizeof(ob_plan));
    /* the slices go up from pinned scratch in one asynchronous copy, into device
     * scratch that also holds the plans and the chunk rows: nothing is allocated per
     * call; both are free again once the call returns */
    if ((st = tsmi_scratch_host(ctx, TSMI_SCRATCH_ONLINE, bytes, (void **)&h)) != TSM_OK ||
        (st = tsmi_scratch(ctx, TSMI_SCRATCH_ONLINE, at_rows + maxrows, (void **)&d)) != TSM_OK) {
        free(sl);
        return st;
    }
    fill_slices(jobs, njobs, sl, ns, h);
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
    for (size_t s = 0; s < ns; s++) {
        const tsm_online_job *dj = (const tsm_online_job *)(d + sl[s].at_jobs);
        const ob_place *off = (const ob_place *)(d + sl[s].at_off);
        ob_plan *plans = (ob_plan *)(d + at_plans);
        double *rows = (double *)(d + at_rows);
        plan_kernel<<<(unsigned)sl[s].n, OB_T, 0, stream>>>(dj, plans);
        TSM_CUDA_LAUNCHED(ctx);
        if (sl[s].nchunks && mag) {
            rows_kernel<true><<<(unsigned)sl[s].nchunks, OB_T, 0, stream>>>(
                dj, plans, (const ob_chunk *)(d + sl[s].at_chunks), off, rows);
            TSM_CUDA_LAUNCHED(ctx);
        } else if (sl[s].nchunks) {
            rows_kernel<false><<<(unsigned)sl[s].nchunks, OB_T, 0, stream>>>(
                dj, plans, (const ob_chunk *)(d + sl[s].at_chunks), off, rows);
            TSM_CUDA_LAUNCHED(ctx);
        }
        finish_kernel<<<(unsigned)sl[s].n, OB_T, 0, stream>>>(dj, plans, off, rows);
        TSM_CUDA_LAUNCHED(ctx);
    }
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    if (st != TSM_OK && st != TSM_EDEVICE)
        cudaStreamSynchronize(stream); /* the scratch is reused by the next call */
    free(sl);
    return st;
}
