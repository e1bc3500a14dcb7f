/* SPDX-License-Identifier: Apache-2.0 */
/* dot.cu - the CUDA backend of dot.h: blocks of dot products of subsequences,
 *   QT[i][j] = sum_{k<m} t[i+k] t[j+k],
 * computed directly from the device copy of the working series (no recurrence, so
 * every entry is exact to rounding, whatever the block's size).
 *
 * Mapping. A thread block owns a tile of QT_TR rows x QT_TC columns; thread x owns
 * column jb + x and keeps the QT_TR row sums in registers. k advances in chunks of
 * QT_KC: per chunk the block stages t[jb + k0 .. + QT_TC + QT_KC) (its columns'
 * values) and t[ib + k0 .. + QT_TR + QT_KC) (its rows' values) in shared memory. The
 * rows' values t[ib + r + k] slide by one per step of k, so each thread keeps them in
 * a window of QT_TR registers and loads one new value per step (as pd3.cu's
 * chain_starts): per step one load of its column value, one broadcast load, QT_TR
 * fused multiply-adds. Sums run over k in ascending order, as tsm_qt_row_direct does
 * on the CPU (there without fused multiply-adds: the two agree to rounding).
 *
 * Why mp.cu, pd3.cu and mk.cu keep their own first dot products: each is fused into
 * its kernel's registers or shared memory (mp.cu starts each work item from centred
 * covariances, not QT; pd3.cu's chain starts read the chunk already staged for the
 * segment; mk.cu defines one summation order that its warp and thread versions
 * reproduce bit for bit). Computing them here would add a launch and a trip through
 * global memory per tile, or change results that must match bit for bit. */
#include "cuda_util.cuh"
#include "dot.h"

#include <limits.h>

#define QT_TC 128 /* columns per block: one per thread */
#define QT_TR 8   /* rows per block: each thread's register sums */
#define QT_KC 64  /* steps of k per shared-memory fill (a multiple of QT_TR) */

#define QT_MAX_GRID_Y 65535u /* grid.y limit: rows per launch <= QT_MAX_GRID_Y * QT_TR */

/* Bytes of one piece of the host-output form's device buffer (rows x len doubles). */
#define QT_PIECE_BYTES ((size_t)64 << 20)

static_assert(QT_KC % QT_TR == 0, "the register window advances in steps of QT_TR");

/* Block (x, y): rows ib = i0 + QT_TR y .., columns jb = j0 + QT_TC x ..; out row r at
 * out + r * ld. Positions of t past n (tiles hanging over the end) read 0; their
 * results are not written. */
__global__ static void __launch_bounds__(QT_TC)
    qt_rows_kernel(const double *__restrict__ t, size_t n, int m, size_t i0, size_t rows, size_t j0,
                   size_t len, double *__restrict__ out, size_t ld) {
    __shared__ double col[QT_TC + QT_KC];
    __shared__ double row[QT_TR + QT_KC];
    const int x = (int)threadIdx.x;
    const size_t jb = j0 + (size_t)blockIdx.x * QT_TC, ib = i0 + (size_t)blockIdx.y * QT_TR;
    double acc[QT_TR], win[QT_TR];
#pragma unroll
    for (int r = 0; r < QT_TR; r++)
        acc[r] = 0.0;
    for (int k0 = 0; k0 < m; k0 += QT_KC) {
        const int kc = m - k0 < QT_KC ? m - k0 : QT_KC;
        __syncthreads(); /* the previous chunk is consumed */
        for (int q = x; q < QT_TC + QT_KC; q += QT_TC) {
            const size_t p = jb + (size_t)k0 + (size_t)q;
            col[q] = p < n ? t[p] : 0.0;
        }
        for (int q = x; q < QT_TR + QT_KC; q += QT_TC) {
            const size_t p = ib + (size_t)k0 + (size_t)q;
            row[q] = p < n ? t[p] : 0.0;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < QT_TR; r++)
            win[r] = row[r];
        /* invariant at step s = k + kk: win[(r + s) % QT_TR] = row[r + s] */
        for (int k = 0; k < kc; k += QT_TR) {
#pragma unroll
            for (int kk = 0; kk < QT_TR; kk++) {
                const double c = k + kk < kc ? col[x + k + kk] : 0.0;
#pragma unroll
                for (int r = 0; r < QT_TR; r++)
                    acc[r] = fma(win[(r + kk) % QT_TR], c, acc[r]);
                win[kk] = row[QT_TR + k + kk];
            }
        }
    }
    const size_t j = jb + (size_t)x;
    if (j >= j0 + len)
        return;
#pragma unroll
    for (int r = 0; r < QT_TR; r++)
        if (ib + (size_t)r < i0 + rows)
            out[(ib - i0 + (size_t)r) * ld + (j - j0)] = acc[r];
}

extern "C" tsm_status tsmi_qt_rows_dev(tsm_ctx *ctx, const double *d_t, size_t n, size_t m,
                                       size_t i0, size_t rows, size_t j0, size_t len, double *d_out,
                                       size_t ld) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const size_t per_launch = (size_t)QT_MAX_GRID_Y * QT_TR;
    if (m > INT_MAX || (len + QT_TC - 1) / QT_TC > INT_MAX)
        return tsm_fail(ctx, TSM_EINVAL, "qt_rows: m = %zu or %zu columns too large for a launch",
                        m, len);
    for (size_t r0 = 0; r0 < rows && len > 0; r0 += per_launch) {
        const size_t nr = rows - r0 < per_launch ? rows - r0 : per_launch;
        const dim3 grid(tsmi_blocks(len, QT_TC), tsmi_blocks(nr, QT_TR));
        qt_rows_kernel<<<grid, QT_TC, 0, s>>>(d_t, n, (int)m, i0 + r0, nr, j0, len, d_out + r0 * ld,
                                              ld);
        TSM_CUDA_LAUNCHED(ctx);
    }
done:
    return st;
}

/* Host output: pieces of rows through one device buffer of at most QT_PIECE_BYTES (or
 * one row), each computed and copied back in turn. */
extern "C" tsm_status tsmi_qt_rows_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t i0, size_t rows,
                                        size_t j0, size_t len, double *out) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    double *d_t = NULL, *d_buf = NULL;
    const double *t = s->dev ? s->dev->t : NULL;
    size_t piece = QT_PIECE_BYTES / (len * sizeof(double));
    piece = piece < 1 ? 1 : piece > rows ? rows : piece;
    if (!t) { /* statistics from the CPU backend: a temporary device copy */
        TSM_CUDA_ALLOC(ctx, d_t, s->n * sizeof(double));
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(d_t, s->t, s->n * sizeof(double), cudaMemcpyHostToDevice, stream));
        t = d_t;
    }
    TSM_CUDA_ALLOC(ctx, d_buf, piece * len * sizeof(double));
    for (size_t r0 = 0; r0 < rows; r0 += piece) {
        const size_t nr = rows - r0 < piece ? rows - r0 : piece;
        st = tsmi_qt_rows_dev(ctx, t, s->n, s->m, i0 + r0, nr, j0, len, d_buf, len);
        if (st != TSM_OK)
            goto done;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(out + r0 * len, d_buf, nr * len * sizeof(double),
                                          cudaMemcpyDeviceToHost, stream));
    }
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    if (st != TSM_OK)
        cudaStreamSynchronize(stream); /* nothing in flight uses the buffers we free */
    cudaFree(d_buf);
    cudaFree(d_t);
    return st;
}
