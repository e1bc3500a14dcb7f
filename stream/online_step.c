/* online_step.c - the online phase of a tick: staged samples into the rings, the
 * batched left-NN kernel (kernels/online.h), LEFT_DISCORD alerts (DESIGN 5.3).
 *
 * Seam for the CUDA engine path: here the rings and the online arrays are host memory
 * and the kernel runs on a CPU ctx. A device path keeps the same arrays of all streams
 * in one device allocation, copies the round's staged samples there in one batched
 * copy, launches tsm_online_update's CUDA twin (one block per job) and copies back only
 * nn / nn_index; nothing else in this file changes. */
#include "online_step.h"

#include "stream.h"

#include <math.h>
#include <stdlib.h>

int tss_online_init(tss_online *o, const tss_ring *ring, uint32_t m) {
    const size_t two = 2 * (size_t)ring->cap, slack = ring->cap - ring->window;
    *o = (tss_online){0};
    o->mu = malloc(two * sizeof *o->mu);
    o->inv = malloc(two * sizeof *o->inv);
    o->kind = malloc(two);
    o->qt = malloc(((size_t)ring->window - m + 1) * sizeof *o->qt);
    o->nn = malloc(slack * sizeof *o->nn);
    o->nn_index = malloc(slack * sizeof *o->nn_index);
    if (!o->mu || !o->inv || !o->kind || !o->qt || !o->nn || !o->nn_index) {
        tss_online_free(o);
        return -1;
    }
    return 0;
}

void tss_online_free(tss_online *o) {
    free(o->mu);
    free(o->inv);
    free(o->kind);
    free(o->qt);
    free(o->nn);
    free(o->nn_index);
    *o = (tss_online){0};
}

uint64_t tss_online_bytes(const tss_online *o, const tss_ring *ring) {
    (void)o;
    const uint64_t two = 2 * (uint64_t)ring->cap, slack = ring->cap - ring->window;
    return two * (2 * sizeof(double) + 1) + (uint64_t)ring->window * sizeof(double) +
           slack * (sizeof(double) + sizeof(int64_t));
}

/* Moves the round's samples from staging to the ring and describes the job. */
static void stage_job(tss_stream *s, tsm_online_job *jb) {
    tss_ring *r = &s->ring;
    *jb = (tsm_online_job){
        .ring = r->v,
        .mu = s->on.mu,
        .inv = s->on.inv,
        .kind = s->on.kind,
        .qt = s->on.qt,
        .state = &s->on.st,
        .nn = s->on.nn,
        .nn_index = s->on.nn_index,
        .cap = r->cap,
        .pos0 = tss_ring_start(r),
        .fill = r->fill,
        .nnew = s->chunk,
        .window = s->p.window,
        .m = s->p.subsequence,
        .excl = s->p.excl,
    };
    const tss_staging *q = &s->stage;
    for (size_t k = 0; k < s->chunk; k++)
        tss_ring_push(r, q->v[q->head + k], q->ts[q->head + k]);
    tss_staging_consume(&s->stage, s->chunk);
}

/* LEFT_DISCORD alerts of one job's outputs; x0 = sequence number of x[0]. */
static void score(tss_stream *s, const tsm_online_job *jb, uint64_t x0) {
    const uint32_t m = s->p.subsequence;
    for (uint32_t k = 0; k < jb->nnew; k++) {
        double d = jb->nn[k];
        if (!isfinite(d) || d < s->r) /* NAN r (uncalibrated) fails too */
            continue;
        uint64_t start = x0 + jb->fill + k + 1 - m;
        tss_alert a = {
            .kind = TSS_ALERT_LEFT_DISCORD,
            .start_seq = start,
            .start_timestamp_ns = tss_stream_ts(s, start),
            .length = m,
            .distance = d,
            .neighbor_seq = x0 + (uint64_t)jb->nn_index[k],
            .threshold = s->r,
        };
        tss_stream_alert(s, &a);
    }
}

tsm_status tss_online_round(tsm_ctx *ctx, tss_stream **list, size_t n) {
    tsm_online_job *jobs = malloc((n ? n : 1) * sizeof *jobs);
    uint64_t *x0 = malloc((n ? n : 1) * sizeof *x0);
    if (!jobs || !x0) {
        free(jobs);
        free(x0);
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu online jobs", n);
    }
    for (size_t q = 0; q < n; q++) {
        x0[q] = tss_stream_window_seq(list[q]);
        stage_job(list[q], &jobs[q]);
    }
    tsm_status st = tsm_online_update(ctx, jobs, n);
    for (size_t q = 0; q < n; q++) {
        tss_stream *s = list[q];
        s->proc_seq += s->chunk;
        s->since_pass += s->chunk;
        if (st != TSM_OK)
            s->on.st.valid = 0;
        else if (s->calibrated && s->p.left_discord)
            score(s, &jobs[q], x0[q]);
    }
    free(jobs);
    free(x0);
    return st;
}
