/* online.cu - online left-NN of newly completed subsequences on the GPU (the CUDA
 * backend of online.h; online.c is the reference and shares its scalar steps through
 * online_step.h, so both backends run the same formulas on the same values).
 *
 * Mapping. One thread block per job (stream). The job's new samples go in groups of up
 * to OB_G that complete a subsequence each (a group of one for an exact refresh):
 *   1. thread 0 plans the group in sample order: trailing run, sliding moments of each
 *      new subsequence i_g (tsmi_complete_stats), the outputs of samples that complete
 *      none (NAN) or have no left neighbour (+inf), and per row its i_g, largest lag
 *      L_g = i_g - base_g and a_g = t[i_g - 1] - c, b_g = t[i_g + m - 1] - c (shared
 *      memory). A row that is due for an exact refresh (age_qt >= TSM_QT_REFRESH) ends
 *      the group before it, or forms one alone, where thread 0 also re-centres;
 *   2. warp w computes the direct dot product of lag L_g for rows g = w, w + 8, ...
 *      (lanes over the m terms, then shuffles), which the recurrence cannot give;
 *   3. lag-major row pass: thread x owns the lags l = excl + x, excl + x + OB_T, ...;
 *      it reads QT[.][lag l] (stored by lag, online.c) once, runs it through the rows
 *      of the group in registers by the recurrence of dot.h on the centred series
 *        QT[i][j] = QT[i-1][j-1] - a_g (t[j-1] - c) + b_g (t[j+m-1] - c),  j = i_g - l,
 *      (the direct value at l = L_g; every lag directly in an exact group), takes each
 *      row's distance d2(i_g, j) and keeps the row's best (d2, j) per thread, and
 *      writes the lag back once. The samples a lag needs for consecutive rows are
 *      consecutive, so a group reads the window's samples and statistics about once
 *      instead of once per row (the kernel is bound by memory traffic);
 *   4. the per-row minima over the block (shuffles, then one slot per warp and row),
 *      ties to the smaller j (DESIGN 3).
 * The values are those of online.c: the same recurrence chain per lag, the same exact
 * refresh points (up to the order of the terms in the direct sums and FMA contraction).
 *
 * Memory. The job and its state are copied into shared memory (the state goes back at
 * the end); rings, statistics and rows stay in global memory (device pointers of the
 * jobs). The jobs array goes up per call through the ctx's scratch (cuda.h). Cost per job and
 * group: O(W / OB_T (1 + OB_G)) steps per thread, O(W m / OB_T) for an exact one; global traffic
 * about 40 W bytes per group. */
#include "cuda_util.cuh"
#include "distance.h"
#include "online.h"
#include "online_step.h"

#include <limits.h>
#include <string.h>

#define OB_T    256 /* threads per block (one block per job) */
#define OB_NW   (OB_T / 32)
#define OB_G    8 /* rows per group */
#define OB_FULL 0xffffffffu

/* A group of rows as thread 0 planned it (shared memory). */
typedef struct {
    int n;        /* rows in the group (0: the samples planned had none) */
    int exact;    /* a group of one row, recomputed directly */
    double delta; /* exact: shift of the stored means */
    uint32_t k[OB_G], i[OB_G], L[OB_G];
    double a[OB_G], b[OB_G], mu[OB_G], inv[OB_G], dd[OB_G];
    uint8_t kind[OB_G];
} ob_group;

/* Thread 0: plans the next group from sample *k on (step 1 above) and advances *k past
 * the samples it took. O(rows) plus O(m) per exact moment refresh. */
__device__ static void plan_group(tsm_online_job *jb, tsm_online_state *st, ob_group *g,
                                  uint32_t *kp) {
    const double *x = jb->ring + jb->pos0;
    const size_t m = jb->m, W = jb->window, excl = jb->excl;
    g->n = 0, g->exact = 0;
    for (uint32_t k = *kp; k < jb->nnew; k++) {
        const size_t e = jb->fill + k, base = e + 1 > W ? e + 1 - W : 0;
        const bool row = e + 1 - base >= m && e + 1 - m - base >= excl;
        const bool exact = row && st->age_qt >= TSM_QT_REFRESH;
        if (g->n == OB_G || (exact && g->n > 0)) {
            *kp = k;
            return;
        }
        *kp = k + 1;
        st->run = tsmi_next_run(x, e, st->run, m);
        jb->nn[k] = NAN;
        jb->nn_index[k] = -1;
        if (e + 1 - base < m)
            continue; /* no subsequence complete yet */
        const size_t i = e + 1 - m;
        tsmi_complete_stats(jb, x, i);
        if (!row) {
            jb->nn[k] = INFINITY; /* no left neighbour in the window */
            continue;
        }
        if (exact)
            g->delta = tsmi_online_recentre(st), g->exact = 1;
        const int q = g->n++;
        const double c = st->c;
        g->k[q] = k, g->i[q] = (uint32_t)i, g->L[q] = (uint32_t)(i - base);
        g->a[q] = x[i - 1] - c, g->b[q] = x[i + m - 1] - c;
        g->mu[q] = st->mu; /* the stored mean of i, as re-centred */
        g->inv[q] = jb->inv[(jb->pos0 + i) % jb->cap];
        g->kind[q] = jb->kind[(jb->pos0 + i) % jb->cap];
        st->age_qt = exact ? 0 : st->age_qt + 1;
        if (exact) {
            *kp = k + 1;
            return;
        }
    }
}

/* The block of job blockIdx.x (see the top of the file). */
__global__ static void __launch_bounds__(OB_T) online_kernel(const tsm_online_job *jobs) {
    __shared__ tsm_online_job jb;
    __shared__ tsm_online_state st;
    __shared__ ob_group g;
    __shared__ uint32_t next_k;
    __shared__ double red_v[OB_NW][OB_G];
    __shared__ long long red_j[OB_NW][OB_G];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid == 0) {
        jb = jobs[blockIdx.x];
        /* a state to rebuild may never have been written (a new stream's arena
         * region): read only its flag then, rebuild writes every field */
        if (jb.state->valid)
            st = *jb.state;
        else
            st.valid = 0;
        jb.state = &st;
        if (!st.valid)
            tsmi_online_rebuild(&jb, jb.ring + jb.pos0);
        next_k = 0;
    }
    __syncthreads();
    const double *x = jb.ring + jb.pos0;
    const size_t m = jb.m, K = jb.window - jb.m, excl = jb.excl;
    const double *mu = jb.mu + jb.pos0, *inv = jb.inv + jb.pos0;
    const uint8_t *kind = jb.kind + jb.pos0;

    while (next_k < jb.nnew) {
        __syncthreads(); /* everyone read next_k; g and st are free */
        if (tid == 0)
            plan_group(&jb, &st, &g, &next_k);
        __syncthreads();
        const int n = g.n, exact = g.exact;
        if (n == 0)
            continue;
        const double c = st.c;
        if (exact) { /* the stored means follow the centre */
            for (size_t j = g.i[0] - g.L[0] + tid; j <= g.i[0]; j += OB_T)
                tsmi_put_d(jb.mu, &jb, j, mu[j] - g.delta);
        }
        for (int q = warp; q < n; q += OB_NW) { /* direct dot of lag L_q, lanes over m */
            const double *u = x + g.i[q], *v = x + g.i[q] - g.L[q];
            double s = 0.0;
            for (size_t h = lane; h < m; h += 32)
                s += (u[h] - c) * (v[h] - c);
#pragma unroll
            for (int off = 16; off > 0; off >>= 1)
                s += __shfl_xor_sync(OB_FULL, s, off);
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
            double qv = jb.qt[K - l];
#pragma unroll
            for (int q = 0; q < OB_G; q++) {
                if (q >= n || l > g.L[q])
                    continue;
                const size_t iq = g.i[q], j = iq - l;
                if (l == g.L[q])
                    qv = g.dd[q]; /* j = base: direct */
                else if (exact)
                    qv = tsmi_centred_dot(x + iq, x + j, c, m);
                else
                    qv = qv - g.a[q] * (x[j - 1] - c) + g.b[q] * (x[j + m - 1] - c);
                const double d =
                    tsm_d2_pair(g.kind[q], kind[j], qv, g.mu[q], g.inv[q], mu[j], inv[j], m);
                if (d < bd[q] || (d == bd[q] && (long long)j < bj[q]))
                    bd[q] = d, bj[q] = (long long)j;
            }
            jb.qt[K - l] = qv;
        }
        /* per-row minima: warps, then one thread per row over the warps' slots */
#pragma unroll
        for (int q = 0; q < OB_G; q++) {
            if (q >= n)
                break;
            double d = bd[q];
            long long j = bj[q];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) {
                const double d2 = __shfl_xor_sync(OB_FULL, d, off);
                const long long j2 = __shfl_xor_sync(OB_FULL, j, off);
                if (d2 < d || (d2 == d && j2 < j))
                    d = d2, j = j2;
            }
            if (lane == 0)
                red_v[warp][q] = d, red_j[warp][q] = j;
        }
        __syncthreads();
        if (tid < n) {
            double d = red_v[0][tid];
            long long j = red_j[0][tid];
            for (int w = 1; w < OB_NW; w++)
                if (red_v[w][tid] < d || (red_v[w][tid] == d && red_j[w][tid] < j))
                    d = red_v[w][tid], j = red_j[w][tid];
            jb.nn[g.k[tid]] = sqrt(d);
            jb.nn_index[g.k[tid]] = (int64_t)j;
        }
    }
    if (tid == 0)
        *jobs[blockIdx.x].state = st;
}

extern "C" tsm_status tsmi_online_update_cuda(tsm_ctx *ctx, const tsm_online_job *jobs,
                                              size_t njobs) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    tsm_online_job *d_jobs = NULL, *h_jobs = NULL;
    if (njobs > INT_MAX)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_online_update: %zu jobs in one call (at most %d)",
                        njobs, INT_MAX);
    /* the jobs go up from pinned scratch (an asynchronous copy), into device scratch:
     * nothing is allocated per call; both are free again once the call returns */
    if ((st = tsmi_scratch_host(ctx, TSMI_SCRATCH_ONLINE, njobs * sizeof *h_jobs,
                                (void **)&h_jobs)) != TSM_OK ||
        (st = tsmi_scratch(ctx, TSMI_SCRATCH_ONLINE, njobs * sizeof *d_jobs, (void **)&d_jobs)) !=
            TSM_OK)
        return st;
    memcpy(h_jobs, jobs, njobs * sizeof *h_jobs);
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_jobs, h_jobs, njobs * sizeof *d_jobs,
                                      cudaMemcpyHostToDevice, stream));
    online_kernel<<<(unsigned)njobs, OB_T, 0, stream>>>(d_jobs);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    if (st != TSM_OK && st != TSM_EDEVICE)
        cudaStreamSynchronize(stream); /* the scratch is reused by the next call */
    return st;
}
