/* SPDX-License-Identifier: Apache-2.0 */
/* motif_scan.c - top-k motifs by the profile's traversal (mk.h, tsm_motifs_scan): the
 * greedy top-k driver of MK (tsmi_mk_topk) with a search that scans every pair.
 *
 * One search: the best pair of normal subsequences by correlation over this part's
 * bands (tsm_mp_best_pair, on the ctx's backend), merged over the parts by sync; its
 * distance evaluated exactly as MK does (tsmi_mk_dist); then the pairs that involve
 * constants, which the scan leaves out: two constants are at distance 0 and a
 * constant and a normal subsequence at sqrt(m) (DESIGN 3), so of each kind only the
 * first pair in (a, b) order can win, found in O(N) from "next position of this kind"
 * arrays. The best of the three in MK's order (tsmi_mk_before) is the motif. */
#include "mk.h"

#include <math.h>
#include <stdlib.h>

/* What a search needs besides the mask. */
typedef struct {
    tsm_ctx *ctx;
    const tsm_stats *s;
    size_t excl, b0, b1; /* this part's bands */
    uint64_t pairs;      /* pairs on them */
    tsm_scan_sync_fn sync;
    void *user;
    int64_t *next; /* scratch: next unmasked constant (0..N), next unmasked normal (N+1..) */
} scan_state;

/* next[p] = the smallest q >= p not masked with kind k, N when none; p <= N. O(N). */
static void next_unmasked(const tsm_stats *s, const uint8_t *mask, int k, int64_t *next) {
    const size_t N = s->N;
    next[N] = (int64_t)N;
    for (size_t q = N; q-- > 0;)
        next[q] = s->kind[q] == k && !mask[q] ? (int64_t)q : next[q + 1];
}

/* The first pair (a, b) in (a, b) order, b - a >= excl, with a of kind ka and b of kind
 * kb (per their next arrays), or 0 when none. Tries a = every unmasked subsequence of
 * kind ka in order: the first that has a partner is the answer. O(N). */
static int first_pair(size_t N, size_t excl, const int64_t *next_a, const int64_t *next_b,
                      int64_t *a, int64_t *b) {
    for (int64_t x = next_a[0]; x < (int64_t)N; x = next_a[x + 1]) {
        if ((size_t)x + excl >= N)
            return 0;
        const int64_t y = next_b[(size_t)x + excl];
        if (y < (int64_t)N) {
            *a = x, *b = y;
            return 1;
        }
    }
    return 0;
}

/* Offers pair (a, b) (either order) to *best with MK's exact distance. */
static void offer(const tsm_stats *s, int64_t a, int64_t b, tsmi_mk_pair *best) {
    const int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    const double d = tsmi_mk_dist(s, (size_t)lo, (size_t)hi);
    if (tsmi_mk_before(d, lo, hi, best))
        *best = (tsmi_mk_pair){d, lo, hi};
}

/* tsmi_mk_search_fn of the scan path. */
static tsm_status scan_search(void *state, const uint8_t *mask, tsmi_mk_pair *best, uint64_t *ndist,
                              uint64_t *noffsets) {
    scan_state *c = state;
    const tsm_stats *s = c->s;
    const size_t N = s->N;
    tsm_mp_pair p;
    tsm_status st = tsm_mp_best_pair(c->ctx, s, c->excl, mask, c->b0, c->b1, &p);
    if (st != TSM_OK)
        return st;
    if (c->sync && c->sync(c->user, &p))
        return tsm_fail(c->ctx, TSM_EINTERNAL, "motif scan: the exchange between parts failed");
    *ndist += c->pairs;
    *noffsets = 0;
    *best = (tsmi_mk_pair){INFINITY, -1, -1};
    if (p.a >= 0)
        offer(s, p.a, p.b, best);
    if (c->next) { /* the series has constants */
        int64_t *nc = c->next, *nn = c->next + N + 1, a, b;
        next_unmasked(s, mask, TSM_SUB_CONSTANT, nc);
        next_unmasked(s, mask, TSM_SUB_NORMAL, nn);
        if (first_pair(N, c->excl, nc, nc, &a, &b))
            offer(s, a, b, best);
        if (first_pair(N, c->excl, nc, nn, &a, &b))
            offer(s, a, b, best);
        if (first_pair(N, c->excl, nn, nc, &a, &b))
            offer(s, a, b, best);
    }
    return TSM_OK;
}

tsm_status tsm_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, tsm_motif *out,
                           size_t *count, tsm_mk_stats *counters) {
    return tsm_motifs_scan_part(ctx, s, excl, k, 0, 1, NULL, NULL, out, count, counters);
}

tsm_status tsm_motifs_scan_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                size_t part, size_t parts, tsm_scan_sync_fn sync, void *user,
                                tsm_motif *out, size_t *count, tsm_mk_stats *counters) {
    if (!s || !out || !count)
        return tsm_fail(ctx, TSM_EINVAL, "motif scan: missing statistics or output");
    if (parts == 0 || part >= parts || (parts > 1 && !sync))
        return tsm_fail(ctx, TSM_EINVAL,
                        "motif scan: part %zu of %zu (with an exchange when several)", part, parts);
    *count = 0;
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    if (k < 1)
        return tsm_fail(ctx, TSM_EINVAL, "number of motifs k = %zu must be at least 1", k);
    scan_state c = {ctx, s, excl, 0, 0, 0, parts > 1 ? sync : NULL, user, NULL};
    tsm_mp_split(ctx, s->N, excl, part, parts, &c.b0, &c.b1);
    for (size_t b = c.b0; b < c.b1; b++)
        c.pairs += tsm_mp_band_pairs(ctx, s->N, excl, b);
    if (s->n_constant > 0 && !(c.next = malloc(2 * (s->N + 1) * sizeof *c.next)))
        return tsm_fail(ctx, TSM_ENOMEM, "motif scan: out of memory for %zu subsequences", s->N);
    uint64_t ndist = 0, noffsets = 0;
    st = tsmi_mk_topk(ctx, s, excl, k, scan_search, NULL, &c, out, count, &ndist, &noffsets);
    if (counters)
        *counters = (tsm_mk_stats){ndist, 0, 0};
    free(c.next);
    return st;
}

int tsm_motifs_near_exact(const tsm_stats *s, const tsm_motif *m, size_t count) {
    const double cut = 2.0 * (double)s->m * TSM_MOTIF_NEAR_EXACT; /* on d^2 */
    for (size_t q = 0; q < count; q++)
        if (m[q].distance * m[q].distance <= cut)
            return 1;
    return 0;
}

int tsm_motifs_auto_mk(const tsm_stats *s) {
    return s->n_constant >= 2;
}

tsm_status tsm_motifs_auto(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                           uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                           int *by_mk) {
    if (by_mk)
        *by_mk = 0;
    if (!tsm_motifs_auto_mk(s)) {
        tsm_status st = tsm_motifs_scan(ctx, s, excl, k, out, count, counters);
        if (st != TSM_OK || !tsm_motifs_near_exact(s, out, *count))
            return st;
    }
    if (by_mk)
        *by_mk = 1;
    return tsm_mk_motifs(ctx, s, excl, k, refs, seed, out, count, counters);
}
