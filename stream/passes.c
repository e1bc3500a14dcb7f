/* SPDX-License-Identifier: Apache-2.0 */
/* passes.c - PD3 (DISCORD) and MK (MOTIF) over the windows of the due streams,
 * batched (DESIGN 5.3).
 *
 * The windows are read in place in the arena (one contiguous array each, thanks to
 * the mirrored ring) by tsm_window_passes (kernels/window.h), whose per-window results
 * equal tsm_pd3_range and tsm_mk_motifs (k = 1, but for ties to rounding) on that window: on a CUDA
 * arena all windows of a group in a few launches, on the CPU the windows in parallel. Window index
 * k is absolute sequence number w0 + k.
 *
 * DISCORD: a pass asks PD3 for the range discords at r = the smallest two-sided
 * distance whose score (FAR side, against a copy of the stream's score history taken
 * when the pass starts) reaches the threshold, or at the configured range; keeps those
 * whose score does, best first (distance, then the smaller start). The join, on the
 * engine's thread, then publishes them greedily: each one that overlaps neither a
 * discord chosen before it nor anything the stream published (closed events, earlier
 * DISCORDs) nor its open event; so every DISCORD is published once, never one per
 * start position, and a discord inside an event refines that event (it is the same
 * episode) rather than raising a second alarm. MOTIF: when the window's top pair
 * shares no member (within excl) with a pair the stream published before (pruned to
 * the window), decided at the join too. */
#include "passes.h"

#include "stream.h"
#include "util.h"
#include "window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One due stream's pass: its window and its results. */
typedef struct {
    tss_stream *s;
    int motif; /* MK is asked for */
    tsm_window w;
    tsm_window_result res;
    uint64_t w0;   /* absolute sequence number of the window's first sample */
    size_t off;    /* its discords in the group's list */
    tss_calib cal; /* the stream's score history when the pass started */
    double secs;
    int failed; /* its group's call failed */
} item;

/* The group key: streams of one tsm_window_passes call share it. */
static int by_key(const void *x, const void *y) {
    const item *a = x, *b = y;
    if (a->s->p.subsequence != b->s->p.subsequence)
        return a->s->p.subsequence < b->s->p.subsequence ? -1 : 1;
    if (a->s->p.excl != b->s->p.excl)
        return a->s->p.excl < b->s->p.excl ? -1 : 1;
    if (a->motif != b->motif)
        return a->motif < b->motif ? -1 : 1;
    return (a->s->index > b->s->index) - (a->s->index < b->s->index);
}

static int same_key(const item *a, const item *b) {
    return a->s->p.subsequence == b->s->p.subsequence && a->s->p.excl == b->s->p.excl &&
           a->motif == b->motif;
}

/* Keeps the worse of two statuses (TSM_EDEVICE is the worst: it stops the engine). */
static tsm_status worse(tsm_status a, tsm_status b) {
    if (a == TSM_EDEVICE || b == TSM_OK)
        return a;
    return b;
}

/* Sorts it[0..n) into groups and runs one tsm_window_passes per group; *disc receives
 * the discord lists (caller frees; it[k].off indexes it). Each window's share of its
 * group's wall time goes to it[k].secs. A failed group marks its streams failed
 * and leaves their results empty. Returns the worst status. */
static tsm_status run_groups(tsm_ctx *ctx, item *it, size_t n, tsm_discord **disc) {
    qsort(it, n, sizeof *it, by_key);
    size_t total = 0;
    for (size_t k = 0; k < n; k++)
        it[k].off = total, total += it[k].w.n - it[k].s->p.subsequence + 1;
    tsm_window *w = malloc((n ? n : 1) * sizeof *w);
    tsm_window_result *res = malloc((n ? n : 1) * sizeof *res);
    *disc = malloc((total ? total : 1) * sizeof **disc);
    tsm_status worst = TSM_OK;
    if (!w || !res || !*disc) {
        worst = tsm_fail(ctx, TSM_ENOMEM, "out of memory for the passes of %zu windows", n);
        for (size_t k = 0; k < n; k++) {
            it[k].failed = 1;
            tss_stream_pass_fail(it[k].s, "window passes", "out of memory");
        }
        n = 0;
    }
    for (size_t k = 0; k < n; k++)
        w[k] = it[k].w;
    for (size_t g = 0, e; g < n; g = e) {
        for (e = g + 1; e < n && same_key(&it[g], &it[e]);)
            e++;
        const tss_params *p = &it[g].s->p;
        double t0 = tssi_now();
        tsm_status st = tsm_window_passes(ctx, w + g, e - g, p->subsequence, p->excl, it[g].motif,
                                          *disc + it[g].off, res + g);
        double share = (tssi_now() - t0) / (double)(e - g);
        for (size_t k = g; k < e; k++) {
            it[k].secs += share;
            it[k].res = st == TSM_OK ? res[k] : (tsm_window_result){0};
            it[k].failed = st != TSM_OK;
            if (st != TSM_OK)
                tss_stream_pass_fail(it[k].s, "window passes", tsm_ctx_error(ctx));
        }
        worst = worse(worst, st);
    }
    free(w);
    free(res);
    return worst;
}

/* Best first: the larger distance, then the smaller start. */
static int by_distance(const void *x, const void *y) {
    const tss_discord_cand *a = x, *b = y;
    if (a->distance != b->distance)
        return a->distance > b->distance ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* The two-sided candidates (non-self-matches) of subsequence i of the pass's window. */
static uint64_t candidates(const item *it, uint64_t i) {
    const uint64_t m = it->s->p.subsequence, excl = it->s->p.excl;
    const uint64_t subs = it->w.n >= m ? it->w.n - m + 1 : 0;
    return (i + 1 > excl ? i + 1 - excl : 0) + (subs > i + excl ? subs - i - excl : 0);
}

/* The range discords of the pass (found, by index) whose score reaches the threshold
 * (or, with a configured range, all of them), into s->cand best first. O(nfound log). */
static void discords(item *it, const tsm_discord *found, size_t nfound) {
    tss_stream *s = it->s;
    s->ncand = 0;
    if (nfound > s->capcand) {
        tss_discord_cand *c = realloc(s->cand, nfound * sizeof *c);
        if (!c) {
            tss_stream_pass_fail(s, "PD3 pass", "out of memory");
            return;
        }
        s->cand = c, s->capcand = nfound;
    }
    const uint64_t full = tss_detect_candidates(s, s->p.window);
    for (size_t k = 0; k < nfound; k++) {
        const double v = tss_calib_comparable(&it->cal, found[k].distance,
                                              candidates(it, (uint64_t)found[k].index), full);
        tss_score sc = tss_calib_score_far(&it->cal, v);
        if (isnan(s->p.range) && sc.score < s->p.threshold)
            continue; /* r is the edge of a bin: a few below it may come */
        s->cand[s->ncand++] = (tss_discord_cand){
            .start = it->w0 + (uint64_t)found[k].index,
            .neighbor = it->w0 + (uint64_t)found[k].neighbor,
            .distance = found[k].distance,
            .score = sc.score,
        };
    }
    if (s->ncand > 1) /* cand is NULL while none was ever found: qsort(NULL, 0) is UB */
        qsort(s->cand, s->ncand, sizeof *s->cand, by_distance);
}

/* MOTIF when the window's top pair (absolute starts) shares no member with a pair the
 * stream published before (at the join: the published pairs are the engine thread's). */
static void motif(tss_stream *s, const tsm_window_result *res, uint64_t w0, uint64_t last) {
    uint64_t a = w0 + (uint64_t)res->motif.a, b = w0 + (uint64_t)res->motif.b;
    if (!res->has_motif || tss_detect_motif_seen(&s->det, a, b, s->p.excl) ||
        tss_detect_motif_add(&s->det, a, b) != 0)
        return;
    tss_alert al = {
        .kind = TSS_ALERT_MOTIF,
        .start_seq = a,
        .start_timestamp_ns = tss_stream_ts(s, a),
        .length = s->p.subsequence,
        .distance = res->motif.distance,
        .neighbor_seq = b,
        .score = NAN,
        .detected_seq = last,
    };
    tss_alert_push(&s->pass_out, &al);
}

/* The results of one stream's pass (the stream did not fail this pass). */
static void finish(item *it, const tsm_discord *disc) {
    tss_stream *s = it->s;
    double t0 = tssi_now();
    if (!isinf(it->w.r)) {
        s->passes_discord++;
        discords(it, disc + it->off, it->res.ndiscords);
    }
    double t1 = tssi_now();
    if (it->motif) { /* its MOTIF is decided at the join (publish) */
        s->passes_motif++;
        s->sec_motif += it->secs;
    } else {
        s->sec_discord += it->secs;
    }
    s->sec_discord += t1 - t0;
}

/* The window of s in the arena as a pass input; 0, or -1 (s failed) when the arena's
 * copy is not current (a failed round left it stale). */
static int window_of(const tss_arena *a, tss_stream *s, double r, tsm_window *w) {
    if (!s->on.placed || s->on.stale) {
        tss_stream_pass_fail(s, "passes", "the window is not in the arena after a failed round");
        return -1;
    }
    *w = (tsm_window){.x = tss_online_window(&s->on, a, &s->ring), .n = s->ring.fill, .r = r};
    return 0;
}

/* The range of s's pass: the smallest raw distance whose comparable value reaches the
 * FAR edge of the score history for the subsequence of the window with the most
 * candidates (the first: n - m + 1 - excl; the scaling only lowers a value, and less
 * with more candidates). Rounded down a little: discords() checks each score. */
static double pass_range(const tss_stream *s) {
    const double far = tss_calib_far_raw(&s->det.cal);
    const uint64_t most = tss_detect_candidates(s, s->ring.fill); /* also n - m + 1 - excl */
    const double f = tss_calib_shrink(&s->det.cal, most, tss_detect_candidates(s, s->p.window));
    return isinf(far) ? far : far / f * (1.0 - 1e-9);
}

struct tss_passes {
    item *it;
    size_t ni;
    tsm_status st; /* of tss_passes_execute */
};

tsm_status tss_passes_start(tsm_ctx *ctx, const tss_arena *a, tss_stream **list, size_t n,
                            tss_passes **out) {
    *out = NULL;
    for (size_t k = 0; k < n; k++)
        list[k]->since_pass = 0;
    tss_passes *p = calloc(1, sizeof *p);
    item *it = calloc(n ? n : 1, sizeof *it);
    if (!p || !it) {
        free(p);
        free(it);
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu passes", n);
    }
    size_t ni = 0;
    for (size_t k = 0; k < n; k++) {
        tss_stream *s = list[k];
        s->ncand = 0;
        const double r = isnan(s->p.range) ? pass_range(s) : s->p.range;
        if ((isinf(r) && !s->p.motif) || window_of(a, s, r, &it[ni].w) != 0)
            continue; /* nothing to run (no score history yet, no motif), or failed */
        it[ni].s = s;
        it[ni].w0 = tss_stream_window_seq(s);
        it[ni].cal = s->det.cal;
        it[ni++].motif = s->p.motif;
    }
    p->it = it;
    p->ni = ni;
    *out = p;
    return TSM_OK;
}

void tss_passes_execute(tss_passes *p, tsm_ctx *ctx, int nworkers) {
    item *it = p->it;
    tsm_discord *disc = NULL;
    const size_t ni = p->ni;
    if (ni)
        p->st = run_groups(ctx, it, ni, &disc);
    const int threads = ni < 2 || nworkers < 2 ? 1 : nworkers;
    (void)threads; /* a build without OpenMP ignores the pragma */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
    for (size_t k = 0; k < ni; k++)
        if (!it[k].failed)
            finish(&it[k], disc);
    free(disc);
}

/* Publishes the pass's discords of s greedily (see the top of this file); w0, last:
 * the first and last samples of its window. With overlap_passes the stream may have
 * taken more samples since its pass point, but what it published since cannot overlap
 * a discord of that window: an event that opened since starts after `last`, and one
 * that closed since was open (from its first start on) at the pass point. So the
 * verdicts do not depend on when the join comes, as long as nothing that ends inside
 * the pass's window was pruned: prune to w0. */
static void publish(tss_stream *s, const item *it, uint64_t w0, uint64_t last) {
    tss_detect_prune(&s->det, w0, s->p.excl);
    const uint32_t m = s->p.subsequence;
    for (size_t k = 0; k < s->ncand; k++) {
        const tss_discord_cand *c = &s->cand[k];
        if (tss_detect_overlaps(&s->det, c->start, c->start + m) ||
            tss_detect_publish(&s->det, c->start, c->start + m) != 0)
            continue;
        tss_alert a = {
            .kind = TSS_ALERT_DISCORD,
            .start_seq = c->start,
            .start_timestamp_ns = tss_stream_ts(s, c->start),
            .length = m,
            .distance = c->distance,
            .neighbor_seq = c->neighbor,
            .threshold = isnan(s->p.range) ? s->p.threshold : s->p.range,
            .score = c->score,
            .detected_seq = last,
            .tail = TSS_TAIL_FAR,
            /* a two-sided pass of the shape view alone */
            .view = TSS_VIEW_SHAPE,
            .shape_score = c->score,
            .magnitude_score = NAN,
            .level_score = NAN,
            .magnitude = NAN,
            .level = NAN,
        };
        tss_alert_push(&s->pass_out, &a);
    }
    s->ncand = 0;
    if (it->motif)
        motif(s, &it->res, w0, last);
}

tsm_status tss_passes_end(tss_passes **p_p, tss_stream **list, size_t n) {
    tss_passes *p = *p_p;
    tsm_status st = p ? p->st : TSM_OK;
    for (size_t k = 0; p && k < p->ni; k++)
        if (!p->it[k].failed)
            publish(p->it[k].s, &p->it[k], p->it[k].w0, p->it[k].w0 + p->it[k].w.n - 1);
    for (size_t k = 0; k < n; k++) {
        tss_stream *s = list[k];
        tss_alert_buf *b = &s->pass_out;
        for (size_t q = 0; q < b->n; q++)
            if (!b->item[q].start_timestamp_ns)
                b->item[q].start_timestamp_ns = tss_stream_ts(s, b->item[q].start_seq);
        if (s->pass_fail[0] && !s->fail[0])
            snprintf(s->fail, sizeof s->fail, "%s", s->pass_fail);
        s->pass_fail[0] = '\0';
    }
    if (p)
        free(p->it);
    free(p);
    *p_p = NULL;
    return st;
}
