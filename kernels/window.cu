/* SPDX-License-Identifier: Apache-2.0 */
/* window.cu - the daemon's windowed passes on the GPU (the CUDA backend of window.h):
 * the two-sided profile of B windows at once, read off on the device into each
 * window's range discords and top-1 motif. Five launches per call whatever B is; no
 * launch per window.
 *
 * 1. centre_kernel (block per window): c = mean of the window's finite samples, the
 *    working series t[k] = x[k] - c (stats.h), and WP_PAD zeros before it (below).
 * 2. stats_kernel (thread per subsequence): mean and centred norm by two exact passes
 *    (as stats.cu), the kind (non-finite, constant when max == min, or normal, then
 *    tsm_finish_moments), inv = NaN unless normal; also the means of the WP_PAD
 *    virtual subsequences that start in the padding.
 * 3. diff_kernel: SCAMP's df, dg of mp.c (0 where k + 1 >= N).
 * 4. profile_kernel, grid = window x chunk of WP_S rows: each block owns the rows
 *    [r0, r0 + WP_S) of one window and visits all their pairs, left and right, in
 *    bands of WP_BW signed lags s (j = i + s); thread x of the block carries lags
 *    s0 .. s0 + WP_D - 1 down the rows with the centred covariance recurrence of mp.c
 *      cov(i+1, j+1) = cov(i, j) + df[i] dg[j] + df[j] dg[i],
 *    starting from covariances computed exactly at row r0 (so at most WP_S steps).
 *    Lags below zero start left of the matrix: the WP_PAD padding gives the virtual
 *    subsequences there true means, so the recurrence is exact on them too and they
 *    enter the matrix with the right values (inv = NaN masks them before). Because
 *    the block owns its rows, the row minimum needs no atomics: per warp, a slot per
 *    row in shared memory holds the best (corr, j) so far; a row's candidates are
 *    reduced across the warp (shuffles) only when some lane beats the slot, and the
 *    slots of the warps are merged at the end. The lags of a warp ascend from band to
 *    band, so "beats" is a strict >, and every merge keeps (larger corr, smaller j):
 *    ties go to the smaller neighbour (DESIGN 3), deterministically.
 *    Work per window (N subsequences): about N (N + WP_S) pair steps of 2 DMUL +
 *    2 DFMA, plus (N / WP_S) (N + WP_S) m FMAs for the exact starts.
 * 5. finish_kernel (block per window): the conventions for constants (mp.c's
 *    tsmi_mp_finish: d2 = 0 between constants, m between a constant and a normal),
 *    the range discords nn(i) >= r (d2 >= r^2, as pd3.c compares) compacted in index
 *    order into a list shared by all windows (a window reserves its range with one
 *    atomicAdd; the host puts each range in place), and the top-1 motif: the minimum
 *    over i of (nn(i), min(i, nb(i)), max(i, nb(i))) in the MK order of mk.h, which
 *    is the best pair with the smaller members on ties.
 * Then the per-window results and the discord list come back (two copies).
 *
 * Ordering: every launch and copy is on the ctx's stream, which is NON-blocking, so
 * the windows' samples must be complete in that stream's order (the daemon's arena
 * writes its rings on it). A caller that fills them by cudaMemcpy on the legacy
 * stream must synchronise first: from pageable memory that call may return before
 * its DMA lands, and these kernels would read stale samples (what made a test flaky
 * with "0 discords, want 39"). Every scratch array is written before it is read:
 * t, mu, df, dg, inv (padding included) by kernels 1-3 for k in [-WP_PAD, N) (t up
 * to n), corr/nb for every row by 4, next[] by 5 before its use, res[] by 5. */
#include "cuda_util.cuh"
#include "mk.h"
#include "window.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define WP_T     128           /* threads per profile block */
#define WP_D     8             /* lags per thread */
#define WP_BW    (WP_T * WP_D) /* lags per band */
#define WP_NW    (WP_T / 32)   /* warps per profile block */
#define WP_S     512           /* rows per profile block */
#define WP_PAD   WP_S          /* virtual samples before each window (lags >= -(WP_S - 1)) */
#define WP_FT    256           /* threads of the per-window kernels */
#define WP_MAX_N (1u << 23)    /* samples per window at most (grid.y limits) */
#define WP_FULL  0xffffffffu

/* One window as the kernels see it. */
typedef struct {
    const double *x; /* raw samples (device) */
    long long p0;    /* element k of the plan arrays is at p0 + k, k >= -WP_PAD */
    long long s0;    /* subsequence i of the window at s0 + i in per-subsequence arrays */
    int n, N;
    double r;
} wp_win;

/* The plan: padded per-window arrays, and per-subsequence arrays. */
typedef struct {
    double *t, *mu, *df, *dg, *inv; /* at p0 + k */
    uint8_t *kind;                  /* at s0 + i */
    double *corr;                   /* best normal neighbour's correlation, -inf if none */
    int *nb;                        /* its index, -1 */
    int *next; /* next_of_kind for constants, normals: 2 (N + 1) at 2 (s0 + b) */
    int m, excl;
} wp_plan;

/* Per-window result on the device. */
typedef struct {
    unsigned long long count, pos; /* discords, and where they start in the list */
    double d;                      /* motif distance, +inf when none */
    long long a, b;
} wp_res;

/* Thread 0 gets the sum over the block (WP_FT threads). */
__device__ static double block_sum(double v, double *sh) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(WP_FULL, v, off);
    if ((threadIdx.x & 31) == 0)
        sh[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < WP_FT / 32; w++)
            v += sh[w];
    __syncthreads();
    return v;
}

/* Block per window: the centre and the working series with its padding. */
__global__ static void centre_kernel(const wp_win *wins, wp_plan p) {
    __shared__ double sh[WP_FT / 32];
    __shared__ double centre;
    const wp_win w = wins[blockIdx.x];
    double sum = 0.0, cnt = 0.0;
    for (int k = threadIdx.x; k < w.n; k += WP_FT)
        if (isfinite(w.x[k]))
            sum += w.x[k], cnt += 1.0;
    sum = block_sum(sum, sh);
    cnt = block_sum(cnt, sh);
    if (threadIdx.x == 0)
        centre = cnt > 0.0 ? sum / cnt : 0.0;
    __syncthreads();
    double *t = p.t + w.p0;
    for (int k = (int)threadIdx.x - WP_PAD; k < w.n; k += WP_FT)
        t[k] = k >= 0 && isfinite(w.x[k]) ? w.x[k] - centre : 0.0;
}

/* Thread (window blockIdx.x, k = blockIdx.y WP_FT + x - WP_PAD < N): mean, inverse
 * norm and kind of subsequence k; k < 0: the mean only (virtual). O(m). */
__global__ static void stats_kernel(const wp_win *wins, wp_plan p) {
    const wp_win w = wins[blockIdx.x];
    const int k = (int)(blockIdx.y * WP_FT + threadIdx.x) - WP_PAD;
    if (k >= w.N)
        return;
    const double *t = p.t + w.p0;
    const int m = p.m;
    double sum = 0.0;
    for (int q = 0; q < m; q++)
        sum += t[k + q];
    const double mean = sum / m;
    double m2 = 0.0;
    for (int q = 0; q < m; q++)
        m2 += (t[k + q] - mean) * (t[k + q] - mean);
    p.mu[w.p0 + k] = mean;
    if (k < 0) {
        p.inv[w.p0 + k] = NAN;
        return;
    }
    uint8_t kind = TSM_SUB_CONSTANT;
    for (int q = 0; q < m; q++) {
        const double v = w.x[k + q];
        if (!isfinite(v)) {
            kind = TSM_SUB_NONFINITE;
            break;
        }
        if (v != w.x[k])
            kind = TSM_SUB_NORMAL;
    }
    double sig, inv;
    tsm_finish_moments(&kind, m2, m, &sig, &inv);
    p.inv[w.p0 + k] = kind == TSM_SUB_NORMAL ? inv : NAN;
    p.kind[w.s0 + k] = kind;
}

/* Same grid as stats_kernel: df, dg of subsequence k (0 where k + 1 >= N). */
__global__ static void diff_kernel(const wp_win *wins, wp_plan p) {
    const wp_win w = wins[blockIdx.x];
    const int k = (int)(blockIdx.y * WP_FT + threadIdx.x) - WP_PAD;
    if (k >= w.N)
        return;
    const double *t = p.t + w.p0, *mu = p.mu + w.p0;
    const bool last = k + 1 >= w.N;
    p.df[w.p0 + k] = last ? 0.0 : (t[k + p.m] - t[k]) / 2;
    p.dg[w.p0 + k] = last ? 0.0 : (t[k + p.m] - mu[k + 1]) + (t[k] - mu[k]);
}

/* The profile (see the top of the file): block (window, chunk of rows). */
__global__ static void __launch_bounds__(WP_T) profile_kernel(const wp_win *wins, wp_plan p) {
    __shared__ double sv[WP_NW][WP_S];
    __shared__ int sj[WP_NW][WP_S];
    const wp_win w = wins[blockIdx.x];
    const int N = w.N, r0 = (int)blockIdx.y * WP_S;
    if (r0 >= N)
        return;
    const int r1 = min(r0 + WP_S, N), m = p.m, excl = p.excl;
    const double *t = p.t + w.p0, *mu = p.mu + w.p0, *df = p.df + w.p0, *dg = p.dg + w.p0,
                 *inv = p.inv + w.p0;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int q = threadIdx.x; q < WP_NW * WP_S; q += WP_T)
        sv[q / WP_S][q % WP_S] = -INFINITY, sj[q / WP_S][q % WP_S] = INT_MAX;
    __syncthreads();

    const int smin = -(r1 - 1), smax = N - 1 - r0; /* lags that meet the matrix in the rows */
    for (int sb = smin; sb <= smax; sb += WP_BW) {
        const int ws = sb + warp * 32 * WP_D; /* the warp's lags: ws .. ws + 32 WP_D - 1 */
        if (ws > smax)
            break; /* warp-uniform; later bands lie further right */
        if (ws > -excl && ws + 32 * WP_D - 1 < excl)
            continue;                                  /* all inside the exclusion zone */
        const int s0 = ws + lane * WP_D, j0 = r0 + s0; /* j0 >= r0 + smin > -WP_PAD */
        double cov[WP_D], cdf[WP_D], cdg[WP_D], cinv[WP_D];
        /* exact covariances at row r0 (columns at or past N are never used: masked) */
        {
            const double mi = mu[r0];
            double mj[WP_D];
#pragma unroll
            for (int d = 0; d < WP_D; d++)
                cov[d] = 0.0, mj[d] = j0 + d < N ? mu[j0 + d] : 0.0;
            for (int q = 0; q < m; q++) {
                const double a = t[r0 + q] - mi;
#pragma unroll
                for (int d = 0; d < WP_D; d++)
                    if (j0 + d < N)
                        cov[d] = fma(a, t[j0 + d + q] - mj[d], cov[d]);
            }
        }
#pragma unroll
        for (int d = 0; d < WP_D; d++) {
            const int s = s0 + d, jj = j0 + d;
            if (s > -excl && s < excl)
                cov[d] = NAN; /* self-matches: never a candidate */
            cdf[d] = jj < N ? df[jj] : 0.0;
            cdg[d] = jj < N ? dg[jj] : 0.0;
            cinv[d] = jj < N ? inv[jj] : NAN;
        }
        for (int i = r0; i < r1; i++) {
            const double rdf = df[i], rdg = dg[i], rinv = inv[i];
            double bv = -INFINITY;
            int bd = 0;
#pragma unroll
            for (int d = 0; d < WP_D; d++) {
                double c = cov[d] * rinv * cinv[d];
                c = c > 1.0 ? 1.0 : c; /* NaN stays NaN and never wins */
                if (c > bv)            /* strict: the smaller j wins ties */
                    bv = c, bd = d;
                cov[d] = fma(rdf, cdg[d], cov[d]);
                cov[d] = fma(rdg, cdf[d], cov[d]);
            }
            const double T = sv[warp][i - r0];
            if (__any_sync(WP_FULL, bv > T)) {
                int bj = bv > T ? i + s0 + bd : INT_MAX;
                double v = bv > T ? bv : -INFINITY;
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) {
                    const double v2 = __shfl_xor_sync(WP_FULL, v, off);
                    const int j2 = __shfl_xor_sync(WP_FULL, bj, off);
                    if (v2 > v || (v2 == v && j2 < bj))
                        v = v2, bj = j2;
                }
                __syncwarp(); /* every lane has read T */
                if (lane == 0)
                    sv[warp][i - r0] = v, sj[warp][i - r0] = bj;
                __syncwarp();
            }
            /* slide the column window: entry d is column i + 1 + s0 + d next */
#pragma unroll
            for (int d = 0; d + 1 < WP_D; d++)
                cdf[d] = cdf[d + 1], cdg[d] = cdg[d + 1], cinv[d] = cinv[d + 1];
            const int jn = i + 1 + s0 + WP_D - 1;
            cdf[WP_D - 1] = jn < N ? df[jn] : 0.0;
            cdg[WP_D - 1] = jn < N ? dg[jn] : 0.0;
            cinv[WP_D - 1] = jn < N ? inv[jn] : NAN;
        }
    }
    __syncthreads();
    for (int q = threadIdx.x; q < r1 - r0; q += WP_T) {
        double v = sv[0][q];
        int j = sj[0][q];
        for (int u = 1; u < WP_NW; u++)
            if (sv[u][q] > v || (sv[u][q] == v && sj[u][q] < j))
                v = sv[u][q], j = sj[u][q];
        p.corr[w.s0 + r0 + q] = v;
        p.nb[w.s0 + r0 + q] = v > -INFINITY ? j : -1;
    }
}

/* Smallest index of the kind of next[] that is a non-self-match of i; -1 when none
 * (mp.c's first_eligible, two-sided). */
__device__ static int first_eligible(const int *next, int N, int i, int excl) {
    const int first = next[0];
    if (first < N && i >= excl && first <= i - excl)
        return first;
    if (excl >= N - i)
        return -1;
    const int j = next[i + excl];
    return j < N ? j : -1;
}

/* Final squared distance and neighbour of subsequence i (mp.c's finish, two-sided). */
__device__ static void finish_one(const wp_plan &p, const wp_win &w, const int *nc, const int *nn,
                                  int i, double *d2, int *nb) {
    const int N = w.N, kind = p.kind[w.s0 + i];
    const double m = p.m;
    *d2 = INFINITY, *nb = -1;
    if (kind == TSM_SUB_NONFINITE) {
        *d2 = NAN;
        return;
    }
    if (kind == TSM_SUB_NORMAL) {
        double c = p.corr[w.s0 + i];
        if (c > -INFINITY) {
            c = c < -1.0 ? -1.0 : c;
            *d2 = 2.0 * m * (1.0 - c), *nb = p.nb[w.s0 + i];
        }
        if (nc) {
            const int jc = first_eligible(nc, N, i, p.excl);
            if (jc >= 0 && (m < *d2 || (m == *d2 && jc < *nb)))
                *d2 = m, *nb = jc;
        }
        return;
    }
    const int jc = first_eligible(nc, N, i, p.excl), jn = first_eligible(nn, N, i, p.excl);
    if (jc >= 0)
        *d2 = 0.0, *nb = jc;
    else if (jn >= 0)
        *d2 = m, *nb = jn;
}

/* Block per window: conventions, motif, counts and the compacted discords (see the
 * top of the file). list/total: the list shared by all windows and its fill. */
__global__ static void finish_kernel(const wp_win *wins, wp_plan p, int want_motif, wp_res *res,
                                     tsm_discord *list, unsigned long long *total) {
    __shared__ int wcount[WP_FT / 32];
    __shared__ unsigned long long base;
    __shared__ int found;
    __shared__ tsmi_mk_pair wbest[WP_FT / 32];
    const wp_win w = wins[blockIdx.x];
    const int N = w.N, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const double r2 = w.r * w.r;
    int mine = 0;
    for (int i = tid; i < N; i += WP_FT)
        mine |= p.kind[w.s0 + i] == TSM_SUB_CONSTANT;
    const int has_const = __syncthreads_or(mine);
    int *nc = NULL, *nn = NULL;
    if (has_const) { /* next_of_kind, serially: O(N), only windows with constants */
        nc = p.next + 2 * (w.s0 + blockIdx.x);
        nn = nc + N + 1;
        if (tid == 0) {
            nc[N] = nn[N] = N;
            for (int q = N - 1; q >= 0; q--) {
                const int k = p.kind[w.s0 + q];
                nc[q] = k == TSM_SUB_CONSTANT ? q : nc[q + 1];
                nn[q] = k == TSM_SUB_NORMAL ? q : nn[q + 1];
            }
        }
        __syncthreads();
    }
    /* pass 1: final values (kept in corr/nb), discord count, motif */
    int count = 0;
    tsmi_mk_pair best = {INFINITY, LLONG_MAX, LLONG_MAX};
    for (int i = tid; i < N; i += WP_FT) {
        double d2;
        int nb;
        finish_one(p, w, nc, nn, i, &d2, &nb);
        p.corr[w.s0 + i] = d2;
        p.nb[w.s0 + i] = nb;
        count += isfinite(d2) && d2 >= r2;
        if (want_motif && nb >= 0) {
            const double d = sqrt(d2);
            const long long a = min(i, nb), b = max(i, nb);
            if (tsmi_mk_before(d, a, b, &best))
                best.d = d, best.a = a, best.b = b;
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        count += __shfl_down_sync(WP_FULL, count, off);
        const double d = __shfl_down_sync(WP_FULL, best.d, off);
        const long long a = __shfl_down_sync(WP_FULL, best.a, off);
        const long long b = __shfl_down_sync(WP_FULL, best.b, off);
        if (tsmi_mk_before(d, a, b, &best))
            best.d = d, best.a = a, best.b = b;
    }
    if (lane == 0)
        wcount[warp] = count, wbest[warp] = best;
    __syncthreads();
    if (tid == 0) {
        for (int u = 1; u < WP_FT / 32; u++) {
            count += wcount[u];
            if (tsmi_mk_before(wbest[u].d, wbest[u].a, wbest[u].b, &best))
                best = wbest[u];
        }
        base = count ? atomicAdd(total, (unsigned long long)count) : 0;
        found = count;
        wp_res out = {(unsigned long long)count, base, best.d, best.a, best.b};
        res[blockIdx.x] = out;
    }
    __syncthreads();
    if (!found)
        return; /* uniform */
    /* pass 2: the discords in index order, WP_FT at a time (ballot and popc) */
    unsigned long long at = base;
    for (int i0 = 0; i0 < N; i0 += WP_FT) {
        const int i = i0 + tid;
        double d2 = 0.0;
        bool f = false;
        if (i < N) {
            d2 = p.corr[w.s0 + i];
            f = isfinite(d2) && d2 >= r2;
        }
        const unsigned ball = __ballot_sync(WP_FULL, f);
        if (lane == 0)
            wcount[warp] = __popc(ball);
        __syncthreads();
        int before = __popc(ball & ((1u << lane) - 1)), all = 0;
        for (int u = 0; u < WP_FT / 32; u++) {
            before += u < warp ? wcount[u] : 0;
            all += wcount[u];
        }
        if (f) {
            tsm_discord dc = {i, sqrt(d2), p.nb[w.s0 + i]};
            list[at + before] = dc;
        }
        at += all;
        __syncthreads(); /* wcount is rewritten by the next round */
    }
}

/* Carves n bytes, 256-aligned, off a scratch buffer at *off; returns the pointer. */
static void *carve(void *base, size_t *off, size_t n) {
    void *p = (unsigned char *)base + *off;
    *off += (n + 255) & ~(size_t)255;
    return p;
}

extern "C" tsm_status tsmi_window_passes_cuda(tsm_ctx *ctx, const tsm_window *w, size_t B, size_t m,
                                              size_t excl, int want_motif, tsm_discord *discords,
                                              tsm_window_result *res) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    wp_win *h_win = NULL, *d_win = NULL;
    wp_res *h_res = NULL, *d_res = NULL;
    tsm_discord *h_list = NULL, *d_list = NULL;
    unsigned long long *d_total = NULL, *h_total = NULL;
    double *plan = NULL;
    void *dev = NULL, *host = NULL;
    size_t off = 0, hoff = 0;
    wp_plan p;
    long long P = 0, S = 0;
    unsigned nmax = 0;

    if (B > INT_MAX || excl > WP_MAX_N)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_window_passes: %zu windows, excl %zu: too many", B,
                        excl);
    for (size_t b = 0; b < B; b++) {
        if (w[b].n > WP_MAX_N)
            return tsm_fail(ctx, TSM_EINVAL,
                            "tsm_window_passes: window %zu has %u samples, more than the CUDA "
                            "backend's %u",
                            b, w[b].n, WP_MAX_N);
        P += WP_PAD + w[b].n;
        S += w[b].n - (long long)m + 1;
        nmax = w[b].n > nmax ? w[b].n : nmax;
    }
    /* Scratch of the ctx (cuda_backend.h), nothing allocated per call. Device: the plan t, mu,
     * df, dg, inv (P each); per subsequence corr (S doubles), nb (S), next (2 (S + B)),
     * kind (S); the windows, results, discord list and its fill. Pinned host: the
     * windows, results and fill; the list in its own slot once its size is known. */
    {
        const size_t dev_bytes =
            5 * (size_t)P * sizeof(double) + 256 + (size_t)S * (sizeof(double) + sizeof(int) + 1) +
            2 * ((size_t)S + B) * sizeof(int) + 3 * 256 + B * (sizeof *d_win + sizeof *d_res) +
            2 * 256 + (size_t)S * sizeof *d_list + 256 + 256;
        const size_t host_bytes = B * (sizeof *h_win + sizeof *h_res) + 3 * 256;
        if ((st = tsmi_scratch(ctx, TSMI_SCRATCH_WINDOW, dev_bytes, &dev)) != TSM_OK ||
            (st = tsmi_scratch_host(ctx, TSMI_SCRATCH_WINDOW, host_bytes, &host)) != TSM_OK)
            return st;
    }
    plan = (double *)carve(dev, &off, 5 * (size_t)P * sizeof(double));
    p.corr = (double *)carve(dev, &off, (size_t)S * sizeof(double));
    p.nb = (int *)carve(dev, &off, (size_t)S * sizeof(int));
    p.next = (int *)carve(dev, &off, 2 * ((size_t)S + B) * sizeof(int));
    p.kind = (uint8_t *)carve(dev, &off, (size_t)S);
    d_win = (wp_win *)carve(dev, &off, B * sizeof *d_win);
    d_res = (wp_res *)carve(dev, &off, B * sizeof *d_res);
    d_list = (tsm_discord *)carve(dev, &off, (size_t)S * sizeof *d_list);
    d_total = (unsigned long long *)carve(dev, &off, sizeof *d_total);
    h_win = (wp_win *)carve(host, &hoff, B * sizeof *h_win);
    h_res = (wp_res *)carve(host, &hoff, B * sizeof *h_res);
    h_total = (unsigned long long *)carve(host, &hoff, sizeof *h_total);
    P = 0, S = 0;
    for (size_t b = 0; b < B; b++) {
        const int n = (int)w[b].n, N = n - (int)m + 1;
        h_win[b] = (wp_win){w[b].x, P + WP_PAD, S, n, N, w[b].r};
        P += WP_PAD + n;
        S += N;
    }
    p.t = plan, p.mu = plan + P, p.df = plan + 2 * P, p.dg = plan + 3 * P, p.inv = plan + 4 * P;
    p.m = (int)m, p.excl = (int)excl;
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(d_win, h_win, B * sizeof *d_win, cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(d_total, 0, sizeof *d_total, stream));
    {
        const dim3 grid_sub((unsigned)B, tsmi_blocks(WP_PAD + nmax - m + 1, WP_FT));
        const dim3 grid_prof((unsigned)B, tsmi_blocks(nmax - m + 1, WP_S));
        centre_kernel<<<(unsigned)B, WP_FT, 0, stream>>>(d_win, p);
        TSM_CUDA_LAUNCHED(ctx);
        stats_kernel<<<grid_sub, WP_FT, 0, stream>>>(d_win, p);
        TSM_CUDA_LAUNCHED(ctx);
        diff_kernel<<<grid_sub, WP_FT, 0, stream>>>(d_win, p);
        TSM_CUDA_LAUNCHED(ctx);
        profile_kernel<<<grid_prof, WP_T, 0, stream>>>(d_win, p);
        TSM_CUDA_LAUNCHED(ctx);
        finish_kernel<<<(unsigned)B, WP_FT, 0, stream>>>(d_win, p, want_motif, d_res, d_list,
                                                         d_total);
        TSM_CUDA_LAUNCHED(ctx);
    }
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(h_res, d_res, B * sizeof *h_res, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(h_total, d_total, sizeof *h_total, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    if (*h_total) {
        if ((st = tsmi_scratch_host(ctx, TSMI_SCRATCH_WINDOW_LIST, *h_total * sizeof *h_list,
                                    (void **)&h_list)) != TSM_OK)
            goto done;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(h_list, d_list, *h_total * sizeof *h_list,
                                          cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    }
    for (size_t b = 0; b < B; b++) {
        const wp_res *r = &h_res[b];
        tsm_discord *out = discords + h_win[b].s0;
        for (unsigned long long q = 0; q < r->count; q++)
            out[q] = h_list[r->pos + q];
        res[b].ndiscords = r->count;
        res[b].has_motif = want_motif && isfinite(r->d);
        res[b].motif = res[b].has_motif ? (tsm_motif){r->a, r->b, r->d} : (tsm_motif){-1, -1, 0};
    }
done:
    if (st != TSM_OK && st != TSM_EDEVICE)
        cudaStreamSynchronize(stream); /* the scratch is reused by the next call */
    return st;
}
