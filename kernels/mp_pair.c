/* SPDX-License-Identifier: Apache-2.0 */
/* mp_pair.c - the best pair of the matrix profile's traversal on the CPU (mp.h,
 * tsm_mp_best_pair): the tiles of mp.c (mp_plan.h) with the row and column bests
 * replaced by one filter per pair.
 *
 * Filter. The profile compares every pair's correlation c = (cov inv_i) inv_j with
 * the best of its row and of its column. For the best pair only c >= T matters, T
 * the thread's best so far; with inv_j > 0 that is w = cov inv_i >= T / inv_j, so the
 * thresholds cut[j] = T sigma_j (sigma_j = 1 / inv_j, computed once; less a relative
 * 1e-12, far more than the four roundings between the two sides) are computed once per
 * column and chunk of MP_REFRESH rows, from the best at the chunk's start (T only
 * grows, so an older threshold only lets more pairs through). Columns that are not
 * normal (or masked) have inv = NaN and cut = +inf: their pairs never pass. Pairs that
 * pass are evaluated exactly as the profile evaluates them (same tiles, same update,
 * same product order), so the best pair's correlation is the profile's.
 *
 * With AVX-512 the filter is applied a block of MP_ROWS rows at a time, on the
 * covariance itself (pair_tile_avx512): a pair then costs its two fused updates and a
 * max, and the rare block that may hold a passing pair runs again with the filter
 * above. Measured on 2 Zen 4 cores at 2^18 (m 128): 2.97-3.05 s against 3.29-3.34 s
 * for the filter on every pair (the profile: about 5.1 s). The block's first pass reads
 * its columns from a skewed copy (aligned loads, see tsm_mp_best_pair's work items):
 * 2.42-2.54 s against 2.93-3.12 s for loads from df and dg (profile 4.86-5.01 s).
 *
 * T starts at -inf in each thread (everything passes until a first pair is kept).
 * Threads keep their own best; the merge takes the pair order (tsm_mp_pair_beats), so
 * the result does not depend on the thread count. */
#include "mp.h"

#include "dispatch.h"
#include "mp_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if TSMI_HAVE_AVX512
#include <immintrin.h>
#endif

#define MP_REFRESH 1024 /* rows of a chunk, whose thresholds follow the best at its start */
#define MP_ROWS    4    /* rows of a block that shares covariance thresholds (AVX-512) */
#define MP_GROUP   16   /* bands of a work item, whose tiles share rows and a skewed copy */
/* Columns of a work item's skewed copy: those its tiles' vectors start at. */
#define MP_SKEW (MP_H + (MP_GROUP - 1) * MP_W + MP_W - 7)
_Static_assert(MP_H % MP_REFRESH == 0 && MP_REFRESH % MP_ROWS == 0,
               "row blocks must not straddle chunks or tiles");

/* Thresholds of the filter for the columns c0 .. c0 + nc - 1 against the best t, from
 * sig = 1 / inv; +inf where sig is NaN (inv is: those columns never pass, and the
 * minima of pair_lows need not skip NaN). */
TSMI_HOT static void pair_cuts(const double *sig, double t, size_t c0, size_t nc, double *cut) {
    for (size_t c = 0; c < nc; c++) {
        const double x = t * sig[c0 + c];
        cut[c] = x == x ? x - fabs(x) * 1e-12 - 0x1p-1000 : INFINITY;
    }
}

/* Pair (i, j) whose w = cov inv_i passed the filter: its correlation as the profile
 * computes it, kept when it beats *best. */
static inline void pair_offer(tsm_mp_pair *best, double w, double invj, size_t i, size_t j) {
    double c = w * invj;
    c = c > 1.0 ? 1.0 : c; /* NaN stays NaN and never beats */
    const tsm_mp_pair x = {c, (int64_t)i, (int64_t)j};
    if (tsm_mp_pair_beats(&x, best))
        *best = x;
}

#if TSMI_HAVE_AVX512 /* what the AVX-512 tile alone uses, down to its #endif */
/* The smaller and the larger of x and y where one is NaN: the other (libm's fmin and
 * fmax, which GCC calls rather than inlines). */
static inline double min_num(double x, double y) {
    return y < x || x != x ? y : x;
}
static inline double max_num(double x, double y) {
    return y > x || x != x ? y : x;
}

/* lo[c] = the smallest of cut[c .. c + MP_ROWS - 1] (past the end: of those there), for
 * c < nc: the thresholds a lane meets in a block of MP_ROWS rows (its column moves one
 * to the right a row). */
TSMI_HOT static void pair_lows(const double *cut, size_t nc, double *lo) {
    /* minima over windows of 2, 4, .. MP_ROWS entries, each pass from the one before
     * (past the end: over the entries there) */
    _Static_assert((MP_ROWS & (MP_ROWS - 1)) == 0, "MP_ROWS must be a power of two");
    memcpy(lo, cut, nc * sizeof *lo);
    for (size_t q = 1; q < MP_ROWS && q < nc; q *= 2)
        for (size_t c = 0; c + q < nc; c++)
            lo[c] = lo[c + q] < lo[c] ? lo[c + q] : lo[c];
}

/* The range of sigma over the normal rows of each block of MP_ROWS rows (blocks start
 * at multiples of MP_ROWS, as the tiles' do): range[2 b], range[2 b + 1] for rows
 * b MP_ROWS .., NaN for a block without a normal row. O(N). */
static void row_ranges(const double *sig, size_t N, double *range) {
    for (size_t b = 0; b * MP_ROWS < N; b++) {
        double lo = NAN, hi = NAN;
        for (size_t i = b * MP_ROWS; i < N && i < (b + 1) * MP_ROWS; i++)
            lo = min_num(lo, sig[i]), hi = max_num(hi, sig[i]);
        range[2 * b] = lo, range[2 * b + 1] = hi;
    }
}

/* Thresholds on the covariance itself for the lanes of a block of rows, from lo (see
 * pair_lows: lo + 8 v is vector v's) and the range [slo, shi] of sigma over the block's
 * normal rows: a pair passes the filter (w = cov inv_i >= cut_j) only if cov >= cut_j
 * sigma_i, and so only if cov >= lo sigma_i >= lo slo (lo >= 0) or lo shi (lo < 0).
 * Less a relative 1e-11 and 2^-1000, which cover the roundings of w, of sigma = 1 / inv
 * and of these products (a few 1e-16 relative) many times over: the covariance test is
 * never stricter than the filter's, only looser by how much sigma moves in MP_ROWS rows. */
TSMI_TARGET_AVX512 static void cov_cuts(const double *lo, double slo, double shi,
                                        __m512d cc[MP_W / 8]) {
    const __m512d zero = _mm512_setzero_pd(), vlo = _mm512_set1_pd(slo), vhi = _mm512_set1_pd(shi),
                  rel = _mm512_set1_pd(1e-11), tiny = _mm512_set1_pd(0x1p-1000);
    for (int v = 0; v < MP_W / 8; v++) {
        const __m512d m = _mm512_loadu_pd(lo + 8 * v);
        const __m512d sg = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(m, zero, _CMP_GE_OQ), vhi, vlo);
        const __m512d x = _mm512_mul_pd(m, sg); /* NaN m or sigma: NaN, never passes */
        cc[v] = _mm512_sub_pd(_mm512_fnmadd_pd(_mm512_abs_pd(x), rel, x), tiny);
    }
}

/* The covariances of a row's MP_W lanes moved to the next row (the profile's step, so
 * that a block run again gives the same values bit for bit): lane group v's columns at
 * dfj, dgj + v stride (8 from df and dg themselves, 64 from their skewed copies). */
TSMI_TARGET_AVX512 static inline void update_row(__m512d cov[MP_W / 8], double dfi, double dgi,
                                                 const double *dfj, const double *dgj,
                                                 size_t stride) {
    const __m512d vdf = _mm512_set1_pd(dfi), vdg = _mm512_set1_pd(dgi);
    for (int v = 0; v < MP_W / 8; v++)
        cov[v] = tsmi_mp_step_avx512(cov[v], vdf, vdg, dgj + stride * v, dfj + stride * v);
}

/* The skewed copies of df and dg for the columns c0 .. c1 - 1: sf + 8 (c - c0) holds
 * df[c .. c + 7] (sg likewise). */
TSMI_TARGET_AVX512 static void skew_copy(const mp_plan *p, size_t c0, size_t c1, double *sf,
                                         double *sg) {
    for (size_t c = c0; c < c1; c++) {
        _mm512_store_pd(sf + 8 * (c - c0), _mm512_loadu_pd(p->df + c));
        _mm512_store_pd(sg + 8 * (c - c0), _mm512_loadu_pd(p->dg + c));
    }
}

/* Tile of diagonals k0 .. k0 + MP_W - 1, rows i0 .. i1 - 1, with AVX-512 (the update
 * of mp.c's tile_avx512). Rows go in chunks of MP_REFRESH, whose thresholds are taken
 * from the best at the chunk's start, and chunks in blocks of MP_ROWS. A block keeps
 * each lane's largest covariance over its rows (one max a pair besides the two fused
 * updates and the loads of df and dg) and compares it once with the lane's threshold
 * on the covariance (cov_cuts); a block where some lane reaches it runs again from its
 * starting covariances with the exact filter (w = cov inv_i >= cut_j) and offers what
 * passes. cut, lo: room for MP_REFRESH + MP_W - 1 entries each. sf, sg: the skewed copies
 * of df and dg from column sc0 (tsm_mp_best_pair), from which the block's first pass
 * reads its columns by aligned loads. */
TSMI_TARGET_AVX512 static void pair_tile_avx512(const mp_plan *p, const double *sig,
                                                const double *range, const double *sf,
                                                const double *sg, size_t sc0, double *cut,
                                                double *lo, size_t k0, size_t i0, size_t i1,
                                                tsm_mp_pair *best) {
    enum { V = MP_W / 8 };
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double init[MP_W], wv[MP_W];
    __m512d cov[V], cc[V], c0[V], top[V];
    tsmi_mp_exact_cov(p, i0, i0 + k0, init);
    for (int v = 0; v < V; v++)
        cov[v] = _mm512_loadu_pd(init + 8 * v);
    for (size_t cb = i0; cb < i1; cb += MP_REFRESH) {
        const size_t ce = i1 - cb < MP_REFRESH ? i1 : cb + MP_REFRESH;
        pair_cuts(sig, best->corr, cb + k0, ce - cb + MP_W - 1, cut);
        pair_lows(cut, ce - cb + MP_W - 1, lo);
        for (size_t ib = cb; ib < ce; ib += MP_ROWS) {
            const size_t ie = ce - ib < MP_ROWS ? ce : ib + MP_ROWS;
            cov_cuts(lo + (ib - cb), range[2 * (ib / MP_ROWS)], range[2 * (ib / MP_ROWS) + 1], cc);
            for (int v = 0; v < V; v++)
                c0[v] = cov[v], top[v] = cov[v];
            for (size_t i = ib; i < ie; i++) {
                if (i > ib)
                    for (int v = 0; v < V; v++)
                        top[v] = _mm512_max_pd(top[v], cov[v]);
                update_row(cov, df[i], dg[i], sf + (i + k0 - sc0) * 8, sg + (i + k0 - sc0) * 8, 64);
            }
            /* the lanes where every vector fails (top < cc, or NaN), by masked compares
             * chained in one mask register: a pair may pass unless all eight are set */
            __mmask8 fail = 0xff;
            for (int v = 0; v < V; v++)
                fail = _mm512_mask_cmp_pd_mask(fail, top[v], cc[v], _CMP_NGE_UQ);
            if (fail == 0xff)
                continue;
            for (size_t i = ib; i < ie; i++) { /* the exact filter on the block's rows */
                const size_t j0 = i + k0;
                const __m512d invi = _mm512_set1_pd(inv[i]);
                const double *cu = cut + (i - cb);
                for (int v = 0; v < V; v++)
                    _mm512_storeu_pd(wv + 8 * v, _mm512_mul_pd(c0[v], invi));
                for (size_t q = 0; q < MP_W; q++)
                    if (wv[q] >= cu[q])
                        pair_offer(best, wv[q], inv[j0 + q], i, j0 + q);
                update_row(c0, df[i], dg[i], df + j0, dg + j0, 8);
            }
        }
    }
}
#endif

/* The same tile in plain C (the update of mp.c's tile_portable), the filter on every
 * pair. cut: room for MP_REFRESH + MP_W - 1 entries. */
TSMI_HOT static void pair_tile_portable(const mp_plan *p, const double *sig, double *cut, size_t k0,
                                        size_t i0, size_t i1, tsm_mp_pair *best) {
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double cov[MP_W], wv[MP_W];
    tsmi_mp_exact_cov(p, i0, i0 + k0, cov);
    for (size_t cb = i0; cb < i1; cb += MP_REFRESH) {
        const size_t ce = i1 - cb < MP_REFRESH ? i1 : cb + MP_REFRESH;
        pair_cuts(sig, best->corr, cb + k0, ce - cb + MP_W - 1, cut);
        for (size_t i = cb; i < ce; i++) {
            const size_t j0 = i + k0;
            const double invi = inv[i], dfi = df[i], dgi = dg[i];
            const double *dfj = df + j0, *dgj = dg + j0, *cu = cut + (i - cb);
            int pass = 0;
            for (size_t w = 0; w < MP_W; w++) {
                wv[w] = cov[w] * invi;
                pass |= wv[w] >= cu[w];
                cov[w] += dfi * dgj[w] + dgi * dfj[w];
            }
            if (pass)
                for (size_t q = 0; q < MP_W; q++)
                    if (wv[q] >= cu[q])
                        pair_offer(best, wv[q], inv[j0 + q], i, j0 + q);
        }
    }
}

/* The scan's work items, their count, and (items not NULL) each as rb ngrp + g: the
 * tiles of MP_GROUP consecutive bands from b0 (fewer in the last of the ngrp groups)
 * over the rows of one tile, rb MP_H .. (rb + 1) MP_H - 1, in the order of rb (the
 * longest bands' first); item (rb, g) exists where the group's first band has such
 * rows. */
static size_t pair_items(size_t N, size_t excl, size_t b0, size_t ngrp, size_t *items) {
    size_t n = 0;
    for (size_t rb = 0; excl + b0 * MP_W + rb * MP_H < N; rb++)
        for (size_t g = 0; g < ngrp && excl + (b0 + g * MP_GROUP) * MP_W + rb * MP_H < N; g++) {
            if (items)
                items[n] = rb * ngrp + g;
            n++;
        }
    return n;
}

tsm_status tsm_mp_best_pair(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const uint8_t *mask,
                            size_t b0, size_t b1, tsm_mp_pair *best) {
    if (!s || !best)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_mp_best_pair: missing statistics or output");
    tsm_status st = tsmi_mp_check_bands(ctx, s, excl, b0, b1, "tsm_mp_best_pair");
    if (st != TSM_OK)
        return st;
    const size_t N = s->N;
    *best = (tsm_mp_pair){-INFINITY, -1, -1};
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_mp_best_pair_cuda(ctx, s, excl, mask, b0, b1, best);
#endif
    const size_t ngrp = (b1 - b0 + MP_GROUP - 1) / MP_GROUP;
    size_t nitem = pair_items(N, excl, b0, ngrp, NULL);
    int T = tsm_ctx_threads(ctx);
    T = T < 1 ? 1 : (size_t)T > nitem ? (int)(nitem > 0 ? nitem : 1) : T;
    mp_plan p;
    double *plan = tsmi_mp_make_plan(s, mask, &p);
    double *cuts = malloc((size_t)T * 2 * (MP_REFRESH + MP_W) * sizeof *cuts); /* cut, lo */
    tsm_mp_pair *bests = malloc((size_t)T * sizeof *bests);
    double *sig = malloc((N + MP_W + 2 * (N / MP_ROWS + 1)) * sizeof *sig);
    double *range = sig + N + MP_W; /* row_ranges, for the AVX-512 tile */
    size_t *items = malloc((nitem + 1) * sizeof *items);
    const int wide = tsmi_cpu_avx512();
    /* per thread, the skewed copies of df then dg (AVX-512 tile only) */
    const size_t skew = 2 * (size_t)MP_SKEW * 8;
    double *skews = wide ? aligned_alloc(64, (size_t)T * skew * sizeof *skews) : NULL;
    if (!plan || !cuts || !bests || !sig || !items || (wide && !skews)) {
        free(plan), free(cuts), free(bests), free(sig), free(items), free(skews);
        return tsm_fail(ctx, TSM_ENOMEM, "tsm_mp_best_pair: out of memory for %zu subsequences", N);
    }
    pair_items(N, excl, b0, ngrp, items);
    for (int q = 0; q < T; q++)
        bests[q] = *best;
    for (size_t k = 0; k < N + MP_W; k++)
        sig[k] = 1.0 / p.inv[k];
#if TSMI_HAVE_AVX512
    if (wide)
        row_ranges(sig, N, range);
#endif
    /* Progress (tsm_ctx_set_progress): rows of the bands' tiles done, of all. */
    const int prog = tsmi_progress_on(ctx);
    uint64_t work = 0, done = 0;
    for (size_t blk = b0; prog && blk < b1; blk++)
        work += N - (excl + blk * MP_W);
    (void)range; /* unused where no AVX-512 tile is built */
#pragma omp parallel num_threads(T)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        double *cut = cuts + (size_t)tid * 2 * (MP_REFRESH + MP_W); /* and lo after it */
        tsm_mp_pair *mine = &bests[tid];
        double *sf = wide ? skews + (size_t)tid * skew : NULL, *sg = sf ? sf + skew / 2 : NULL;
        (void)sg;
#pragma omp for schedule(dynamic, 1)
        for (size_t it = 0; it < nitem; it++) {
            const size_t rb = items[it] / ngrp, g = items[it] % ngrp, i0 = rb * MP_H;
            const size_t ba = b0 + g * MP_GROUP, bz = b1 - ba < MP_GROUP ? b1 : ba + MP_GROUP;
            uint64_t rows = 0;
#if TSMI_HAVE_AVX512
            /* The skewed copies: sf + 8 (c - c0) holds df[c .. c + 7], 64-byte aligned (the
             * same for sg and dg), for the columns c0 .. c1 - 1 that the item's rows' vectors
             * start at: a row's vectors then load aligned, instead of 7 rows in 8 loading
             * across a cache line. Built once for MP_GROUP tiles, which share most columns. */
            const size_t c0 = i0 + excl + ba * MP_W;
            size_t c1 = c0;
            for (size_t blk = ba; blk < bz && excl + blk * MP_W + i0 < N; blk++) {
                const size_t k0 = excl + blk * MP_W;
                const size_t i1 = N - k0 - i0 < MP_H ? N - k0 : i0 + MP_H;
                c1 = i1 + k0 + MP_W - 8;
            }
            if (wide)
                skew_copy(&p, c0, c1, sf, sg);
#endif
            for (size_t blk = ba; blk < bz && excl + blk * MP_W + i0 < N; blk++) {
                const size_t k0 = excl + blk * MP_W;
                const size_t i1 = N - k0 - i0 < MP_H ? N - k0 : i0 + MP_H;
#if TSMI_HAVE_AVX512
                if (wide)
                    pair_tile_avx512(&p, sig, range, sf, sg, c0, cut, cut + MP_REFRESH + MP_W, k0,
                                     i0, i1, mine);
                else
#endif
                    pair_tile_portable(&p, sig, cut, k0, i0, i1, mine);
                rows += i1 - i0;
            }
            if (prog) {
                uint64_t now;
#pragma omp atomic capture
                now = done += rows;
                if (tid == 0)
                    tsmi_progress(ctx, "motif", now, work);
            }
        }
    }
    for (int q = 0; q < T; q++)
        if (tsm_mp_pair_beats(&bests[q], best))
            *best = bests[q];
    free(plan), free(cuts), free(bests), free(sig), free(items), free(skews);
    return TSM_OK;
}
