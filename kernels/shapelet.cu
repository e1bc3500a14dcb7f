/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet.cu - shapelet discovery on the GPU (the CUDA twin of shapelet.c; the
 * contract is shapelet.h, the shared arithmetic shapelet_dist.h and shapelet_split.h).
 *
 * Discovery (tsmi_shapelet_discover_cuda) keeps everything on the device: the
 * training set is uploaded once, and for each candidate length l the stream runs
 *   shp_moments  mean, inverse norm and kind of every length-l subsequence;
 *   shp_euclid   the candidate-to-series distances (below) into a buffer of `batch`
 *                candidates, which fills across lengths (order indices follow on);
 *   shp_dtw      (w > 0) the banded DTW minima from the Euclidean alignments;
 * and on a full buffer (or after the last length)
 *   shp_split    one thread per candidate: its order line sorted and the exact (or
 *                heuristic) best split by tsmi_split_exact / tsmi_split_heuristic, the
 *                same functions the CPU runs, then the block's best candidate by
 *                tsmi_split_better (a tree reduction in shared memory);
 * and at the end shp_reduce picks the best of the block bests in one block. The host
 * waits once, for one 40-byte result (and after each buffer only when a progress
 * callback asks for it). Memory comes from the ctx's grow-only scratch (cuda_backend.h), so a
 * discovery allocates nothing in the steady state.
 *
 * Euclidean kernel: seed 002 Algorithm 4 with its shared-memory tiling (Algorithm 3).
 * Block (chunk, j) takes R consecutive candidate starts s0 .. s0 + R - 1 of one
 * series i (R: SHP_ROWS, or U rounded up to a warp of SHP_K-row threads when
 * shorter) against series j; thread r holds the SHP_K rows s0 + r SHP_K + k. Shared
 * memory holds the candidate span T_i[s0 .. s0 + R + l - 2], the whole of T_j, the
 * first row QT[s0][u] (computed directly, threads striding over u), and two buffers of
 * each thread's last row value of the previous step. Every row follows seed 002
 * eq. (6) along its diagonal,
 *   QT[s][u] = QT[s-1][u-1] - T_i[s-1] T_j[u-1] + T_i[s+l-1] T_j[u+l-1],
 * row k > 0 of a thread from its own row k - 1, row 0 from thread r - 1's last row
 * (the buffer), the block's row s0 from the first row; at u = 0 each row computes its
 * column entry directly. One __syncthreads per step; the two T_j values and the
 * means, inverse norms and kinds of T_j's subsequence u are read once per thread for
 * its SHP_K rows (broadcast loads), and the candidate values T_i[s-1], T_i[s+l-1] sit
 * in registers. Each row keeps its best match (largest effective correlation, first u
 * on ties).
 *
 * DTW kernel: one thread per (candidate, series) pair runs tsmi_dtw_min from the
 * Euclidean kernel's best alignment, band rows in registers/local memory, so w is
 * limited to SHP_MAX_W here (O(w) memory per pair as seed 003 4.1). */
#include "cuda_util.cuh"
#include "shapelet.h"
#include "shapelet_dist.h"
#include "shapelet_split.h"

#include <stdlib.h>

#define SHP_ROWS     256 /* candidate rows of a Euclidean block, at most */
#define SHP_K        4   /* rows per thread of a Euclidean block */
#define SHP_MAX_W    64
#define SHP_SPLIT_T  64            /* threads of a split block, at most */
#define SHP_REDUCE_T 256           /* threads of the final reduction */
#define SHP_SPLIT_SH (48u * 1024u) /* shared memory for order lines held in shared memory */

/* A candidate's split and its order index (shapelet.h): what the reductions carry. */
typedef struct {
    tsm_split s;
    size_t ord;
} shp_best;

/* Threads of a split block for order lines of n items: 64, or 32 when 64 lines of
 * n distances and labels do not fit in SHP_SPLIT_SH but 32 do (shared memory keeps the
 * sort's random accesses on chip); larger n sorts in global memory with 64. */
static unsigned split_threads(size_t n) {
    const size_t item = sizeof(double) + sizeof(int);
    return (size_t)SHP_SPLIT_T * n * item <= SHP_SPLIT_SH || 32 * n * item > SHP_SPLIT_SH
               ? SHP_SPLIT_T
               : 32;
}

/* Rows (candidate starts) of a Euclidean block for U starts: U rounded up to a warp of
 * SHP_K-row threads, at most SHP_ROWS; the block has rows / SHP_K threads. */
static unsigned euclid_rows(size_t U) {
    const size_t g = 32 * SHP_K;
    size_t r = (U + g - 1) / g * g;
    return (unsigned)(r < SHP_ROWS ? r : SHP_ROWS);
}

/* Shared memory of a Euclidean block of R rows over series of length L: the span
 * R + l, T_j (L), the first row (U = L - l + 1) and two buffers of R / SHP_K; l + U =
 * L + 1. */
static size_t euclid_smem(size_t L, unsigned R) {
    return (2 * (size_t)R + 2 * L + 1) * sizeof(double);
}

/* See the file comment. t, mu, inv, kind: device statistics of the concatenated
 * series (length l). out/pos: count * n entries, candidate c at (c - c0) * n + j; pos
 * may be NULL. Thread r holds rows r SHP_K .. r SHP_K + SHP_K - 1 of the block: at
 * step u its row k > 0 follows from its own row k - 1 of step u - 1, row 0 from thread
 * r - 1's last row (shared memory), so one exchange, one pair of T_j loads and one
 * set of T_j statistics serve SHP_K rows. */
__global__ static void shp_euclid(const double *__restrict__ t, const double *__restrict__ mu,
                                  const double *__restrict__ inv, const uint8_t *__restrict__ kind,
                                  size_t n, size_t L, size_t l, size_t c0, size_t count,
                                  size_t i_first, size_t chunks_per_series, double *out,
                                  int64_t *pos) {
    extern __shared__ double sh[];
    const size_t T = blockDim.x, R = T * SHP_K, U = L - l + 1;
    const size_t i = i_first + blockIdx.x / chunks_per_series;
    const size_t s0 = (blockIdx.x % chunks_per_series) * R;
    const size_t j = blockIdx.y, b = j * L;
    const unsigned r = threadIdx.x;
    const size_t span = (U - s0 < R ? U - s0 : R) + l - 1;
    double *ti = sh;         /* R + l - 1 */
    double *tj = ti + R + l; /* L */
    double *row0 = tj + L;   /* U */
    double *buf = row0 + U;  /* 2 T */
    for (size_t k = r; k < span; k += T)
        ti[k] = t[i * L + s0 + k];
    for (size_t k = r; k < L; k += T)
        tj[k] = t[b + k];
    __syncthreads();
    for (size_t u = r; u < U; u += T) {
        double q = 0.0;
        for (size_t k = 0; k < l; k++)
            q += ti[k] * tj[u + k];
        row0[u] = q;
    }
    /* per row k: QT value, best match, the two candidate values of the recurrence
     * (leaving T_i[s-1], entering T_i[s+l-1]) and the candidate's statistics */
    double q[SHP_K], best[SHP_K], aout[SHP_K], ain[SHP_K], lm[SHP_K], ia[SHP_K];
    size_t bu[SHP_K];
    int ka[SHP_K];
    bool act[SHP_K];
#pragma unroll
    for (int k = 0; k < SHP_K; k++) {
        const size_t rr = (size_t)r * SHP_K + k, s = s0 + rr, c = i * U + s;
        const size_t a = i * L + (s < U ? s : 0);
        act[k] = s < U && c >= c0 && c < c0 + count;
        ka[k] = kind[a];
        lm[k] = (double)l * mu[a], ia[k] = inv[a];
        aout[k] = rr > 0 ? ti[rr - 1] : 0.0;
        ain[k] = ti[rr + l - 1];
        q[k] = 0.0;
        if (s < U && rr > 0)
            for (size_t m = 0; m < l; m++)
                q[k] += ti[rr + m] * tj[m];
        best[k] = -INFINITY, bu[k] = 0;
    }
    __syncthreads();
    for (size_t u = 0; u < U; u++) {
        double *rd = buf + ((u & 1) ? 0 : T), *wr = buf + ((u & 1) ? T : 0);
        if (u > 0) {
            const double bo = tj[u - 1], bi = tj[u + l - 1];
#pragma unroll
            for (int k = SHP_K - 1; k > 0; k--)
                q[k] = q[k - 1] - aout[k] * bo + ain[k] * bi;
            q[0] = r == 0 ? row0[u] : rd[r - 1] - aout[0] * bo + ain[0] * bi;
        } else if (r == 0) {
            q[0] = row0[0];
        }
        wr[r] = q[SHP_K - 1];
        const double mb = mu[b + u], ib = inv[b + u];
        const int kb = kind[b + u];
#pragma unroll
        for (int k = 0; k < SHP_K; k++) {
            const double cr = tsmi_match_corr(ka[k], q[k], lm[k], ia[k], mb, ib, kb);
            if (act[k] && cr > best[k])
                best[k] = cr, bu[k] = u;
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < SHP_K; k++) {
        if (!act[k])
            continue;
        const size_t c = i * U + s0 + (size_t)r * SHP_K + k;
        out[(c - c0) * n + j] = tsmi_corr_dist(best[k]);
        if (pos)
            pos[(c - c0) * n + j] = (int64_t)bu[k];
    }
}

/* DTW minimum of every (candidate, series) pair, from the Euclidean alignment pos. */
__global__ static void shp_dtw(const double *__restrict__ t, const double *__restrict__ mu,
                               const double *__restrict__ inv, const uint8_t *__restrict__ kind,
                               size_t n, size_t L, size_t l, size_t w, size_t c0, size_t count,
                               double *out, int64_t *pos) {
    const size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count * n)
        return;
    double prev[2 * SHP_MAX_W + 1], cur[2 * SHP_MAX_W + 1];
    const size_t U = L - l + 1, c = c0 + p / n, j = p % n;
    const size_t a = (c / U) * L + c % U;
    out[p] = tsmi_dtw_min(t, mu, inv, kind, a, j * L, U, l, w, (size_t)pos[p], prev, cur, pos + p);
}

/* The distances of a flat candidate range of length l (shp_euclid, then shp_dtw for
 * w > 0; pos must be given then) queued on stream. The caller has raised shp_euclid's
 * shared-memory limit to euclid_smem(L, SHP_ROWS). */
static tsm_status launch_dist(tsm_ctx *ctx, cudaStream_t stream, const double *t, const double *mu,
                              const double *inv, const uint8_t *kind, size_t n, size_t L, size_t l,
                              size_t w, size_t c0, size_t count, double *out, int64_t *pos) {
    tsm_status st = TSM_OK;
    const size_t U = L - l + 1;
    const unsigned R = euclid_rows(U);
    const size_t chunks = (U + R - 1) / R;
    const size_t i_first = c0 / U, i_last = (c0 + count - 1) / U;
    /* blocks of the series touched by the range; rows outside it stay idle */
    dim3 grid((unsigned)((i_last - i_first + 1) * chunks), (unsigned)n);
    shp_euclid<<<grid, R / SHP_K, euclid_smem(L, R), stream>>>(t, mu, inv, kind, n, L, l, c0, count,
                                                               i_first, chunks, out, pos);
    TSM_CUDA_LAUNCHED(ctx);
    if (w > 0) {
        shp_dtw<<<tsmi_blocks(count * n, 128), 128, 0, stream>>>(t, mu, inv, kind, n, L, l, w, c0,
                                                                 count, out, pos);
        TSM_CUDA_LAUNCHED(ctx);
    }
done:
    return st;
}

/* Checks the limits of the CUDA kernels and raises shp_euclid's shared memory. */
static tsm_status prepare_dist(tsm_ctx *ctx, size_t n, size_t L, size_t w) {
    tsm_status st = TSM_OK;
    if (w > SHP_MAX_W)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: the CUDA backend takes w <= %d (got %zu)",
                        SHP_MAX_W, w);
    if (n > 65535)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: the CUDA backend takes at most 65535 series");
    TSM_CUDA_TRY(ctx, cudaFuncSetAttribute(shp_euclid, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)euclid_smem(L, SHP_ROWS)));
done:
    return st;
}

extern "C" tsm_status tsmi_shapelet_dist_cuda(tsm_ctx *ctx, const tsm_stats *S, size_t n, size_t L,
                                              size_t c0, size_t count, size_t w, double *out,
                                              int64_t *pos) {
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t cells = count * n;
    void *mem = NULL;
    if (!S->dev)
        return tsm_fail(ctx, TSM_EINTERNAL, "shapelet: statistics have no device copy");
    tsm_status st = prepare_dist(ctx, n, L, w);
    if (st != TSM_OK)
        return st;
    st = tsmi_scratch(ctx, TSMI_SCRATCH_SHAPELET, cells * (sizeof(double) + sizeof(int64_t)), &mem);
    if (st != TSM_OK)
        return st;
    {
        double *d_out = (double *)mem;
        int64_t *d_pos = (int64_t *)(d_out + cells);
        const tsm_stats_dev *dv = S->dev;
        st = launch_dist(ctx, stream, dv->t, dv->mu, dv->inv, dv->kind, n, L, S->m, w, c0, count,
                         d_out, d_pos);
        if (st != TSM_OK)
            return st;
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(out, d_out, cells * sizeof *out, cudaMemcpyDeviceToHost, stream));
        if (pos)
            TSM_CUDA_TRY(ctx, cudaMemcpyAsync(pos, d_pos, cells * sizeof *pos,
                                              cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    }
done:
    return st;
}

/* ---- Discovery on the device -------------------------------------------------------- */

/* Thread i: mean, inverse norm and kind of the length-l window i of the working series
 * t (tsm_exact_moments, as stats.c; the data is finite, so a window is constant when
 * the run of equal values starting at i, run[i], covers it). */
__global__ static void shp_moments(const double *__restrict__ t, const uint32_t *__restrict__ run,
                                   size_t N, size_t l, double *__restrict__ mu,
                                   double *__restrict__ inv, uint8_t *__restrict__ kind) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    double mean, m2;
    tsm_exact_moments(t + i, l, &mean, &m2);
    uint8_t kd = run[i] >= l ? TSM_SUB_CONSTANT : TSM_SUB_NORMAL;
    double sig;
    mu[i] = mean;
    tsm_finish_moments(&kd, m2, l, &sig, &inv[i]);
    kind[i] = kd;
}

/* No candidate: an invalid split, which never wins. */
__device__ static shp_best shp_none(void) {
    shp_best b;
    b.s.gain = b.s.gap = b.s.threshold = 0.0;
    b.s.valid = 0;
    b.ord = 0;
    return b;
}

/* The block's best of the threads' mine into red[0] (tsmi_split_better; a tree
 * reduction over blockDim.x, a power of two, entries of red). */
__device__ static void block_best(shp_best *red, unsigned tid, shp_best mine) {
    red[tid] = mine;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (tid < h &&
            tsmi_split_better(&red[tid + h].s, red[tid + h].ord, &red[tid].s, red[tid].ord))
            red[tid] = red[tid + h];
        __syncthreads();
    }
}

/* Thread c < count: the best split of candidate c's n distances dist[c n ..], combined
 * with base by op (tsmi_combine; sorted in place, or in shared memory when sh_items:
 * T n doubles, then T n ints), labels y
 * copied to work[c (n + 3 nc) ..], class counts after them; then the block's best
 * (candidate order index ord0 + c) into blk[blockIdx.x]. */
__global__ static void shp_split(double *__restrict__ dist, const int *__restrict__ y,
                                 int *__restrict__ work, size_t n, int nc,
                                 const double *__restrict__ xlx, size_t count, size_t ord0,
                                 int heuristic, uint64_t seed, int op,
                                 const double *__restrict__ base, int sh_items, shp_best *blk) {
    extern __shared__ double shd[];
    __shared__ shp_best red[SHP_SPLIT_T];
    const unsigned tid = threadIdx.x;
    const size_t c = (size_t)blockIdx.x * blockDim.x + tid;
    shp_best mine = shp_none();
    if (c < count) {
        int *wk = work + c * (n + 3 * (size_t)nc);
        double *d = sh_items ? shd + tid * n : dist + c * n;
        int *yy = sh_items ? (int *)(shd + (size_t)blockDim.x * n) + tid * n : wk;
        for (size_t k = 0; k < n; k++) {
            d[k] = tsmi_combine(op, op ? base[k] : 0.0, dist[c * n + k]);
            yy[k] = y[k];
        }
        mine.ord = ord0 + c;
        mine.s = heuristic ? tsmi_split_heuristic(d, yy, n, nc, wk + n,
                                                  seed ^ (mine.ord * 0xD1B54A32D192ED03ull), xlx)
                           : tsmi_split_exact(d, yy, n, nc, wk + n, xlx);
    }
    block_best(red, tid, mine);
    if (tid == 0)
        blk[blockIdx.x] = red[0];
}

/* One block: the best of the m block bests blk (each thread scans a stride in order,
 * then a tree reduction) into *out. */
__global__ static void shp_reduce(const shp_best *__restrict__ blk, size_t m, shp_best *out) {
    __shared__ shp_best red[SHP_REDUCE_T];
    const unsigned tid = threadIdx.x;
    shp_best mine = shp_none();
    for (size_t k = tid; k < m; k += blockDim.x)
        if (tsmi_split_better(&blk[k].s, blk[k].ord, &mine.s, mine.ord))
            mine = blk[k];
    block_best(red, tid, mine);
    if (tid == 0)
        *out = red[0];
}

/* Carves bytes (rounded up to 256) off the scratch cursor *at. */
static void *carve(char **at, size_t bytes) {
    void *p = *at;
    *at += (bytes + 255) / 256 * 256;
    return p;
}

/* The device arrays of one discovery (carved from one scratch buffer). */
typedef struct {
    double *t, *mu, *inv, *dist, *xlx, *base;
    uint32_t *run;
    uint8_t *kind;
    int *y, *work;
    int64_t *pos;
    shp_best *blk, *res;
} shp_dev;

/* Lays out the device arrays in the scratch slot (NL values, batch candidates, nblk
 * block bests); with base NULL only counts the bytes into *bytes. */
static void layout(shp_dev *D, char *base, size_t n, size_t NL, size_t nc, size_t batch, size_t w,
                   size_t nblk, size_t *bytes) {
    char *at = base;
    D->t = (double *)carve(&at, NL * sizeof(double));
    D->mu = (double *)carve(&at, NL * sizeof(double));
    D->inv = (double *)carve(&at, NL * sizeof(double));
    D->run = (uint32_t *)carve(&at, NL * sizeof(uint32_t));
    D->kind = (uint8_t *)carve(&at, NL);
    D->y = (int *)carve(&at, n * sizeof(int));
    D->xlx = (double *)carve(&at, (n + 1) * sizeof(double));
    D->base = (double *)carve(&at, n * sizeof(double));
    D->dist = (double *)carve(&at, batch * n * sizeof(double));
    D->pos = w > 0 ? (int64_t *)carve(&at, batch * n * sizeof(int64_t)) : NULL;
    D->work = (int *)carve(&at, batch * (n + 3 * nc) * sizeof(int));
    D->blk = (shp_best *)carve(&at, nblk * sizeof(shp_best));
    D->res = (shp_best *)carve(&at, sizeof(shp_best));
    *bytes = (size_t)(at - base);
}

/* The working series of stats.c (tsm_centre_series) and the runs of equal values
 * (capped at cap), on the host into t and run. */
static void working_series(const double *x, size_t NL, size_t cap, double *t, uint32_t *run) {
    tsm_centre_series(x, NL, t);
    run[NL - 1] = 1;
    for (size_t k = NL - 1; k-- > 0;)
        run[k] = x[k] == x[k + 1] ? (run[k + 1] < cap ? run[k + 1] + 1 : cap) : 1;
}

extern "C" tsm_status tsmi_shapelet_discover_cuda(tsm_ctx *ctx, const tsm_shapelet_data *data,
                                                  const tsm_shapelet_opts *opts, size_t batch,
                                                  const double *xlx, tsm_split *best,
                                                  size_t *best_ord) {
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t n = data->n, L = data->len, NL = n * L, w = opts->w;
    const int nc = data->n_classes;
    const unsigned T = split_threads(n);
    const size_t sh_bytes = (size_t)T * n * (sizeof(double) + sizeof(int));
    const int sh_items = sh_bytes <= SHP_SPLIT_SH;
    size_t total = 0, bytes = 0;
    for (size_t l = opts->min_len; l <= opts->max_len; l += opts->step)
        total += n * (L - l + 1);
    /* block bests: every flush of the buffer but the last is full */
    const size_t nblk = total / T + (total + batch - 1) / batch + 1;
    shp_dev D;
    shp_best res;
    void *mem = NULL;
    double *t = (double *)malloc(NL * sizeof *t);
    uint32_t *run = (uint32_t *)malloc(NL * sizeof *run);
    tsm_status st = TSM_OK;
    if (!t || !run) {
        st = tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for the working series");
        goto done;
    }
    st = prepare_dist(ctx, n, L, w);
    if (st != TSM_OK)
        goto done;
    layout(&D, NULL, n, NL, (size_t)nc, batch, w, nblk, &bytes);
    st = tsmi_scratch(ctx, TSMI_SCRATCH_SHAPELET, bytes, &mem);
    if (st != TSM_OK)
        goto done;
    layout(&D, (char *)mem, n, NL, (size_t)nc, batch, w, nblk, &bytes);
    working_series(data->x, NL, (uint32_t)(opts->max_len < UINT32_MAX ? opts->max_len : UINT32_MAX),
                   t, run);
    if (sh_items)
        TSM_CUDA_TRY(ctx,
                     cudaFuncSetAttribute(shp_split, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          (int)sh_bytes));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(D.t, t, NL * sizeof *t, cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(D.run, run, NL * sizeof *run, cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(D.y, data->y, n * sizeof(int), cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(D.xlx, xlx, (n + 1) * sizeof(double), cudaMemcpyHostToDevice, stream));
    if (opts->op != TSM_SHAPELET_SINGLE)
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(D.base, opts->base, n * sizeof(double),
                                          cudaMemcpyHostToDevice, stream));
    {
        /* the distance buffer fills with consecutive candidates across lengths (their
         * order indices follow on), and the splits run on a full buffer */
        size_t done_c = 0, blk0 = 0, fill = 0;
        for (size_t l = opts->min_len; l <= opts->max_len; l += opts->step) {
            const size_t N = NL - l + 1, cands = n * (L - l + 1);
            shp_moments<<<tsmi_blocks(N, 256), 256, 0, stream>>>(D.t, D.run, N, l, D.mu, D.inv,
                                                                 D.kind);
            TSM_CUDA_LAUNCHED(ctx);
            for (size_t c0 = 0; c0 < cands;) {
                const size_t count = cands - c0 < batch - fill ? cands - c0 : batch - fill;
                st = launch_dist(ctx, stream, D.t, D.mu, D.inv, D.kind, n, L, l, w, c0, count,
                                 D.dist + fill * n, D.pos ? D.pos + fill * n : NULL);
                if (st != TSM_OK)
                    goto done;
                fill += count, c0 += count;
                if (fill < batch && (c0 < cands || l + opts->step <= opts->max_len))
                    continue;
                const unsigned blocks = tsmi_blocks(fill, T);
                shp_split<<<blocks, T, sh_items ? sh_bytes : 0, stream>>>(
                    D.dist, D.y, D.work, n, nc, D.xlx, fill, done_c + c0 - fill, opts->heuristic,
                    opts->seed, opts->op, D.base, sh_items, D.blk + blk0);
                TSM_CUDA_LAUNCHED(ctx);
                blk0 += blocks, fill = 0;
                if (opts->progress) {
                    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
                    opts->progress(opts->progress_arg, done_c + c0, total);
                }
            }
            done_c += cands;
        }
        shp_reduce<<<1, SHP_REDUCE_T, 0, stream>>>(D.blk, blk0, D.res);
        TSM_CUDA_LAUNCHED(ctx);
    }
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(&res, D.res, sizeof res, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    *best = res.s;
    *best_ord = res.ord;
done:
    free(t);
    free(run);
    return st;
}
