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
 *   1. plan (a block per job, thread 0 in sample order, over the samples staged in
 *      shared memory): trailing run and statistics of every new subsequence
 *      (tsmi_complete_stats), the outputs of samples that complete none (NAN) or have
 *      no left neighbour (+inf), the CPU's exact-refresh row kx if one falls in the
 *      call (age_qt >= TSM_QT_REFRESH: recentre, as online.c) and the state written
 *      back. The stored means of the window are NOT shifted here (step 3 does it).
 *   2. rows (a block per chunk): the chunk's rows in groups of up to OB_G rows, as
 *      the single-block kernel did: warp w takes the direct dot of each row's largest
 *      lag (j = base); thread x owns the lags excl + x, excl + x + OB_T, ..., reads
 *      its QT entry once per group, runs it through the group's rows by the
 *      recurrence of dot.h on the centred series
 *        QT[i][j] = QT[i-1][j-1] - a (t[j-1] - c) + b (t[j+m-1] - c),
 *      takes each row's distance and best (d2, j), and writes the lag back. Chunk 0
 *      (the call's rows before its first chunk start; often empty) continues the
 *      stored QT row; every other chunk's first row is computed directly (every lag a
 *      centred dot product, O(W m)). Row kx (age 0) always starts a chunk, so it is
 *      direct, as on the CPU. Each chunk keeps its row in scratch.
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
 * places and the chunk table go up per call through the ctx's scratch (cuda.h),
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
#define OB_G     8                    /* rows per group */
#define OB_STAGE 4096                 /* samples the plan block stages in shared memory */
#define OB_SEGS  (OB_PASS / OB_C + 4) /* chunk starts of a pass, and the end */
#define OB_FULL  0xffffffffu
#define OB_NONE  UINT32_MAX

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

/* Launch 1: the plan of job blockIdx.x (see the top of the file). */
__global__ static void __launch_bounds__(OB_T)
    plan_kernel(const tsm_online_job *jobs, ob_plan *plans) {
    __shared__ double xs[OB_STAGE];
    tsm_online_job jb = jobs[blockIdx.x];
    const double *x = jb.ring + jb.pos0;
    const size_t m = jb.m, W = jb.window, excl = jb.excl;
    /* every sample the steps read: x[fill - m .. fill + nnew - 1] */
    const size_t lo = jb.fill > m ? jb.fill - m : 0, hi = (size_t)jb.fill + jb.nnew;
    const bool staged = hi - lo <= OB_STAGE;
    for (size_t p = lo + threadIdx.x; staged && p < hi; p += OB_T)
        xs[p - lo] = x[p];
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    tsm_online_state st, *home = jb.state;
    /* a state to rebuild may never have been written (a new stream's arena region):
     * read only its flag then, rebuild writes every field */
    if (home->valid)
        st = *home;
    else
        st.valid = 0;
    jb.state = &st;
    if (!st.valid)
        tsmi_online_rebuild(&jb, x);
    const double *xr = staged ? xs - lo : x; /* xr[e] = x[e] for e >= lo */
    ob_plan p;
    p.nseg = 0, p.k0 = jb.nnew, p.kx = OB_NONE, p.ix = p.bx = 0;
    p.delta = 0.0, p.c0 = p.c1 = st.c;
    for (uint32_t k = 0; k < jb.nnew; k++) {
        const size_t e = jb.fill + k, base = e + 1 > W ? e + 1 - W : 0;
        st.run = tsmi_next_run(xr, e, st.run, m);
        if (e + 1 - base < m) { /* no subsequence complete yet */
            jb.nn[k] = NAN;
            jb.nn_index[k] = -1;
            continue;
        }
        const size_t i = e + 1 - m;
        tsmi_complete_stats(&jb, xr, i);
        if (i - base < excl) { /* no left neighbour in the window */
            jb.nn[k] = INFINITY;
            jb.nn_index[k] = -1;
            continue;
        }
        if (p.k0 == jb.nnew)
            p.k0 = k, p.seg[p.nseg++] = k;
        if (st.age_qt >= TSM_QT_REFRESH) {
            p.delta = tsmi_online_recentre(&st);
            p.kx = k, p.ix = (uint32_t)i, p.bx = (uint32_t)base, p.c1 = st.c;
            st.age_qt = 0;
        } else {
            st.age_qt++;
        }
        /* direct rows where the age of the row (steps since the CPU's exact row) is a
         * multiple of OB_C: the same rows however the samples come in calls, so the
         * values do not depend on the batching */
        if (st.age_qt % OB_C == 0)
            p.seg[p.nseg++] = k;
    }
    for (uint32_t b = p.nseg; b < OB_SEGS; b++)
        p.seg[b] = jb.nnew;
    *home = st;
    plans[blockIdx.x] = p;
}

/* A group of rows (shared memory): rows k .. k + n - 1 of the chunk. */
typedef struct {
    uint32_t i[OB_G], L[OB_G];
    double a[OB_G], b[OB_G], c[OB_G], mu[OB_G], inv[OB_G], dd[OB_G];
    uint8_t kind[OB_G], shift[OB_G];
} ob_group;

/* The mean of subsequence j as online.c has it stored when it scores a row: shifted
 * by the exact refresh when the row comes at or after kx and j was in kx's window. */
__device__ static inline double mean_at(const double *mu, const ob_plan *p, int shift, size_t j) {
    return shift && j <= p->ix ? mu[j] - p->delta : mu[j];
}

/* Launch 2: the rows of chunk blockIdx.x (see the top of the file). rows: the chunks'
 * QT rows, job q's chunk c at rows + off[q].row + c (W - m + 1). */
__global__ static void __launch_bounds__(OB_T)
    rows_kernel(const tsm_online_job *jobs, const ob_plan *plans, const ob_chunk *chunks,
                const ob_place *off, double *rows) {
    __shared__ tsm_online_job jb;
    __shared__ ob_plan p;
    __shared__ ob_group g;
    __shared__ double red_v[OB_NW][OB_G];
    __shared__ long long red_j[OB_NW][OB_G];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const ob_chunk ch = chunks[blockIdx.x];
    if (tid == 0)
        jb = jobs[ch.q], p = plans[ch.q];
    __syncthreads();
    const uint32_t kbeg = p.seg[ch.c], kend = p.seg[ch.c + 1];
    if (kbeg >= kend)
        return;
    const double *x = jb.ring + jb.pos0;
    const size_t m = jb.m, W = jb.window, K = W - m, excl = jb.excl;
    const double *mu = jb.mu + jb.pos0, *inv = jb.inv + jb.pos0;
    const uint8_t *kind = jb.kind + jb.pos0;
    double *row = rows + off[ch.q].row + (size_t)ch.c * (K + 1);
    const int64_t idx0 = off[ch.q].shift; /* the pass's x[0] in the job's x */
    for (uint32_t k = kbeg; k < kend;) {
        const bool direct = k == kbeg && ch.c > 0; /* chunk 0 continues the stored row */
        const uint32_t n = direct ? 1 : min((uint32_t)OB_G, kend - k);
        const double *src = k == kbeg ? jb.qt : row;
        __syncthreads(); /* the previous group's g and reductions are read */
        if (tid < (int)n) {
            const size_t e = jb.fill + k + tid, i = e + 1 - m, base = e + 1 > W ? e + 1 - W : 0;
            const int shift = k + tid >= p.kx;
            const double c = shift ? p.c1 : p.c0;
            g.i[tid] = (uint32_t)i, g.L[tid] = (uint32_t)(i - base);
            g.a[tid] = x[i - 1] - c, g.b[tid] = x[i + m - 1] - c, g.c[tid] = c;
            g.mu[tid] = mean_at(mu, &p, shift, i), g.inv[tid] = inv[i], g.kind[tid] = kind[i];
            g.shift[tid] = (uint8_t)shift;
        }
        __syncthreads();
        for (int q = warp; q < (int)n; q += OB_NW) { /* direct dot of lag L_q, lanes over m */
            const double *u = x + g.i[q], *v = x + g.i[q] - g.L[q], c = g.c[q];
            double s = 0.0;
            for (size_t h = lane; h < m; h += 32)
                s += (u[h] - c) * (v[h] - c);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(OB_FULL, s, o);
            if (lane == 0)
                g.dd[q] = s;
        }
        __syncthreads();

        double bd[OB_G];
        long long bj[OB_G];
#pragma unroll
        for (int q = 0; q < OB_G; q++)
            bd[q] = INFINITY, bj[q] = LLONG_MAX;
        const size_t Lmax = g.L[n - 1]; /* lags only grow within a group */
        for (size_t l = excl + tid; l <= Lmax; l += OB_T) {
            /* lags from L_0 on start with a direct dot (rows are consecutive: row q's
             * new lag is L_0 + q), so src holds them only once written: not read */
            double qv = direct || l >= g.L[0] ? 0.0 : src[K - l];
#pragma unroll
            for (int q = 0; q < OB_G; q++) {
                if (q >= (int)n || l > g.L[q])
                    continue;
                const size_t iq = g.i[q], j = iq - l;
                const double c = g.c[q];
                if (l == g.L[q])
                    qv = g.dd[q]; /* j = base: direct */
                else if (direct)
                    qv = tsmi_centred_dot(x + iq, x + j, c, m);
                else
                    qv = qv - g.a[q] * (x[j - 1] - c) + g.b[q] * (x[j + m - 1] - c);
                const double d = tsm_d2_pair(g.kind[q], kind[j], qv, g.mu[q], g.inv[q],
                                             mean_at(mu, &p, g.shift[q], j), inv[j], m);
                if (d < bd[q] || (d == bd[q] && (long long)j < bj[q]))
                    bd[q] = d, bj[q] = (long long)j;
            }
            row[K - l] = qv;
        }
        /* per-row minima: warps, then one thread per row over the warps' slots */
#pragma unroll
        for (int q = 0; q < OB_G; q++) {
            if (q >= (int)n)
                break;
            double d = bd[q];
            long long j = bj[q];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const double d2 = __shfl_xor_sync(OB_FULL, d, o);
                const long long j2 = __shfl_xor_sync(OB_FULL, j, o);
                if (d2 < d || (d2 == d && j2 < j))
                    d = d2, j = j2;
            }
            if (lane == 0)
                red_v[warp][q] = d, red_j[warp][q] = j;
        }
        __syncthreads();
        if (tid < (int)n) {
            double d = red_v[0][tid];
            long long j = red_j[0][tid];
            for (int w = 1; w < OB_NW; w++)
                if (red_v[w][tid] < d || (red_v[w][tid] == d && red_j[w][tid] < j))
                    d = red_v[w][tid], j = red_j[w][tid];
            jb.nn[k + tid] = sqrt(d);
            jb.nn_index[k + tid] = (int64_t)j + idx0;
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
    for (size_t q = 0; q < njobs; q++)
        maxnew = jobs[q].nnew > maxnew ? jobs[q].nnew : maxnew;
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
        if (sl[s].nchunks) {
            rows_kernel<<<(unsigned)sl[s].nchunks, OB_T, 0, stream>>>(
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
