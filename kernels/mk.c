/* SPDX-License-Identifier: Apache-2.0 */
/* mk.c - exact motifs by MK (Mueen-Keogh with reference subsequences), CPU/OpenMP.
 *
 * Seed 000 section 4 (data structures; Algorithms 1 and 4-9) with the termination rule
 * of DESIGN 4.3:
 *   I_Ref  R distinct random finite subsequences (the references, "Ref")
 *   D      R x N true distances D(r, j) = d(T[I_Ref(r)], T[j]) (Algorithm 4)
 *   SD     the standard deviation of each row of D (Algorithm 5); the reference with the
 *          largest SD, Z, orders the search
 *   I_S    the eligible subsequences sorted by (D(Z, j), j): the "linear order"
 *   bsf    initialised from D: reference-to-subsequence pairs are real pairs (Alg. 6)
 *   offset loop over pairs (I_S[k], I_S[k + offset]) with the lower bounds
 *          LB = max_r |D(r, a) - D(r, b)| (Algorithm 7; the triangle inequality, so D
 *          holds distances, not squares), the bitmap B of pairs whose LB survives bsf
 *          (Algorithm 8) and the exact distance only for those (Algorithm 9).
 *
 * Distances are z-normalised Euclidean, sqrt of tsm_d2 (distance.h) with the dot
 * product tsm_dot over the working series. Constants behave as the zero vector and
 * normal subsequences as points on the sphere of radius sqrt(m) (d = 0 between two
 * constants, sqrt(m) from a constant to a normal one), so d stays a metric and the
 * bounds hold for every kind of subsequence.
 *
 * Termination (DESIGN 4.3): D(Z, I_S[k + offset]) - D(Z, I_S[k]) grows with offset for
 * a fixed k, so once it exceeds bsf (+ margin) the pairs of k at this and every later
 * offset are out. Each k leaves the live list L at that point; the search ends when L
 * is empty, i.e. at the first offset where the ordering reference's bound exceeds bsf
 * for every k. The bounds of the other references are not monotone in offset: they
 * prune pairs but never end the search (the seed's Verify step ends on them, which can
 * miss the motif).
 *
 * The bounds are swept from P, a float copy of D's rows permuted into the linear order
 * (P[r][q] = D(ref r, I_S[q])), so that pairs at one offset read P contiguously; the
 * float rounding is covered by the margin (mk_margin). Exact distances always come
 * from the double formula.
 *
 * Parallel scheme: offsets are processed in batches [o0, o1) (1, 2, 4, ... up to
 * MK_BATCH_MAX offsets, so that bsf tightens after offset 1 before the wide batches);
 * the live list is cut into fixed chunks of MK_CHUNK entries (a dynamically scheduled
 * OpenMP loop over chunks), each running its offsets one after the other over its k
 * (mk_tile; P's slices at k and k + o stay in cache across the batch). Every chunk keeps its own
 * best pair, so bsf tightens inside a chunk, and the chunks' bests are merged with the tie rule
 * after the batch. Chunk boundaries do not depend on the thread count, so neither the answer nor
 * the counters do. Work: O(R N m) for D, then O(R) for each pair within the ordering reference's
 * bound (~10-20% of the N^2 / 2 pairs on random walks) and O(m) for each pair that survives every
 * bound (~1%). Memory: D (R N doubles), P (R N floats) and a few arrays of N indices. */
#include "mk.h"

#include "dispatch.h"
#include "distance.h"
#include "dot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Offsets per batch at most: bsf is merged across chunks, and the live list compacted,
 * once per batch. */
#define MK_BATCH_MAX 256
/* Live-list entries per parallel chunk (fixed: the results must not depend on the
 * number of threads, and each chunk tightens its own bsf). */
#define MK_CHUNK 256

/* Rounding budget for squared distances, per unit of m (see mk_margin). */
#define MK_D2_ROUND 1e-8

typedef tsmi_mk_pair mk_pair;

static inline void mk_offer(mk_pair *best, double d, size_t i, size_t j) {
    int64_t a = (int64_t)(i < j ? i : j), b = (int64_t)(i < j ? j : i);
    if (tsmi_mk_before(d, a, b, best))
        *best = (mk_pair){d, a, b};
}

/* True distance of subsequences i and j (both finite): sqrt(d2) with d2 from the dot
 * product (distance.h), always evaluated as (min, max) so that a pair gets the same
 * bits whether it comes from D or from the offset loop. O(m). */
TSMI_HOT static double mk_dist(const tsm_stats *s, size_t i, size_t j) {
    size_t a = i < j ? i : j, b = i < j ? j : i;
    return sqrt(tsm_d2(s, a, b, tsm_dot(s->t + a, s->t + b, s->m)));
}

double tsmi_mk_dist(const tsm_stats *s, size_t i, size_t j) {
    return mk_dist(s, i, j);
}

/* Safety margin added to bsf in every pruning test, in units of distance.
 *
 * Every distance here carries rounding error. We budget an absolute error of
 * delta = MK_D2_ROUND * m on squared distances (the correlation of the dot-product
 * formula is good to about eps sqrt(m) (|mu| / sigma)^2; 1e-8 m covers (|mu| / sigma)
 * up to ~10^3 and is ten times below the tests' TU_D2_TOL). Because
 * |sqrt(x) - sqrt(y)| <= sqrt(|x - y|), every computed distance, D entries included,
 * is then within e = sqrt(delta) of the exact one, however small it is (near-copies of
 * a reference have D ~ 0, where the error of a square root is largest). For a pair P
 * whose computed distance is at most bsf:
 *   LB~(P) <= |D(r,a) - D(r,b)| + 2e <= d(P) + 2e <= d~(P) + 3e <= bsf + 3e,
 * so a pair is examined while LB~ <= bsf + 3e. The pair that comes first in the order
 * (computed d, a, b) is then never pruned, the answer is the minimum over all pairs
 * of the computed distances, and exact ties (two constants, d = 0) resolve to the
 * smallest (a, b) whichever pair set bsf first. The bounds are evaluated on P, D's
 * float copy: the entries, their difference and the threshold are each rounded to
 * float, relative 2^-24 of values below 2 sqrt(m) (the largest distance), which the
 * second term covers. For m = 128 the margin is 3.4e-3, far below motif distances of
 * random walks (~1), so it costs next to nothing; a smaller one (say 0) could prune
 * the exactly tied pair with the smaller index when bsf was set by another. */
double tsmi_mk_margin(size_t m) {
    return 3.0 * sqrt(MK_D2_ROUND * (double)m) + 16.0 * 0x1p-24 * sqrt((double)m);
}

/* splitmix64: a small seeded generator for choosing the references. */
static uint64_t mk_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct {
    double d;
    size_t j;
} mk_key;

static int mk_key_cmp(const void *x, const void *y) {
    const mk_key *p = x, *q = y;
    if (p->d != q->d)
        return p->d < q->d ? -1 : 1;
    return (p->j > q->j) - (p->j < q->j);
}

/* Everything the searches need; P's rows are in SD order (row 0 = Z). */
typedef struct {
    const tsm_ctx *ctx; /* for its progress hook (tsm_ctx_set_progress) */
    const tsm_stats *s;
    size_t excl, R, N;
    double margin;
    size_t *ref;          /* I_Ref, in SD order: ref[0] = Z */
    size_t *row;          /* row of D of ref[r] */
    double *D;            /* R x N in drawing order; NAN for non-finite columns */
    const uint8_t *mask;  /* 1 = excluded from this search (masked by earlier pairs) */
    size_t Ne;            /* eligible subsequences in this search */
    size_t *I_S;          /* Ne positions sorted by (D(Z, j), j) */
    float *P;             /* R x Ne: P[r Ne + q] = D(ref[r], I_S[q]) for the bound sweeps */
    size_t *L, *L2;       /* live list of positions k in I_S, and its next version */
    mk_pair *chunk_best;  /* per chunk of L */
    size_t *chunk_live;   /* per chunk: entries kept in L2 */
    uint64_t *chunk_dist; /* per chunk: exact distances evaluated */
    size_t *chunk_reach;  /* per chunk: largest offset that passed the ordering bound */
    size_t part, parts;   /* this process's share of each batch's chunks (1 of 1 alone) */
    tsm_mk_sync_fn sync;  /* merges the parts after each batch (NULL alone) */
    void *user;
    int failed; /* sync failed */
} mk_search;

/* Pairs (I_S[k], I_S[k + o]) for a run k0 .. k0 + cnt - 1 of consecutive live positions
 * and the offsets o of the batch [o0, o1), against the chunk's best pair cb. For each
 * offset, as the seed orders it: LB over the references for every k of the run
 * (Algorithm 7; per reference one contiguous sweep of P at k and one at k + o, both in
 * L1 across the batch), the bitmap B of pairs whose LB is within bsf + margin
 * (Algorithm 8), and the exact distance of each surviving non-self-match (Algorithm 9)
 * against a bsf that tightens as it goes. LB starts from the ordering reference Z's
 * gap PZ[k + o] - PZ[k], which grows with o: once it exceeds bsf for every k of the run,
 * the rest of the batch is skipped. O(cnt R) per offset plus O(m) per survivor.
 * Writes the k that stay live (Z gap at o1 still within bsf) to keep[]; returns how
 * many. */
TSMI_HOT static size_t mk_tile(const mk_search *ms, size_t k0, size_t cnt, size_t o0, size_t o1,
                               mk_pair *cb, uint64_t *ndist, size_t *reach, size_t *keep) {
    const size_t Ne = ms->Ne, R = ms->R;
    const float *pz = ms->P + k0;
    float lb[MK_CHUNK];
    for (size_t o = o0; o < o1 && k0 + o < Ne; o++) {
        const size_t len = Ne - o - k0 < cnt ? Ne - o - k0 : cnt; /* k + o < Ne */
        const float thr = (float)(cb->d + ms->margin);
        size_t zlive = 0;
        for (size_t i = 0; i < len; i++) {
            float g = pz[i + o] - pz[i]; /* >= 0: I_S is sorted by D(Z, .) */
            lb[i] = g;
            zlive += g <= thr;
        }
        if (zlive == 0)
            break; /* and for every later offset: the gaps only grow */
        *reach = o > *reach ? o : *reach;
        for (size_t r = 1; r < R; r++) {
            const float *pr = ms->P + r * Ne + k0;
            for (size_t i = 0; i < len; i++) {
                float v = fabsf(pr[i + o] - pr[i]);
                lb[i] = v > lb[i] ? v : lb[i];
            }
        }
        for (size_t w = 0; w < len; w += 64) {
            const size_t wlen = len - w < 64 ? len - w : 64;
            uint64_t B = 0;
            for (size_t j = 0; j < wlen; j++)
                B |= (uint64_t)(lb[w + j] <= thr) << j;
            while (B) {
                const size_t i = w + (size_t)__builtin_ctzll(B);
                B &= B - 1;
                const size_t a = ms->I_S[k0 + i], b = ms->I_S[k0 + i + o];
                if (!tsm_non_self(a, b, ms->excl) || lb[i] > cb->d + ms->margin)
                    continue;
                (*ndist)++;
                mk_offer(cb, mk_dist(ms->s, a, b), a, b);
            }
        }
    }
    const float thr = (float)(cb->d + ms->margin);
    size_t nkeep = 0;
    for (size_t i = 0; i < cnt; i++)
        if (k0 + i + o1 < Ne && pz[i + o1] - pz[i] <= thr)
            keep[nkeep++] = k0 + i;
    return nkeep;
}

/* One search: the best pair among subsequences not masked, given D. Fills *best
 * (d = +INFINITY when no non-self-match pair exists). Work: O(R Ne) to set up, then
 * O(R) per pair that passes the ordering bound and O(m) per survivor. */
static void mk_search_run(mk_search *ms, const size_t *order, size_t nfinite, int threads,
                          mk_pair *best, uint64_t *ndist, uint64_t *noffsets) {
    const size_t R = ms->R, N = ms->N, excl = ms->excl;
    (void)threads; /* unused without OpenMP */
    *best = (mk_pair){INFINITY, -1, -1};
    *noffsets = 0;

    /* I_S: the linear order of the eligible subsequences. */
    size_t Ne = 0;
    for (size_t q = 0; q < nfinite; q++)
        if (!ms->mask[order[q]])
            ms->I_S[Ne++] = order[q];
    ms->Ne = Ne;
    if (Ne < 2)
        return;

    /* P: D's rows in SD order, columns permuted into the linear order, as floats. */
    float *P = ms->P;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t q = 0; q < Ne; q++)
        for (size_t r = 0; r < R; r++)
            P[r * Ne + q] = (float)ms->D[ms->row[r] * N + ms->I_S[q]];

    /* bsf from D: every (reference, eligible subsequence) non-self-match pair. */
    for (size_t r = 0; r < R; r++) {
        size_t ref = ms->ref[r];
        if (ms->mask[ref])
            continue;
        for (size_t q = 0; q < Ne; q++)
            if (tsm_non_self(ref, ms->I_S[q], excl))
                mk_offer(best, ms->D[ms->row[r] * N + ms->I_S[q]], ref, ms->I_S[q]);
    }
    if (isinf(best->d)) {
        /* No reference pair: if any pair exists, the outermost one does. */
        size_t lo, hi;
        if (!tsmi_mk_outer_pair(ms->s, ms->mask, excl, &lo, &hi))
            return;
        mk_offer(best, mk_dist(ms->s, lo, hi), lo, hi);
        (*ndist)++;
    }

    /* The offset loop. */
    size_t nL = Ne - 1, reach = 0;
    for (size_t k = 0; k < nL; k++)
        ms->L[k] = k;
    size_t o0 = 1, width = 1;
    while (nL > 0) {
        size_t o1 = o0 + width, nch = (nL + MK_CHUNK - 1) / MK_CHUNK;
        const mk_pair start = *best;
        /* This part's chunks: a contiguous range, so that the parts' kept positions
         * concatenated in part order are in chunk order. */
        const size_t c_lo = nch * ms->part / ms->parts, c_hi = nch * (ms->part + 1) / ms->parts;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (size_t c = c_lo; c < c_hi; c++) {
            mk_pair cb = start;
            uint64_t nd = 0;
            size_t lo = c * MK_CHUNK, hi = lo + MK_CHUNK < nL ? lo + MK_CHUNK : nL, w = lo;
            size_t rc = 0;
            for (size_t i = lo, run; i < hi; i += run) {
                for (run = 1; i + run < hi && ms->L[i + run] == ms->L[i] + run;)
                    run++;
                w += mk_tile(ms, ms->L[i], run, o0, o1, &cb, &nd, &rc, ms->L2 + w);
            }
            ms->chunk_best[c] = cb;
            ms->chunk_live[c] = w - lo;
            ms->chunk_dist[c] = nd;
            ms->chunk_reach[c] = rc;
        }
        size_t w = 0;
        for (size_t c = c_lo; c < c_hi; c++) {
            const mk_pair *cb = &ms->chunk_best[c];
            if (tsmi_mk_before(cb->d, cb->a, cb->b, best))
                *best = *cb;
            *ndist += ms->chunk_dist[c];
            reach = ms->chunk_reach[c] > reach ? ms->chunk_reach[c] : reach;
            memmove(ms->L + w, ms->L2 + c * MK_CHUNK, ms->chunk_live[c] * sizeof *ms->L);
            w += ms->chunk_live[c];
        }
        nL = w;
        if (ms->sync) {
            tsm_motif b = {best->a, best->b, best->d};
            if (ms->sync(ms->user, &b, ms->L, &nL, Ne) != 0) {
                ms->failed = 1;
                return;
            }
            *best = (mk_pair){b.distance, b.a, b.b};
        }
        /* Progress: the share of positions k retired (their pairs all bounded out). */
        tsmi_progress(ms->ctx, "search", (Ne - 1) - nL, Ne - 1);
        o0 = o1;
        width = width * 2 < MK_BATCH_MAX ? width * 2 : MK_BATCH_MAX;
    }
    /* The offset that ended the search: one past the last that passed the bound. */
    *noffsets = reach + 1 < Ne - 1 ? reach + 1 : Ne - 1;
}

/* D and SD (seed 000 Algorithms 4 and 5) for the references finite[0 .. R-1] (drawing
 * order), shared by the k searches: D keeps the drawing order, and ms->ref / ms->row
 * list the references by decreasing SD (tsmi_mk_order_refs), so that ref[0] is the
 * ordering reference Z. O(R N m) for D. */
static void mk_references(mk_search *ms, const size_t *finite, size_t nfinite, int threads,
                          double *sd) {
    const tsm_stats *s = ms->s;
    const size_t R = ms->R, N = ms->N;
    (void)threads; /* unused without OpenMP */
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t j = 0; j < N; j++)
        for (size_t r = 0; r < R; r++) {
            size_t ref = finite[r];
            double d = NAN;
            if (j == ref)
                d = 0.0; /* exact: the formula would leave rounding noise */
            else if (s->kind[j] != TSM_SUB_NONFINITE)
                d = mk_dist(s, ref, j);
            ms->D[r * N + j] = d;
        }

    /* SD of each row over the finite columns (two passes). */
    for (size_t r = 0; r < R; r++) {
        const double *row = ms->D + r * N;
        double sum = 0.0, acc = 0.0;
        for (size_t j = 0; j < N; j++)
            if (s->kind[j] != TSM_SUB_NONFINITE)
                sum += row[j];
        double mean = sum / (double)nfinite;
        for (size_t j = 0; j < N; j++)
            if (s->kind[j] != TSM_SUB_NONFINITE)
                acc += (row[j] - mean) * (row[j] - mean);
        sd[r] = sqrt(acc / (double)nfinite);
    }
    tsmi_mk_order_refs(sd, R, ms->row);
    for (size_t r = 0; r < R; r++)
        ms->ref[r] = finite[ms->row[r]];
}

static void mk_search_free(mk_search *ms) {
    free(ms->ref);
    free(ms->row);
    free(ms->D);
    free(ms->I_S);
    free(ms->P);
    free(ms->L);
    free(ms->L2);
    free(ms->chunk_best);
    free(ms->chunk_live);
    free(ms->chunk_dist);
    free(ms->chunk_reach);
}

/* ---- host logic shared with the CUDA backend (mk.h, internal section) ---------------- */

tsm_status tsmi_mk_draw_refs(tsm_ctx *ctx, const tsm_stats *s, size_t refs, uint64_t seed,
                             size_t **finite_out, size_t *nfinite_out, size_t *R_out) {
    const size_t N = s->N;
    size_t *finite = malloc(N * sizeof *finite), nfinite = 0, R = 0;
    *finite_out = finite;
    *nfinite_out = 0;
    *R_out = 0;
    if (!finite)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for MK motif search over %zu subsequences",
                        N);
    for (size_t j = 0; j < N; j++)
        if (s->kind[j] != TSM_SUB_NONFINITE)
            finite[nfinite++] = j;
    if (nfinite >= 2) {
        R = refs ? refs : TSM_MK_REFS_DEFAULT;
        R = R < nfinite ? R : nfinite;
        uint64_t state = seed;
        for (size_t r = 0; r < R; r++) {
            size_t pick = r + (size_t)(mk_rand(&state) % (uint64_t)(nfinite - r));
            size_t tmp = finite[r];
            finite[r] = finite[pick];
            finite[pick] = tmp;
        }
    }
    *nfinite_out = nfinite;
    *R_out = R;
    return TSM_OK;
}

void tsmi_mk_order_refs(const double *sd, size_t R, size_t *row) {
    /* Insertion sort of the R rows by decreasing SD, stable. */
    for (size_t r = 0; r < R; r++) {
        size_t p = r;
        while (p > 0 && sd[row[p - 1]] < sd[r]) {
            row[p] = row[p - 1];
            p--;
        }
        row[p] = r;
    }
}

int tsmi_mk_outer_pair(const tsm_stats *s, const uint8_t *mask, size_t excl, size_t *lo,
                       size_t *hi) {
    const size_t N = s->N;
    size_t a = 0, b = N;
    while (a < N && (mask[a] || s->kind[a] == TSM_SUB_NONFINITE))
        a++;
    while (b > a && (mask[b - 1] || s->kind[b - 1] == TSM_SUB_NONFINITE))
        b--;
    if (b <= a || b - 1 - a < excl)
        return 0;
    *lo = a;
    *hi = b - 1;
    return 1;
}

tsm_status tsmi_mk_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                        tsmi_mk_search_fn search, tsmi_mk_mask_fn masked, void *state,
                        tsm_motif *out, size_t *count, uint64_t *ndist, uint64_t *noffsets) {
    const size_t N = s->N;
    uint8_t *mask = calloc(N, 1);
    tsm_status st = TSM_OK;
    size_t found = 0;
    if (!mask)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for MK motif search over %zu subsequences",
                        N);
    /* Greedily: mask everything within excl of a chosen pair's members. */
    while (found < k) {
        mk_pair best;
        st = search(state, mask, &best, ndist, noffsets);
        if (st != TSM_OK || isinf(best.d))
            break;
        out[found++] = (tsm_motif){best.a, best.b, best.d};
        const int64_t member[2] = {best.a, best.b};
        for (int e = 0; e < 2 && st == TSM_OK; e++) {
            size_t x = (size_t)member[e], lo = x + 1 > excl ? x + 1 - excl : 0;
            size_t hi = x + excl < N ? x + excl : N;
            memset(mask + lo, 1, hi - lo);
            if (masked)
                st = masked(state, lo, hi);
        }
        if (st != TSM_OK)
            break;
    }
    free(mask);
    *count = st == TSM_OK ? found : 0;
    return st;
}

/* ---- the CPU backend ------------------------------------------------------------------ */

/* State of the CPU searches for tsmi_mk_topk. */
typedef struct {
    mk_search *ms;
    const size_t *order;
    size_t nfinite;
    int threads;
} mk_cpu;

static tsm_status mk_cpu_search(void *state, const uint8_t *mask, mk_pair *best, uint64_t *ndist,
                                uint64_t *noffsets) {
    mk_cpu *c = state;
    c->ms->mask = mask;
    mk_search_run(c->ms, c->order, c->nfinite, c->threads, best, ndist, noffsets);
    return c->ms->failed ? TSM_EINTERNAL : TSM_OK;
}

tsm_status tsm_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                         uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters) {
    return tsm_mk_motifs_part(ctx, s, excl, k, refs, seed, 0, 1, NULL, NULL, out, count, counters);
}

tsm_status tsm_mk_motifs_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                              uint64_t seed, size_t part, size_t parts, tsm_mk_sync_fn sync,
                              void *user, tsm_motif *out, size_t *count, tsm_mk_stats *counters) {
    if (counters)
        *counters = (tsm_mk_stats){0, 0, 0};
    if (count)
        *count = 0;
    if (!s || !out || !count)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_mk_motifs: stats, out and count must not be NULL");
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    if (k < 1)
        return tsm_fail(ctx, TSM_EINVAL, "number of motifs k = %zu must be at least 1", k);
    if (parts == 0 || part >= parts || (parts > 1 && !sync))
        return tsm_fail(ctx, TSM_EINVAL, "MK: part %zu of %zu (with an exchange when several)",
                        part, parts);
    if (parts > 1 && tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsm_fail(ctx, TSM_EBACKEND, "MK in parts runs on the CPU backend only");
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_mk_motifs_cuda(ctx, s, excl, k, refs, seed, out, count, counters);
#endif

    const size_t N = s->N;
    const int threads = tsm_ctx_threads(ctx);
    mk_search ms = {.ctx = ctx,
                    .s = s,
                    .excl = excl,
                    .N = N,
                    .margin = tsmi_mk_margin(s->m),
                    .part = part,
                    .parts = parts,
                    .sync = parts > 1 ? sync : NULL,
                    .user = user};
    size_t *finite = NULL, nfinite = 0;
    size_t *order = NULL;
    mk_key *keys = NULL;
    double *sd = NULL;
    st = tsmi_mk_draw_refs(ctx, s, refs, seed, &finite, &nfinite, &ms.R);
    if (st != TSM_OK || nfinite < 2)
        goto done; /* out of memory, or no pair at all */

    if (ms.R > SIZE_MAX / sizeof(double) / N)
        goto nomem;
    size_t nch = (N + MK_CHUNK - 1) / MK_CHUNK;
    order = malloc(N * sizeof *order);
    ms.ref = malloc(ms.R * sizeof *ms.ref);
    ms.row = malloc(ms.R * sizeof *ms.row);
    ms.D = malloc(ms.R * N * sizeof *ms.D);
    ms.P = malloc(ms.R * N * sizeof *ms.P);
    ms.I_S = malloc(N * sizeof *ms.I_S);
    ms.L = malloc(N * sizeof *ms.L);
    ms.L2 = malloc(N * sizeof *ms.L2);
    ms.chunk_best = malloc(nch * sizeof *ms.chunk_best);
    ms.chunk_live = malloc(nch * sizeof *ms.chunk_live);
    ms.chunk_dist = malloc(nch * sizeof *ms.chunk_dist);
    ms.chunk_reach = malloc(nch * sizeof *ms.chunk_reach);
    sd = malloc(ms.R * sizeof *sd);
    keys = malloc(nfinite * sizeof *keys);
    if (!order || !ms.ref || !ms.row || !ms.D || !ms.P || !ms.I_S || !ms.L || !ms.L2 ||
        !ms.chunk_best || !ms.chunk_live || !ms.chunk_dist || !ms.chunk_reach || !sd || !keys)
        goto nomem;

    mk_references(&ms, finite, nfinite, threads, sd);
    uint64_t ndist = (uint64_t)ms.R * nfinite, noffsets = 0;

    /* The linear order of all finite subsequences, by (D(Z, j), j); each search keeps
     * the unmasked ones in this order. */
    for (size_t q = 0, p = 0; q < N; q++)
        if (s->kind[q] != TSM_SUB_NONFINITE)
            keys[p++] = (mk_key){ms.D[ms.row[0] * N + q], q};
    qsort(keys, nfinite, sizeof *keys, mk_key_cmp);
    for (size_t q = 0; q < nfinite; q++)
        order[q] = keys[q].j;

    mk_cpu cpu = {&ms, order, nfinite, threads};
    st = tsmi_mk_topk(ctx, s, excl, k, mk_cpu_search, NULL, &cpu, out, count, &ndist, &noffsets);
    if (st == TSM_OK && counters)
        *counters = (tsm_mk_stats){ndist, noffsets, ms.R};
    goto done;

nomem:
    st = tsm_fail(ctx, TSM_ENOMEM, "out of memory for MK motif search over %zu subsequences", N);
done:
    mk_search_free(&ms);
    free(finite);
    free(order);
    free(keys);
    free(sd);
    return st;
}
