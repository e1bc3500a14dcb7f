/* passes.c - calibration, PD3 and MK over the windows of the due streams.
 *
 * A pass reads the stream's window, one contiguous array thanks to the mirrored ring,
 * builds its statistics (tsm_stats_new) and calls the batch kernels on it, so its
 * results are by construction those of the batch tools on the same window. Window
 * index k is absolute sequence number w0 + k.
 *
 * Seam for the CUDA engine path: today every stream's pass calls the kernels on a CPU
 * ctx, one stream per OpenMP thread. A device path runs the due streams' PD3 and MK as
 * batched launches over all their windows (already on the device) and hands back the
 * same per-stream results (discord lists, motif pair) to discords() and motif(). */
#include "passes.h"

#include "mk.h"
#include "omp_team.h"
#include "pd3.h"
#include "stream.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

/* r = auto: r = largest nn of the window (top-1 discord) * (1 + margin). A window
 * whose largest nn is 0 (all alike, e.g. constant) gives no usable r: the stream stays
 * uncalibrated and tries again at its next pass. */
static void calibrate(tsm_ctx *ctx, tss_stream *s, const tsm_stats *st) {
    tsm_discord top;
    size_t count = 0;
    if (tsm_discords_topk(ctx, st, s->p.excl, 1, 0, &top, &count, NULL) != TSM_OK) {
        tss_stream_fail(s, "calibration", tsm_ctx_error(ctx));
        return;
    }
    if (count == 1 && top.distance > 0.0 && isfinite(top.distance)) {
        s->cal_nn = top.distance;
        s->r = top.distance * (1.0 + s->p.range_margin);
        s->calibrated = 1;
    }
}

/* PD3 for r over the window; DISCORD for every range discord not alerted before. */
static void discords(tsm_ctx *ctx, tss_stream *s, const tsm_stats *st, uint64_t w0) {
    tsm_discord *found = NULL;
    size_t nfound = 0, nfresh = 0;
    tsm_status rc = tsm_pd3_range(ctx, st, s->p.excl, s->r, 0, &found, &nfound, NULL);
    s->passes_discord++;
    if (rc != TSM_OK) {
        tss_stream_fail(s, "PD3 pass", tsm_ctx_error(ctx));
        return;
    }
    tss_seqset_prune(&s->alerted, w0);
    uint64_t *seq = malloc((2 * nfound + 1) * sizeof *seq);
    if (!seq) {
        free(found);
        tss_stream_fail(s, "PD3 pass", "out of memory");
        return;
    }
    for (size_t k = 0; k < nfound; k++)
        seq[k] = w0 + (uint64_t)found[k].index; /* found is ordered by index */
    uint64_t *fresh = seq + nfound;
    rc = tss_dedup(ctx, &s->alerted, seq, nfound, fresh, &nfresh);
    if (rc != TSM_OK)
        tss_stream_fail(s, "discord de-duplication", tsm_ctx_error(ctx));
    /* fresh is a sorted subset of seq: walk both */
    for (size_t k = 0, f = 0; rc == TSM_OK && f < nfresh; k++) {
        if (seq[k] != fresh[f])
            continue;
        f++;
        tss_alert a = {
            .kind = TSS_ALERT_DISCORD,
            .start_seq = seq[k],
            .start_timestamp_ns = tss_stream_ts(s, seq[k]),
            .length = s->p.subsequence,
            .distance = found[k].distance,
            .neighbor_seq = w0 + (uint64_t)found[k].neighbor,
            .threshold = s->r,
        };
        tss_stream_alert(s, &a);
    }
    free(seq);
    free(found);
}

/* MK top-1 motif; MOTIF when the pair (absolute starts) differs from the last one. */
static void motif(tsm_ctx *ctx, tss_stream *s, const tsm_stats *st, uint64_t w0) {
    tsm_motif mo;
    size_t count = 0;
    tsm_status rc = tsm_mk_motifs(ctx, st, s->p.excl, 1, s->p.references, TSM_MK_SEED_DEFAULT, &mo,
                                  &count, NULL);
    s->passes_motif++;
    if (rc != TSM_OK) {
        tss_stream_fail(s, "MK pass", tsm_ctx_error(ctx));
        return;
    }
    uint64_t a = w0 + (uint64_t)mo.a, b = w0 + (uint64_t)mo.b;
    if (count == 0 || (s->have_motif && s->motif_a == a && s->motif_b == b))
        return;
    s->have_motif = 1;
    s->motif_a = a;
    s->motif_b = b;
    tss_alert al = {
        .kind = TSS_ALERT_MOTIF,
        .start_seq = a,
        .start_timestamp_ns = tss_stream_ts(s, a),
        .length = s->p.subsequence,
        .distance = mo.distance,
        .neighbor_seq = b,
    };
    tss_stream_alert(s, &al);
}

/* All passes of one stream over its current (full) window. */
static void pass_one(tsm_ctx *ctx, tss_stream *s) {
    const uint64_t w0 = tss_stream_window_seq(s);
    const double *x = s->ring.v + tss_ring_start(&s->ring);
    s->since_pass = 0;
    double t0 = tssi_now();
    tsm_stats *st = NULL;
    if (tsm_stats_new(ctx, x, s->ring.fill, s->p.subsequence, &st) != TSM_OK) {
        tss_stream_fail(s, "window statistics", tsm_ctx_error(ctx));
        return;
    }
    if (!s->calibrated)
        calibrate(ctx, s, st);
    if (s->calibrated)
        discords(ctx, s, st, w0);
    double t1 = tssi_now();
    s->sec_discord += t1 - t0;
    if (s->p.motif) {
        motif(ctx, s, st, w0);
        s->sec_motif += tssi_now() - t1;
    }
    tsm_stats_destroy(&st);
}

void tss_passes_run(tsm_ctx *wide, tsm_ctx **workers, int nworkers, tss_stream **list, size_t n) {
    if (n == 1 || nworkers < 2) {
        for (size_t k = 0; k < n; k++)
            pass_one(wide, list[k]);
        return;
    }
#pragma omp parallel for num_threads(nworkers) schedule(dynamic, 1)
    for (size_t k = 0; k < n; k++)
        pass_one(workers[tsmi_thread_id()], list[k]);
}
