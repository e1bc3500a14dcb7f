/* shapelet.cu - candidate-to-series distances on the GPU (the CUDA twin of
 * shapelet.c's dist_cpu; the contract is shapelet.h, the shared arithmetic
 * shapelet_dist.h). The rest of the discovery (batches, splits) runs in shapelet.c.
 *
 * Euclidean kernel: seed 002 Algorithm 4 with its shared-memory tiling (Algorithm 3).
 * Block (chunk, j) takes SHP_ROWS consecutive candidate starts s0 .. s0 + SHP_ROWS - 1
 * of one series i (threads: one per candidate row r) against series j. Shared memory
 * holds the candidate span T_i[s0 .. s0 + SHP_ROWS + l - 2], the whole of T_j, the
 * first row QT[s0][u] (computed directly, threads striding over u), and two
 * SHP_ROWS-entry buffers of the previous step's row values. At step u thread r holds
 * QT[s0 + r][u]: thread 0 reads it from the first row, thread r > 0 from thread r - 1's
 * value of step u - 1 by seed 002 eq. (6),
 *   QT[s][u] = QT[s-1][u-1] - T_i[s-1] T_j[u-1] + T_i[s+l-1] T_j[u+l-1],
 * and at u = 0 computes its column entry directly. One __syncthreads per step; the
 * means, inverse norms and kinds of T_j's subsequences are read by all threads at the
 * same u (broadcast loads). Each thread keeps its best match (largest effective
 * correlation, first u on ties).
 *
 * DTW kernel: one thread per (candidate, series) pair runs tsmi_dtw_min from the
 * Euclidean kernel's best alignment, band rows in registers/local memory, so w is
 * limited to SHP_MAX_W here (O(w) memory per pair as seed 003 4.1). */
#include "cuda_util.cuh"
#include "shapelet.h"
#include "shapelet_dist.h"

#define SHP_ROWS  128
#define SHP_MAX_W 64

/* See the file comment. t, mu, inv, kind: device statistics of the concatenated
 * series (length l). out/pos: count * n entries, candidate c at (c - c0) * n + j. */
__global__ static void shp_euclid(const double *__restrict__ t, const double *__restrict__ mu,
                                  const double *__restrict__ inv, const uint8_t *__restrict__ kind,
                                  size_t n, size_t L, size_t l, size_t c0, size_t count,
                                  size_t i_first, size_t chunks_per_series, double *out,
                                  int64_t *pos) {
    extern __shared__ double sh[];
    const size_t U = L - l + 1;
    const size_t i = i_first + blockIdx.x / chunks_per_series;
    const size_t s0 = (blockIdx.x % chunks_per_series) * SHP_ROWS;
    const size_t j = blockIdx.y;
    const unsigned r = threadIdx.x;
    const size_t span = (U - s0 < SHP_ROWS ? U - s0 : SHP_ROWS) + l - 1;
    double *ti = sh;                /* SHP_ROWS + l - 1 */
    double *tj = ti + SHP_ROWS + l; /* L */
    double *row0 = tj + L;          /* U */
    double *buf = row0 + U;         /* 2 * SHP_ROWS */
    for (size_t k = r; k < span; k += blockDim.x)
        ti[k] = t[i * L + s0 + k];
    for (size_t k = r; k < L; k += blockDim.x)
        tj[k] = t[j * L + k];
    __syncthreads();
    for (size_t u = r; u < U; u += blockDim.x) {
        double q = 0.0;
        for (size_t k = 0; k < l; k++)
            q += ti[k] * tj[u + k];
        row0[u] = q;
    }
    const size_t s = s0 + r, c = i * U + s;
    const bool active = s < U && c >= c0 && c < c0 + count;
    const size_t a = i * L + (s < U ? s : 0), b = j * L;
    const int ka = kind[a];
    const double lm = (double)l * mu[a], ia = inv[a];
    double q = 0.0;
    if (s < U && r > 0)
        for (size_t k = 0; k < l; k++)
            q += ti[r + k] * tj[k];
    double best = -INFINITY;
    size_t bu = 0;
    __syncthreads();
    for (size_t u = 0; u < U; u++) {
        double *rd = buf + ((u & 1) ? 0 : SHP_ROWS), *wr = buf + ((u & 1) ? SHP_ROWS : 0);
        if (r == 0)
            q = row0[u];
        else if (u > 0)
            q = rd[r - 1] - ti[r - 1] * tj[u - 1] + ti[r + l - 1] * tj[u + l - 1];
        wr[r] = q;
        if (active) {
            double cr = tsmi_match_corr(ka, q, lm, ia, mu[b + u], inv[b + u], kind[b + u]);
            if (cr > best)
                best = cr, bu = u;
        }
        __syncthreads();
    }
    if (active) {
        out[(c - c0) * n + j] = tsmi_corr_dist(best);
        pos[(c - c0) * n + j] = (int64_t)bu;
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

extern "C" tsm_status tsmi_shapelet_dist_cuda(tsm_ctx *ctx, const tsm_stats *S, size_t n, size_t L,
                                              size_t c0, size_t count, size_t w, double *out,
                                              int64_t *pos) {
    tsm_status st = TSM_OK;
    double *d_out = NULL;
    int64_t *d_pos = NULL;
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t l = S->m, U = L - l + 1, cells = count * n;
    const size_t chunks = (U + SHP_ROWS - 1) / SHP_ROWS;
    const size_t i_first = c0 / U, i_last = (c0 + count - 1) / U;
    const size_t smem = (SHP_ROWS + l + L + U + 2 * SHP_ROWS) * sizeof(double);
    if (!S->dev)
        return tsm_fail(ctx, TSM_EINTERNAL, "shapelet: statistics have no device copy");
    if (w > SHP_MAX_W)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: the CUDA backend takes w <= %d (got %zu)",
                        SHP_MAX_W, w);
    if (n > 65535)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: the CUDA backend takes at most 65535 series");
    TSM_CUDA_TRY(ctx, cudaFuncSetAttribute(shp_euclid, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    TSM_CUDA_TRY(ctx, cudaMallocAsync((void **)&d_out, cells * sizeof *d_out, stream));
    TSM_CUDA_TRY(ctx, cudaMallocAsync((void **)&d_pos, cells * sizeof *d_pos, stream));
    {
        /* blocks of the series touched by the range; rows outside it stay idle */
        dim3 grid((unsigned)((i_last - i_first + 1) * chunks), (unsigned)n);
        const tsm_stats_dev *dv = S->dev;
        shp_euclid<<<grid, SHP_ROWS, smem, stream>>>(dv->t, dv->mu, dv->inv, dv->kind, n, L, l, c0,
                                                     count, i_first, chunks, d_out, d_pos);
        TSM_CUDA_LAUNCHED(ctx);
    }
    if (w > 0) {
        shp_dtw<<<tsmi_blocks(cells, 128), 128, 0, stream>>>(
            S->dev->t, S->dev->mu, S->dev->inv, S->dev->kind, n, L, l, w, c0, count, d_out, d_pos);
        TSM_CUDA_LAUNCHED(ctx);
    }
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(out, d_out, cells * sizeof *out, cudaMemcpyDeviceToHost, stream));
    if (pos)
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(pos, d_pos, cells * sizeof *pos, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    if (d_out)
        cudaFreeAsync(d_out, stream);
    if (d_pos)
        cudaFreeAsync(d_pos, stream);
    return st;
}
