/* passes.c - calibration, PD3 and MK over the windows of the due streams, batched.
 *
 * The windows are read in place in the arena (one contiguous array each, thanks to
 * the mirrored ring) by tsm_window_passes (kernels/window.h), whose per-window results
 * equal tsm_pd3_range and tsm_mk_motifs on that window: on a CUDA arena all windows of
 * a group in a few launches, on the CPU the windows in parallel. Window index k is
 * absolute sequence number w0 + k. De-duplication (multiset difference against the
 * starts already alerted) and the motif change test stay on the host.
 *
 * Calibration (r = auto) needs the largest nn of the window, the top-1 discord's
 * distance: the streams that calibrate in this round first go through a pass with
 * r = 0, which reports every subsequence with a defined nn, and take the largest;
 * then they join the regular pass with their new r (so its discords are exactly those
 * of tsm_pd3_range for that r). Both run in tss_passes_execute, off the engine's
 * thread (the engine holds a calibrating stream until its passes are joined, as its
 * r is written there). Calibration happens once per stream, so the extra pass (and
 * its N results per window) is rare. */
#include "passes.h"

#include "omp_team.h"
#include "stream.h"
#include "util.h"
#include "window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One due stream's pass: its window and its results. */
typedef struct {
    tss_stream *s;
    int motif;     /* MK is asked for */
    int calibrate; /* r = auto, not calibrated yet: a calibration pass first */
    tsm_window w;
    tsm_window_result res;
    uint64_t w0; /* absolute sequence number of the window's first sample */
    size_t off;  /* its discords in the group's list */
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
 * (`what`) and leaves their results empty. Returns the worst status. */
static tsm_status run_groups(tsm_ctx *ctx, item *it, size_t n, const char *what,
                             tsm_discord **disc) {
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
            tss_stream_pass_fail(it[k].s, what, "out of memory");
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
                tss_stream_pass_fail(it[k].s, what, tsm_ctx_error(ctx));
        }
        worst = worse(worst, st);
    }
    free(w);
    free(res);
    return worst;
}

/* r = auto from a pass with r = 0: r = largest nn of the window (the top-1 discord)
 * * (1 + margin). A window whose largest nn is 0 (all alike, e.g. constant) gives no
 * usable r: the stream stays uncalibrated and tries again at its next pass. */
static void calibrate(tss_stream *s, const tsm_discord *d, size_t count) {
    double top = 0.0;
    for (size_t k = 0; k < count; k++)
        top = d[k].distance > top ? d[k].distance : top;
    if (top > 0.0 && isfinite(top)) {
        s->cal_nn = top;
        s->r = top * (1.0 + s->p.range_margin);
        s->calibrated = 1;
    }
}

/* DISCORD for every range discord of the pass (found, ordered by index) whose
 * absolute start was not alerted before. O(nfound) plus the multiset difference. */
static void discords(tsm_ctx *ctx, tss_stream *s, const tsm_discord *found, size_t nfound,
                     uint64_t w0) {
    size_t nfresh = 0;
    tss_seqset_prune(&s->alerted, w0);
    uint64_t *seq = malloc((2 * nfound + 1) * sizeof *seq);
    if (!seq) {
        tss_stream_pass_fail(s, "PD3 pass", "out of memory");
        return;
    }
    for (size_t k = 0; k < nfound; k++)
        seq[k] = w0 + (uint64_t)found[k].index;
    uint64_t *fresh = seq + nfound;
    tsm_status rc = tss_dedup(ctx, &s->alerted, seq, nfound, fresh, &nfresh);
    if (rc != TSM_OK)
        tss_stream_pass_fail(s, "discord de-duplication", tsm_ctx_error(ctx));
    /* fresh is a sorted subset of seq: walk both */
    for (size_t k = 0, f = 0; rc == TSM_OK && f < nfresh; k++) {
        if (seq[k] != fresh[f])
            continue;
        f++;
        tss_alert a = {
            .kind = TSS_ALERT_DISCORD,
            .start_seq = seq[k],
            /* start_timestamp_ns: filled in when the passes are joined */
            .length = s->p.subsequence,
            .distance = found[k].distance,
            .neighbor_seq = w0 + (uint64_t)found[k].neighbor,
            .threshold = s->r,
        };
        tss_alert_push(&s->pass_out, &a);
    }
    free(seq);
}

/* MOTIF when the top pair (absolute starts) differs from the last one. */
static void motif(tss_stream *s, const tsm_window_result *res, uint64_t w0) {
    uint64_t a = w0 + (uint64_t)res->motif.a, b = w0 + (uint64_t)res->motif.b;
    if (!res->has_motif || (s->have_motif && s->motif_a == a && s->motif_b == b))
        return;
    s->have_motif = 1;
    s->motif_a = a;
    s->motif_b = b;
    tss_alert al = {
        .kind = TSS_ALERT_MOTIF,
        .start_seq = a,
        .length = s->p.subsequence,
        .distance = res->motif.distance,
        .neighbor_seq = b,
    };
    tss_alert_push(&s->pass_out, &al);
}

/* The alerts of one stream's pass results (the stream did not fail this pass). */
static void finish(tsm_ctx *ctx, item *it, const tsm_discord *disc) {
    tss_stream *s = it->s;
    const uint64_t w0 = it->w0;
    double t0 = tssi_now();
    if (!isinf(it->w.r)) {
        s->passes_discord++;
        discords(ctx, s, disc + it->off, it->res.ndiscords, w0);
    }
    double t1 = tssi_now();
    if (it->motif) {
        s->passes_motif++;
        motif(s, &it->res, w0);
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

/* The calibration passes (r = 0) of the items of pass that calibrate. */
static tsm_status calibrate_all(tsm_ctx *ctx, const item *pass, size_t n) {
    item *it = calloc(n ? n : 1, sizeof *it);
    size_t ni = 0;
    if (!it)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu calibrations", n);
    for (size_t k = 0; k < n; k++)
        if (pass[k].calibrate) {
            it[ni].s = pass[k].s;
            it[ni].w = pass[k].w;
            it[ni++].w.r = 0.0;
        }
    tsm_discord *disc = NULL;
    tsm_status st = ni ? run_groups(ctx, it, ni, "calibration", &disc) : TSM_OK;
    for (size_t k = 0; k < ni; k++) {
        if (!it[k].failed)
            calibrate(it[k].s, disc + it[k].off, it[k].res.ndiscords);
        it[k].s->sec_discord += it[k].secs;
    }
    free(disc);
    free(it);
    return st;
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
        if (window_of(a, s, s->calibrated ? s->r : INFINITY, &it[ni].w) != 0)
            continue;
        it[ni].s = s;
        it[ni].w0 = tss_stream_window_seq(s);
        it[ni].calibrate = !s->calibrated;
        it[ni++].motif = s->p.motif;
    }
    p->it = it;
    p->ni = ni;
    *out = p;
    return TSM_OK;
}

/* After the calibrations: the items that still have a pass to run (a discord pass at
 * their r, or MK), compacted to the front; returns their count. */
static size_t regular(item *it, size_t n) {
    size_t ni = 0;
    for (size_t k = 0; k < n; k++) {
        tss_stream *s = it[k].s;
        if (it[k].calibrate && !s->calibrated && !s->p.motif)
            continue; /* no usable r yet, and nothing else to run */
        it[ni] = it[k];
        it[ni].w.r = s->calibrated ? s->r : INFINITY;
        it[ni++].calibrate = 0;
    }
    return ni;
}

void tss_passes_execute(tss_passes *p, tsm_ctx *ctx, tsm_ctx **workers, int nworkers) {
    item *it = p->it;
    tsm_discord *disc = NULL;
    p->st = calibrate_all(ctx, it, p->ni);
    const size_t ni = regular(it, p->ni);
    if (ni)
        p->st = worse(p->st, run_groups(ctx, it, ni, "window passes", &disc));
    const int threads = ni < 2 || nworkers < 2 ? 1 : nworkers;
    (void)threads; /* a build without OpenMP ignores the pragma */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
    for (size_t k = 0; k < ni; k++)
        if (!it[k].failed)
            finish(workers[tsmi_thread_id()], &it[k], disc);
    free(disc);
}

tsm_status tss_passes_end(tss_passes **p_p, tss_stream **list, size_t n) {
    tss_passes *p = *p_p;
    tsm_status st = p ? p->st : TSM_OK;
    for (size_t k = 0; k < n; k++) {
        tss_stream *s = list[k];
        tss_alert_buf *b = &s->pass_out;
        for (size_t q = 0; q < b->n; q++)
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
