/* SPDX-License-Identifier: Apache-2.0 */
/* mp_pair.c - the best pair of the matrix profile's traversal on the CPU (mp.h,
 * tsm_mp_best_pair): the tiles of mp.c (mp_plan.h) with the row and column bests
 * replaced by one filter per pair.
 *
 * Filter. The profile compares every pair's correlation c = (cov inv_i) inv_j with
 * the best of its row and of its column. For the best pair only c >= T matters, T
 * the thread's best so far; with inv_j > 0 that is w = cov inv_i >= T / inv_j. So per
 * tile the thresholds cut[j] = T sigma_j (sigma_j = 1 / inv_j, computed once; less a
 * relative 1e-12, far more than the four roundings between the two sides) are
 * computed once per column, and a pair
 * costs one multiplication and one comparison besides its two fused updates, against
 * the profile's two multiplications, the clamp and two compare-selects. Columns that
 * are not normal (or masked) have inv = NaN, so cut = NaN and their pairs never pass.
 * Pairs that pass are evaluated exactly as the profile evaluates them (same tiles,
 * same update, same product order), so the best pair's correlation is the profile's.
 *
 * T starts at -inf in each thread (everything passes until a first pair is kept);
 * the thresholds are refreshed when the best improved, at most every MP_REFRESH rows
 * (stale ones are lower, so they only let more pairs through). Threads keep their own
 * best; the merge takes the pair order (tsm_mp_pair_beats), so the result does not
 * depend on the thread count. */
#include "mp.h"

#include "dispatch.h"
#include "mp_plan.h"

#include <math.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if TSMI_HAVE_AVX512
#include <immintrin.h>
#endif

#define MP_REFRESH 256 /* rows between refreshes of stale thresholds, at most */

/* Thresholds of the filter for the columns c0 .. c0 + nc - 1 against the best t, from
 * sig = 1 / inv (NaN where inv is: those columns never pass). */
TSMI_HOT static void pair_cuts(const double *sig, double t, size_t c0, size_t nc, double *cut) {
    for (size_t c = 0; c < nc; c++) {
        const double x = t * sig[c0 + c];
        cut[c] = x - fabs(x) * 1e-12 - 0x1p-1000;
    }
}

/* Pair (i, j) whose w = cov inv_i passed the filter: its correlation as the profile
 * computes it, kept when it beats *best. Returns whether it did. */
static inline int pair_offer(tsm_mp_pair *best, double w, double invj, size_t i, size_t j) {
    double c = w * invj;
    c = c > 1.0 ? 1.0 : c; /* NaN stays NaN and never beats */
    const tsm_mp_pair x = {c, (int64_t)i, (int64_t)j};
    if (!tsm_mp_pair_beats(&x, best))
        return 0;
    *best = x;
    return 1;
}

#if TSMI_HAVE_AVX512
/* Tile of diagonals k0 .. k0 + MP_W - 1, rows i0 .. i1 - 1, with AVX-512 (the update
 * of mp.c's tile_avx512). cut: room for i1 - i0 + MP_W - 1 thresholds. */
TSMI_TARGET_AVX512 static void pair_tile_avx512(const mp_plan *p, const double *sig, double *cut,
                                                size_t k0, size_t i0, size_t i1,
                                                tsm_mp_pair *best) {
    enum { V = MP_W / 8 };
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double init[MP_W], wv[MP_W];
    tsmi_mp_exact_cov(p, i0, i0 + k0, init);
    pair_cuts(sig, best->corr, i0 + k0, i1 - i0 + MP_W - 1, cut);
    size_t fresh = i0; /* row at which cut was last computed */
    int stale = 0;
    __m512d cov[V];
    for (int v = 0; v < V; v++)
        cov[v] = _mm512_loadu_pd(init + 8 * v);
    for (size_t i = i0; i < i1; i++) {
        const size_t j0 = i + k0;
        const __m512d invi = _mm512_set1_pd(inv[i]);
        const __m512d dfi = _mm512_set1_pd(df[i]), dgi = _mm512_set1_pd(dg[i]);
        const double *cu = cut + (i - i0);
        __mmask8 pass = 0;
        __m512d w[V];
        for (int v = 0; v < V; v++) {
            w[v] = _mm512_mul_pd(cov[v], invi);
            pass |= _mm512_cmp_pd_mask(w[v], _mm512_loadu_pd(cu + 8 * v), _CMP_GE_OQ);
            cov[v] = _mm512_fmadd_pd(dfi, _mm512_loadu_pd(dg + j0 + 8 * v), cov[v]);
            cov[v] = _mm512_fmadd_pd(dgi, _mm512_loadu_pd(df + j0 + 8 * v), cov[v]);
        }
        if (pass) {
            for (int v = 0; v < V; v++)
                _mm512_storeu_pd(wv + 8 * v, w[v]);
            for (size_t q = 0; q < MP_W; q++)
                if (wv[q] >= cu[q])
                    stale |= pair_offer(best, wv[q], inv[j0 + q], i, j0 + q);
        }
        if (stale && i + 1 - fresh >= MP_REFRESH && i + 1 < i1) {
            pair_cuts(sig, best->corr, i + 1 + k0, i1 - i - 1 + MP_W - 1, cut + (i + 1 - i0));
            fresh = i + 1, stale = 0;
        }
    }
}
#endif

/* The same tile in plain C (the update of mp.c's tile_portable). */
TSMI_HOT static void pair_tile_portable(const mp_plan *p, const double *sig, double *cut, size_t k0,
                                        size_t i0, size_t i1, tsm_mp_pair *best) {
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double cov[MP_W], wv[MP_W];
    tsmi_mp_exact_cov(p, i0, i0 + k0, cov);
    pair_cuts(sig, best->corr, i0 + k0, i1 - i0 + MP_W - 1, cut);
    size_t fresh = i0;
    int stale = 0;
    for (size_t i = i0; i < i1; i++) {
        const size_t j0 = i + k0;
        const double invi = inv[i], dfi = df[i], dgi = dg[i];
        const double *dfj = df + j0, *dgj = dg + j0, *cu = cut + (i - i0);
        int pass = 0;
        for (size_t w = 0; w < MP_W; w++) {
            wv[w] = cov[w] * invi;
            pass |= wv[w] >= cu[w];
            cov[w] += dfi * dgj[w] + dgi * dfj[w];
        }
        if (pass)
            for (size_t q = 0; q < MP_W; q++)
                if (wv[q] >= cu[q])
                    stale |= pair_offer(best, wv[q], inv[j0 + q], i, j0 + q);
        if (stale && i + 1 - fresh >= MP_REFRESH && i + 1 < i1) {
            pair_cuts(sig, best->corr, i + 1 + k0, i1 - i - 1 + MP_W - 1, cut + (i + 1 - i0));
            fresh = i + 1, stale = 0;
        }
    }
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
    int T = tsm_ctx_threads(ctx);
    T = T < 1 ? 1 : (size_t)T > b1 - b0 ? (int)(b1 - b0 > 0 ? b1 - b0 : 1) : T;
    mp_plan p;
    double *plan = tsmi_mp_make_plan(s, mask, &p);
    double *cuts = malloc((size_t)T * (MP_H + MP_W) * sizeof *cuts);
    tsm_mp_pair *bests = malloc((size_t)T * sizeof *bests);
    double *sig = malloc((N + MP_W) * sizeof *sig);
    if (!plan || !cuts || !bests || !sig) {
        free(plan), free(cuts), free(bests), free(sig);
        return tsm_fail(ctx, TSM_ENOMEM, "tsm_mp_best_pair: out of memory for %zu subsequences", N);
    }
    for (int q = 0; q < T; q++)
        bests[q] = *best;
    for (size_t k = 0; k < N + MP_W; k++)
        sig[k] = 1.0 / p.inv[k];
    /* Progress (tsm_ctx_set_progress): rows of the bands' tiles done, of all. */
    const int prog = tsmi_progress_on(ctx);
    uint64_t work = 0, done = 0;
    for (size_t blk = b0; prog && blk < b1; blk++)
        work += N - (excl + blk * MP_W);
    const int wide = tsmi_cpu_avx512();
    (void)wide; /* unused where no AVX-512 tile is built */
#pragma omp parallel num_threads(T)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        double *cut = cuts + (size_t)tid * (MP_H + MP_W);
        tsm_mp_pair *mine = &bests[tid];
#pragma omp for schedule(dynamic, 1)
        for (size_t blk = b0; blk < b1; blk++) {
            const size_t k0 = excl + blk * MP_W;
            for (size_t i0 = 0; i0 < N - k0; i0 += MP_H) {
                const size_t i1 = N - k0 - i0 < MP_H ? N - k0 : i0 + MP_H;
#if TSMI_HAVE_AVX512
                if (wide)
                    pair_tile_avx512(&p, sig, cut, k0, i0, i1, mine);
                else
#endif
                    pair_tile_portable(&p, sig, cut, k0, i0, i1, mine);
            }
            if (prog) {
                uint64_t now;
#pragma omp atomic capture
                now = done += N - k0;
                if (tid == 0)
                    tsmi_progress(ctx, "motif", now, work);
            }
        }
    }
    for (int q = 0; q < T; q++)
        if (tsm_mp_pair_beats(&bests[q], best))
            *best = bests[q];
    free(plan), free(cuts), free(bests), free(sig);
    return TSM_OK;
}
