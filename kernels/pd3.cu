/* SPDX-License-Identifier: Apache-2.0 */
/* pd3.cu - PD3 range discords (seed 001 section 3) on the GPU: the CUDA backend of
 * tsm_pd3_range (pd3.h), the twin of the OpenMP code in pd3.c, with the same results.
 *
 * One pass for a range r runs entirely on the device, on the statistics that
 * tsm_stats_new left there (s->dev), and copies back only its result:
 *
 *   1. pd3_scan<1>     candidate selection (seed Alg. 2): a thread block per segment of
 *                      seglen subsequences, a thread per candidate lane; each block scans
 *                      the rows to the right of its candidates, chunk by chunk, and clears
 *                      Bitmap.Subseq (its own lanes) and Bitmap.Neighbor (any row). The
 *                      grid's second dimension cuts the rows into slabs scanned in
 *                      parallel, so that the few candidates that live long (a whole
 *                      series of rows, one after the other) do not serialise the pass.
 *   2. conjunction     Subseq &= Neighbor (Alg. 2 lines 26-28), flagging the segments
 *                      that still hold a candidate (a CUB scan compacts their list) and
 *                      keeping each candidate's right minimum over the slabs.
 *   3. pd3_scan<2>     refinement (Alg. 3): a block per listed segment and slab scans the
 *                      rows to the left; pd3_finish gives the survivors their exact nn
 *                      (left and right minima, ties to the smaller index).
 *   4. compaction      a CUB scan places the survivors with a finite nn, by index, in
 *                      the output array, copied back once (after the pass summary).
 *
 * Padding (formula (8)): the kernels read a copy of the working series with zeros on
 * both sides, PD3_PAD before t[0] and, after t[n-1], enough for the last segment's
 * lanes and the last chunk, so that no load needs a bounds check. The seed pads with
 * +inf; here padded lanes and rows are masked instead (lanes past N are never
 * candidates, rows past N never pairs) and the zeros keep the dot-product chains that
 * run through them finite. The zeros before t[0] let the chains of formula (9) start
 * before row 0 (see pd3_scan).
 *
 * Limits of this backend: N and m below 2^30 (int indices on the device); segments
 * longer than PD3_MAX_LANES are cut to PD3_MAX_LANES (the block size at which the
 * registers hold four rows in flight), which changes the work, not the result. */
#include "cuda_util.cuh"
#include "distance.h"
#include "pd3.h"

#include <cub/device/device_scan.cuh>

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define PD3_B         5                      /* chain starts per lane per chunk */
#define PD3_ROWS      (32 * PD3_B)           /* R: rows per chunk */
#define PD3_PAD       64                     /* zeros before t[0] in the padded series */
#define PD3_MAX_LANES 512                    /* lanes (threads) per segment at most */
#define PD3_CHUNK_T   (PD3_ROWS + 2 * PD3_B) /* chunk series beyond m: R + 2B */
#define PD3_LIMIT     (1 << 30)
/* Tuning, measured on an H200 (tsmine-bench discords_top10, m = 128, n = 2^16..2^22):
 * PD3_UNROLL rows of the row loop in flight (the recurrence is a chain through a warp
 * shuffle, so a warp alone is latency-bound; 4 rows hide most of it) and
 * PD3_MIN_BLOCKS resident blocks asked of the register allocator (1: about 100
 * registers, no spills; 2 caps them at 64 and spills, no faster). */
#ifndef PD3_UNROLL
#define PD3_UNROLL 4
#endif
#ifndef PD3_MIN_BLOCKS
#define PD3_MIN_BLOCKS 1
#endif
static const int pd3_unroll = PD3_UNROLL; /* #pragma unroll takes no macro */
#define FULL_MASK 0xffffffffu

/* Everything a scan kernel needs; passed by value. Device pointers. */
typedef struct {
    const double *tp;  /* padded working series: tp[x] = t[x], zeros outside [0, n) */
    const double *mu;  /* per-subsequence statistics (s->dev) */
    const double *inv; /* 1/(sqrt(m) sigma); 0 unless normal */
    const uint8_t *kind;
    int N, m, excl;     /* excl <= N */
    int seglen;         /* candidate lanes per segment (<= blockDim.x) */
    double r2;          /* range squared */
    uint8_t *subseq;    /* Bitmap.Subseq */
    uint8_t *neighbor;  /* Bitmap.Neighbor */
    double *nn_d2;      /* right minimum after phase 1, nn after phase 2 */
    int *nn_j;          /* its row */
    double *slab_d2;    /* per slab and lane: the slab's minimum, [nslab][N] */
    int *slab_j;        /* its row */
    int slab, nslab;    /* rows per slab (a multiple of 32), slabs */
    const int *seglist; /* phase 2: listed segments, the first *nlist */
    const int *nlist;
    int part, parts;               /* this part owns the segments seg = part mod parts */
    int *found;                    /* 1 where a survivor has a finite nn */
    unsigned long long *distances; /* counter */
} pd3_args;

/* Device summary of one pass, copied back in one piece. */
typedef struct {
    unsigned long long distances, candidates;
    int nlist, nfound;
} pd3_summary;

/* Shared-memory layout of a scan block (doubles), shared by host and device. */
typedef struct {
    int rec, qcol, seg, chunk, total; /* offsets and total size in doubles */
} pd3_layout;

static __host__ __device__ pd3_layout pd3_layout_of(int lanes, int m, bool series_in_smem) {
    pd3_layout l;
    l.rec = 0;                                          /* R x {head, tail, mu, inv} */
    l.qcol = l.rec + 4 * PD3_ROWS;                      /* a column of chain starts per warp */
    l.seg = l.qcol + (lanes / 32) * PD3_ROWS;           /* t[c0 .. c0 + lanes + m) */
    l.chunk = l.seg + (series_in_smem ? lanes + m : 0); /* t[Jc .. Jc + R + 2B + m) */
    l.total = l.chunk + (series_in_smem ? PD3_CHUNK_T + m : 0);
    return l;
}

/* Bytes of dynamic shared memory: the layout plus the chunk's hit bitmap (B words). */
static size_t pd3_smem_bytes(int lanes, int m, bool series_in_smem) {
    return (size_t)pd3_layout_of(lanes, m, series_in_smem).total * sizeof(double) +
           PD3_B * sizeof(unsigned);
}

/* Chain starts of one warp for one chunk (the seed's QTcol, Alg. 2 line 7):
 *   qc[r] = QT[cw][Jc + r] = sum_k t[cw + k] t[Jc + r + k],   0 <= r < R,
 * with sg = t + cw and ch = t + Jc (in shared memory, or the padded series). Lane l
 * computes the B consecutive rows B l .. B l + B - 1 with a window of B values that
 * slides along k: each step loads one broadcast and one distinct value for B fused
 * multiply-adds, and the odd lane stride of B doubles keeps the shared-memory loads
 * free of bank conflicts. Steps past m multiply by 0 (the window values are finite),
 * so the step loop needs no remainder. */
static __device__ __forceinline__ void chain_starts(const double *sg, const double *ch, int m,
                                                    int lane, double *qc) {
    const double *cl = ch + PD3_B * lane;
    double acc[PD3_B], win[PD3_B];
#pragma unroll
    for (int b = 0; b < PD3_B; b++) {
        acc[b] = 0.0;
        win[b] = cl[b];
    }
    /* invariant at step k: win[(b + k) % B] = ch[B l + b + k] */
    for (int k = 0; k < m; k += PD3_B) {
#pragma unroll
        for (int kk = 0; kk < PD3_B; kk++) {
            const double sv = k + kk < m ? sg[k + kk] : 0.0;
#pragma unroll
            for (int b = 0; b < PD3_B; b++)
                acc[b] = fma(sv, win[(b + kk) % PD3_B], acc[b]);
            win[kk] = cl[PD3_B + k + kk];
        }
    }
#pragma unroll
    for (int b = 0; b < PD3_B; b++)
        qc[PD3_B * lane + b] = acc[b];
}

/* Selection (PHASE 1, seed Alg. 2 lines 1-25) and refinement (PHASE 2, Alg. 3) of one
 * segment over one slab of rows: block (x, y) = (segment, slab), thread tid = candidate
 * lane c = c0 + tid.
 *
 * Rows j are visited in ascending order, a chunk of R = 32 B rows at a time. For its
 * candidate c a thread keeps q = QT[c][j], advanced by formula (9) in O(1):
 *   QT[c][j] = QT[c-1][j-1] - t[c-1] t[j-1] + t[c+m-1] t[j+m-1]   (QTrow),
 * taking QT[c-1][j-1] from the lane below (a warp shuffle); lane 0 of each warp takes
 * the chain start QT[cw][j] computed directly for the chunk (chain_starts, QTcol), so
 * every value is at most 31 recurrence steps from an exact dot product. A warp starts
 * 31 rows before the first row its lane 0 needs, with garbage in the lanes above 0:
 * lane l is exact from 31 - l rows later on, before its first pair (the zeros before
 * t[0] define the rows down to -31). The distance is seed formula (7) with the
 * conventions of DESIGN 3, the expression of pd3.c.
 *
 * Pairs: phase 1 pairs c with the rows c + excl <= j < N, phase 2 with 0 <= j <=
 * c - excl, each block only with the rows of its slab [slo, shi] (blockIdx.y; the
 * slabs cut the long scans of the last live candidates into pieces that run in
 * parallel). d2 < r2 drops the candidate (Bitmap.Subseq, global and seen by the other
 * slabs' blocks at their next chunk) and, in phase 1, the row (Bitmap.Neighbor: the
 * row's bit in the chunk's hit bitmap in shared memory, OR-reduced over the warp every
 * 32 rows and written to global memory after the chunk). Every pair updates the lane's
 * minimum (strict <, rows ascending: ties go to the smaller row); the block leaves it
 * in the slab's minima for the combining kernels.
 *
 * Early exit: a warp whose lanes are all dropped stops (checked every 32 rows); in
 * phase 2 a warp also stops after the last row its highest live lane needs (live-lane
 * narrowing). Before the first chunk and after each chunk the block votes
 * (__syncthreads_or) and ends when no warp has rows left.
 *
 * Shared memory: the chunk's row records {t[j-1], t[j+m-1], mu_j, inv_j} (inv_j = 0
 * for a constant row, -1 for a non-finite or padded one), each warp's chain starts,
 * the chunk's hit bitmap and, with SMEM, the segment's series t[c0 .. c0 + lanes + m)
 * and the chunk's t[Jc .. Jc + R + 2B + m). Without SMEM (m too long for shared
 * memory) the chain starts read the padded series in global memory. */
template <bool SMEM, int PHASE>
__global__ static void __launch_bounds__(PD3_MAX_LANES, PD3_MIN_BLOCKS) pd3_scan(pd3_args a) {
    extern __shared__ __align__(16) double sh[];
    const int lanes = blockDim.x, tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const pd3_layout lay = pd3_layout_of(lanes, a.m, SMEM);
    double2 *rec_ht = (double2 *)(sh + lay.rec); /* {t[j-1], t[j+m-1]} */
    double2 *rec_mi = rec_ht + PD3_ROWS;         /* {mu_j, inv_j} */
    double *qc = sh + lay.qcol + w * PD3_ROWS;
    double *sseg = sh + lay.seg, *schunk = sh + lay.chunk;
    unsigned *hits = (unsigned *)(sh + lay.total);

    int seg;
    if (PHASE == 1) {
        seg = blockIdx.x;
        if (seg % a.parts != a.part)
            return; /* another part's rows (the whole block: no barrier is skipped) */
    } else {
        if ((int)blockIdx.x >= *a.nlist)
            return; /* the grid covers every segment; only the listed ones refine */
        seg = a.seglist[blockIdx.x];
    }
    const int N = a.N, m = a.m, excl = a.excl;
    const int c0 = seg * a.seglen, cw = c0 + 32 * w, c = c0 + tid;
    const int slo = blockIdx.y * a.slab, shi = min(slo + a.slab, N) - 1; /* the slab's rows */
    const bool valid = tid < a.seglen && c < N;
    const double *tp = a.tp;

    /* the lane's constants; lane 0 of a warp takes its value from the chain starts */
    double ta = 0.0, tb = 0.0, mmu = 0.0, invc = 0.0;
    int kc = TSM_SUB_NONFINITE;
    if (valid) {
        ta = lane ? tp[c - 1] : 0.0;
        tb = lane ? tp[c + m - 1] : 0.0;
        mmu = (double)m * a.mu[c];
        invc = a.inv[c];
        kc = a.kind[c];
    }
    const bool normal_c = kc == TSM_SUB_NORMAL;
    /* d2 to a normal row when c is not normal; to a constant row (DESIGN 3) */
    const double spec_n = kc == TSM_SUB_CONSTANT ? (double)m : INFINITY;
    const double spec_c = normal_c ? (double)m : kc == TSM_SUB_CONSTANT ? 0.0 : INFINITY;
    const double two_m = 2.0 * (double)m, r2 = a.r2;
    /* rows paired with c in this slab; the warp's first row (31 rows of warm-up) */
    int jmin, jmax, start_w, start_b;
    if (PHASE == 1) {
        jmin = max(c + excl, slo);
        jmax = shi;
        start_w = max(cw + excl, slo) - 31;
        start_b = max(c0 + excl, slo) - 31;
    } else {
        jmin = slo;
        jmax = min(c - excl, shi);
        start_w = start_b = slo - 31;
    }
    if (!valid) { /* a lane past the segment or the series: no pairs */
        jmin = INT_MAX;
        jmax = -1;
    }
    const bool has_rows = valid && jmin <= jmax;
    bool alive = valid && a.subseq[c]; /* the global Bitmap.Subseq: 0 once dropped */
    double q = 0.0, best = INFINITY;
    int best_j = -1;
    unsigned count = 0;
    int last_w = shi;  /* last row the warp needs (phase 2: narrowed every chunk) */
    bool done = false; /* warp-uniform: no live lane with rows left */

    if (__syncthreads_or(alive && has_rows)) {
        if (SMEM)
            for (int x = tid; x < lanes + m; x += lanes)
                sseg[x] = tp[c0 + x];
        if (PHASE == 1 && tid < PD3_B)
            hits[tid] = 0;
        for (int jc = start_b;; jc += PD3_ROWS) {
            /* the chunk's rows into shared memory */
            for (int x = tid; x < PD3_ROWS; x += lanes) {
                const int j = jc + x;
                double mu_j = 0.0, inv_j = -1.0;
                if (j >= 0 && j < N) {
                    const int kj = a.kind[j];
                    mu_j = a.mu[j];
                    inv_j = kj == TSM_SUB_NORMAL ? a.inv[j] : kj == TSM_SUB_CONSTANT ? 0.0 : -1.0;
                }
                rec_ht[x] = make_double2(tp[j - 1], tp[j + m - 1]);
                rec_mi[x] = make_double2(mu_j, inv_j);
            }
            if (SMEM)
                for (int x = tid; x < PD3_CHUNK_T + m; x += lanes)
                    schunk[x] = tp[jc + x];
            /* candidates dropped by the other slabs' blocks */
            if (alive && !*(volatile const uint8_t *)&a.subseq[c])
                alive = false;
            __syncthreads();

            if (!done) {
                const unsigned live = __ballot_sync(FULL_MASK, alive && has_rows);
                if (PHASE == 2 && live) /* narrow to the highest live lane */
                    last_w = min(shi, cw + (31 - __clz(live)) - excl);
                done = !live || last_w < jc;
            }
            const int rb = max(start_w - jc, 0), re = min(last_w - jc + 1, PD3_ROWS);
            if (!done && rb < re) {
                chain_starts(SMEM ? sseg + 32 * w : tp + cw, SMEM ? schunk : tp + jc, m, lane, qc);
                __syncwarp();
                /* groups of 32 rows (a word of the hit bitmap), straight-line inside */
                for (int g = rb & ~31; g < re; g += 32) {
                    const int r0 = max(g, rb), r1 = min(g + 32, re);
                    const bool alive0 = alive;
                    unsigned hit = 0;
#pragma unroll pd3_unroll
                    for (int r = r0; r < r1; r++) {
                        const double up = __shfl_up_sync(FULL_MASK, q, 1);
                        const double2 ht = rec_ht[r], mi = rec_mi[r];
                        /* formula (9); lane 0 (ta = tb = 0) takes the chain start */
                        q = fma(tb, ht.y, fma(-ta, ht.x, lane ? up : qc[r]));
                        const double corr = tsm_corr_mmu(q, mmu, invc, mi.x, mi.y);
                        const double d2 =
                            mi.y > 0.0 ? (normal_c ? two_m * (1.0 - corr) : spec_n) : spec_c;
                        const int j = jc + r;
                        const bool in = mi.y >= 0.0 && j >= jmin && j <= jmax;
                        const bool close = in && d2 < r2;
                        count += in;
                        if (in && d2 < best) {
                            best = d2;
                            best_j = j;
                        }
                        alive = alive && !close;
                        if (PHASE == 1)
                            hit |= (unsigned)close << (r - g);
                    }
                    if (alive0 && !alive)
                        a.subseq[c] = 0; /* seen by this segment's other slabs */
                    if (PHASE == 1) {
                        hit = __reduce_or_sync(FULL_MASK, hit);
                        if (hit && lane == 0)
                            atomicOr(&hits[g >> 5], hit);
                    }
                    if (!__any_sync(FULL_MASK, alive && has_rows)) {
                        done = true; /* early exit of the warp */
                        break;
                    }
                }
            }
            /* block-wide vote: does any warp have rows after this chunk? */
            const bool more = !done && jc + PD3_ROWS <= last_w;
            const int any = __syncthreads_or(more);
            if (PHASE == 1 && tid < PD3_B) { /* flush the chunk's Neighbor hits */
                unsigned bits = hits[tid];
                hits[tid] = 0;
                while (bits) {
                    const int b = __ffs(bits) - 1;
                    bits &= bits - 1;
                    a.neighbor[jc + 32 * tid + b] = 0;
                }
            }
            if (!any)
                break;
        }
    }

    if (valid) { /* the slab's minimum for the combining kernels */
        const size_t at = (size_t)blockIdx.y * N + c;
        a.slab_d2[at] = best;
        a.slab_j[at] = best_j;
    }
    /* distance counter: one atomic per warp */
    unsigned long long cnt = count;
    for (int o = 16; o > 0; o >>= 1)
        cnt += __shfl_down_sync(FULL_MASK, cnt, o);
    if (lane == 0 && cnt)
        atomicAdd(a.distances, cnt);
}

/* The first kernel of a pass, a thread per subsequence: Bitmap.Subseq starts with the
 * finite subsequences, Bitmap.Neighbor with all. */
__global__ static void pd3_init(const uint8_t *kind, int N, uint8_t *subseq, uint8_t *neighbor) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    subseq[i] = kind[i] != TSM_SUB_NONFINITE;
    neighbor[i] = 1;
}

/* The smallest of the slabs' minima for c, ties to the first slab (the smaller row). */
static __device__ void slab_min(const double *slab_d2, const int *slab_j, int nslab, int N, int c,
                                double *d2, int *j) {
    double b = INFINITY;
    int bj = -1;
    for (int k = 0; k < nslab; k++) {
        const double v = slab_d2[(size_t)k * N + c];
        if (v < b) {
            b = v;
            bj = slab_j[(size_t)k * N + c];
        }
    }
    *d2 = b;
    *j = bj;
}

/* The conjunction kernel (seed Alg. 2 lines 26-28), a thread per subsequence:
 * Subseq &= Neighbor, flags the segments that still hold a candidate, and keeps the
 * right minimum of every candidate (over phase 1's slabs) in nn. */
__global__ static void pd3_conjunction(pd3_args a, int *seg_flag) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.N)
        return;
    const uint8_t v = a.subseq[i] & a.neighbor[i];
    a.subseq[i] = v;
    if (v) {
        if ((i / a.seglen) % a.parts == a.part) /* this part refines only its own */
            seg_flag[i / a.seglen] = 1;         /* the same value from every writer */
        slab_min(a.slab_d2, a.slab_j, a.nslab, a.N, i, &a.nn_d2[i], &a.nn_j[i]);
    }
}

/* Scatter of the flagged segments to their scanned positions: the refinement list. */
__global__ static void pd3_list_segments(const int *flag, const int *pos, int nseg, int *list,
                                         pd3_summary *sum) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nseg)
        return;
    if (flag[s])
        list[pos[s]] = s;
    if (s == nseg - 1)
        sum->nlist = pos[s] + flag[s];
}

/* After the refinement, a thread per subsequence: a survivor's nn is the smaller of its
 * left minimum (over phase 2's slabs) and its right minimum, the left winning ties (its
 * rows are smaller); found flags the survivors with a finite nn. Counts the survivors. */
__global__ static void pd3_finish(pd3_args a, pd3_summary *sum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool in = i < a.N;
    const bool alive = in && a.subseq[i] && (i / a.seglen) % a.parts == a.part;
    int f = 0;
    if (alive) {
        double d2;
        int j;
        slab_min(a.slab_d2, a.slab_j, a.nslab, a.N, i, &d2, &j);
        if (d2 <= a.nn_d2[i]) {
            a.nn_d2[i] = d2;
            a.nn_j[i] = j;
        } else {
            d2 = a.nn_d2[i];
        }
        f = d2 < INFINITY;
    }
    if (in)
        a.found[i] = f;
    const unsigned n = __popc(__ballot_sync(FULL_MASK, alive));
    if ((threadIdx.x & 31) == 0 && n)
        atomicAdd(&sum->candidates, (unsigned long long)n);
}

/* Scatter of the survivors with a finite nn to their scanned positions, by index. */
__global__ static void pd3_compact(const int *found, const int *pos, const double *nn_d2,
                                   const int *nn_j, int N, tsm_discord *out, pd3_summary *sum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    if (found[i]) {
        tsm_discord d;
        d.index = i;
        d.distance = sqrt(nn_d2[i]);
        d.neighbor = nn_j[i];
        out[pos[i]] = d;
    }
    if (i == N - 1)
        sum->nfound = pos[i] + found[i];
}

/* Carves aligned pieces out of one device allocation. */
static size_t carve(size_t *at, size_t bytes) {
    size_t off = (*at + 255) & ~(size_t)255;
    *at = off + bytes;
    return off;
}

/* Raises the dynamic shared-memory limit of a scan kernel that needs over 48 KB. */
template <bool SMEM, int PHASE> static cudaError_t pd3_allow_smem(size_t bytes) {
    if (bytes <= 48 * 1024)
        return cudaSuccess;
    return cudaFuncSetAttribute(pd3_scan<SMEM, PHASE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)bytes);
}

/* Row slabs of a pass: enough that the longest scans (the last live candidates, a
 * whole series long, whose rows a warp visits one after the other) split into pieces
 * of about PD3_SLAB_ROWS rows that run in parallel; at most PD3_MAX_SLABS, and at most
 * PD3_SLAB_BYTES of slab minima. Measured (see PD3_UNROLL): 4096 rows per slab against
 * 65536 takes n = 2^16 from 30 to 7 ms and n = 2^18 from 50 to 29 ms, same beyond. */
#ifndef PD3_SLAB_ROWS
#define PD3_SLAB_ROWS 4096
#endif
#define PD3_MAX_SLABS  32
#define PD3_SLAB_BYTES ((size_t)1 << 30)

extern "C" tsm_status tsmi_pd3_range_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                                          size_t seglen, size_t part, size_t parts,
                                          tsm_pd3_sync_fn sync, void *user, tsm_discord **out,
                                          size_t *count, tsm_pd3_stats *counters) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    char *ws = NULL;
    tsm_discord *host = NULL;
    uint8_t *nb_host = NULL; /* parts: the Neighbor bitmap on its way through sync */
    pd3_summary sum = {0, 0, 0, 0};
    pd3_args a;
    size_t at = 0, cub_bytes = 0, cub_seg = 0, cub_all = 0, smem = 0, tp_len = 0;
    size_t o_tp, o_sub, o_nb, o_d2, o_j, o_sd2, o_sj, o_found, o_pos, o_sflag, o_spos, o_list,
        o_sum, o_out, o_cub;
    int device = 0, optin = 0, lanes, threads, nseg, N, m, ex, nslab, slab;
    bool in_smem;
    void (*scan1)(pd3_args), (*scan2)(pd3_args);
    dim3 grid;

    *out = NULL;
    *count = 0;
    if (!s->dev)
        return tsm_fail(ctx, TSM_EINVAL, "PD3 on CUDA: the statistics were not made on a CUDA ctx");
    if (s->N >= PD3_LIMIT || s->m >= PD3_LIMIT)
        return tsm_fail(ctx, TSM_EINVAL,
                        "PD3 on CUDA: N = %zu and m = %zu must be below 2^30 on this backend", s->N,
                        s->m);
    N = (int)s->N;
    m = (int)s->m;
    ex = excl < s->N ? (int)excl : N; /* excl >= N: no pairs either way */
    lanes = seglen < PD3_MAX_LANES ? (int)seglen : PD3_MAX_LANES;
    threads = (lanes + 31) / 32 * 32;
    nseg = (N + lanes - 1) / lanes;
    nslab = (N + PD3_SLAB_ROWS - 1) / PD3_SLAB_ROWS;
    if (nslab > PD3_MAX_SLABS)
        nslab = PD3_MAX_SLABS;
    while (nslab > 1 && (size_t)nslab * N * (sizeof(double) + sizeof(int)) > PD3_SLAB_BYTES)
        nslab--;
    slab = ((N + nslab - 1) / nslab + 31) / 32 * 32;
    nslab = (N + slab - 1) / slab;
    grid = dim3((unsigned)nseg, (unsigned)nslab);

    /* the series windows in shared memory when they fit, else read from global memory */
    TSM_CUDA_TRY(ctx, cudaGetDevice(&device));
    TSM_CUDA_TRY(ctx,
                 cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    in_smem = pd3_smem_bytes(threads, m, true) <= (size_t)optin;
    smem = pd3_smem_bytes(threads, m, in_smem);
    if (smem > (size_t)optin) {
        st = tsm_fail(ctx, TSM_EINVAL, "PD3 on CUDA: %zu bytes of shared memory needed, %d allowed",
                      smem, optin);
        goto done;
    }
    scan1 = in_smem ? pd3_scan<true, 1> : pd3_scan<false, 1>;
    scan2 = in_smem ? pd3_scan<true, 2> : pd3_scan<false, 2>;
    if (in_smem) {
        TSM_CUDA_TRY(ctx, (pd3_allow_smem<true, 1>(smem)));
        TSM_CUDA_TRY(ctx, (pd3_allow_smem<true, 2>(smem)));
    } else {
        TSM_CUDA_TRY(ctx, (pd3_allow_smem<false, 1>(smem)));
        TSM_CUDA_TRY(ctx, (pd3_allow_smem<false, 2>(smem)));
    }

    /* one workspace: padded series, bitmaps, minima, flags, positions, lists, output */
    TSM_CUDA_TRY(
        ctx, cub::DeviceScan::ExclusiveSum(NULL, cub_seg, (int *)NULL, (int *)NULL, nseg, stream));
    TSM_CUDA_TRY(ctx,
                 cub::DeviceScan::ExclusiveSum(NULL, cub_all, (int *)NULL, (int *)NULL, N, stream));
    cub_bytes = cub_seg > cub_all ? cub_seg : cub_all;
    /* formula (8): zeros after t[n-1] for the last segment's lanes (indices below
     * nseg lanes + threads + m) and the last chunk (below N + R + 2B + m) */
    tp_len =
        (size_t)PD3_PAD + (size_t)nseg * lanes + threads + 2 * (size_t)m + N + 2 * PD3_CHUNK_T + 64;
    o_tp = carve(&at, tp_len * sizeof(double));
    o_sub = carve(&at, (size_t)N);
    o_nb = carve(&at, (size_t)N);
    o_d2 = carve(&at, (size_t)N * sizeof(double));
    o_j = carve(&at, (size_t)N * sizeof(int));
    o_sd2 = carve(&at, (size_t)nslab * N * sizeof(double));
    o_sj = carve(&at, (size_t)nslab * N * sizeof(int));
    o_found = carve(&at, (size_t)N * sizeof(int));
    o_pos = carve(&at, (size_t)N * sizeof(int));
    o_sflag = carve(&at, (size_t)nseg * sizeof(int));
    o_spos = carve(&at, (size_t)nseg * sizeof(int));
    o_list = carve(&at, (size_t)nseg * sizeof(int));
    o_sum = carve(&at, sizeof(pd3_summary));
    o_out = carve(&at, (size_t)N * sizeof(tsm_discord));
    o_cub = carve(&at, cub_bytes);
    TSM_CUDA_ALLOC(ctx, ws, at);

    a.tp = (const double *)(ws + o_tp) + PD3_PAD;
    a.mu = s->dev->mu;
    a.inv = s->dev->inv;
    a.kind = s->dev->kind;
    a.N = N;
    a.m = m;
    a.excl = ex;
    a.seglen = lanes;
    a.r2 = r * r;
    a.subseq = (uint8_t *)(ws + o_sub);
    a.neighbor = (uint8_t *)(ws + o_nb);
    a.nn_d2 = (double *)(ws + o_d2);
    a.nn_j = (int *)(ws + o_j);
    a.slab_d2 = (double *)(ws + o_sd2);
    a.slab_j = (int *)(ws + o_sj);
    a.slab = slab;
    a.nslab = nslab;
    a.seglist = (const int *)(ws + o_list);
    a.nlist = &((pd3_summary *)(ws + o_sum))->nlist;
    a.found = (int *)(ws + o_found);
    a.part = (int)part;
    a.parts = (int)parts;
    a.distances = &((pd3_summary *)(ws + o_sum))->distances;

    TSM_CUDA_TRY(ctx, cudaMemsetAsync(ws + o_tp, 0, tp_len * sizeof(double), stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync((double *)a.tp, s->dev->t, s->n * sizeof(double),
                                      cudaMemcpyDeviceToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(ws + o_sflag, 0, (size_t)nseg * sizeof(int), stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(ws + o_sum, 0, sizeof(pd3_summary), stream));
    pd3_init<<<tsmi_blocks(N, 256), 256, 0, stream>>>(a.kind, N, a.subseq, a.neighbor);
    TSM_CUDA_LAUNCHED(ctx);

    /* phase 1: selection, a block per segment and slab */
    scan1<<<grid, threads, smem, stream>>>(a);
    TSM_CUDA_LAUNCHED(ctx);
    if (sync) { /* the other parts' rows: Neighbor over all of them, through the host */
        nb_host = (uint8_t *)malloc((size_t)N);
        if (!nb_host) {
            st = tsm_fail(ctx, TSM_ENOMEM, "out of memory for PD3's Neighbor bitmap (%d)", N);
            goto done;
        }
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(nb_host, a.neighbor, (size_t)N, cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
        if (sync(user, nb_host, (size_t)N) != 0) {
            st = tsm_fail(ctx, TSM_EINTERNAL, "PD3: the exchange of the Neighbor bitmap failed");
            goto done;
        }
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(a.neighbor, nb_host, (size_t)N, cudaMemcpyHostToDevice, stream));
    }
    pd3_conjunction<<<tsmi_blocks(N, 256), 256, 0, stream>>>(a, (int *)(ws + o_sflag));
    TSM_CUDA_LAUNCHED(ctx);
    if (tsmi_progress_on(ctx)) { /* half the pass (the launches are one each) */
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
        tsmi_progress(ctx, "pass", 1, 2);
    }
    /* the segments that still hold candidates, compacted on the device */
    TSM_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveSum(ws + o_cub, cub_bytes, (int *)(ws + o_sflag),
                                                    (int *)(ws + o_spos), nseg, stream));
    pd3_list_segments<<<tsmi_blocks(nseg, 256), 256, 0, stream>>>(
        (int *)(ws + o_sflag), (int *)(ws + o_spos), nseg, (int *)(ws + o_list),
        (pd3_summary *)(ws + o_sum));
    TSM_CUDA_LAUNCHED(ctx);
    /* phase 2: refinement of the listed segments (the rest of the grid returns) */
    scan2<<<grid, threads, smem, stream>>>(a);
    TSM_CUDA_LAUNCHED(ctx);
    pd3_finish<<<tsmi_blocks(N, 256), 256, 0, stream>>>(a, (pd3_summary *)(ws + o_sum));
    TSM_CUDA_LAUNCHED(ctx);
    /* the discords, by index, into the output array */
    TSM_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveSum(ws + o_cub, cub_bytes, a.found,
                                                    (int *)(ws + o_pos), N, stream));
    pd3_compact<<<tsmi_blocks(N, 256), 256, 0, stream>>>(a.found, (int *)(ws + o_pos), a.nn_d2,
                                                         a.nn_j, N, (tsm_discord *)(ws + o_out),
                                                         (pd3_summary *)(ws + o_sum));
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(&sum, ws + o_sum, sizeof sum, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    tsmi_progress(ctx, "pass", 2, 2);
    if (sum.nfound > 0) {
        host = (tsm_discord *)malloc((size_t)sum.nfound * sizeof *host);
        if (!host) {
            st = tsm_fail(ctx, TSM_ENOMEM, "out of memory for %d discords", sum.nfound);
            goto done;
        }
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(host, ws + o_out, (size_t)sum.nfound * sizeof *host,
                                          cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    }
    *out = host;
    *count = (size_t)sum.nfound;
    host = NULL;
    if (counters) {
        counters->distances += sum.distances;
        counters->passes += 1;
        counters->candidates = (size_t)sum.candidates;
        counters->r = r;
    }
done:
    free(host);
    free(nb_host);
    if (ws)
        cudaFree(ws);
    return st;
}
