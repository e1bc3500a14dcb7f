/* SPDX-License-Identifier: Apache-2.0 */
/* online_round.c - the online phase of a round: staged samples into the rings (host
 * and arena), the batched left-NN kernel (kernels/online.h), and each new subsequence's
 * distance through its stream's detection (detect.h: events, DESIGN 5.3). Both backends run this
 * code; only the arena's memory differs.
 *
 * A round's transfer buffer (arena.h "io"), host and device side alike:
 *   [ n tss_scatter | values (total) | nn | nn_index | mag | mag_index (total each) ]
 * where total is the round's samples; the first two go up in one copy, the last four
 * come back in one copy. Job q's outputs are at its values' offset src. The level view
 * (level.h) is the host's, from the host ring. */
#include "online_round.h"

#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Byte offsets of the arrays inside a stream's region. */
typedef struct {
    uint64_t ring, mu, inv, m2, kind, qt, state, bytes;
} region;

static region layout(const tss_online *o) {
    const uint64_t two = 2 * (uint64_t)o->cap;
    region g;
    g.ring = 0;
    g.mu = g.ring + tss_arena_align(two * sizeof(double));
    g.inv = g.mu + tss_arena_align(two * sizeof(double));
    g.m2 = g.inv + tss_arena_align(two * sizeof(double));
    g.kind = g.m2 + tss_arena_align(two * sizeof(double));
    g.qt = g.kind + tss_arena_align(two);
    /* the QT row has W - m + 1 entries; room for the largest (m = 3), so that the
     * region does not depend on m and an automatic m can change in place */
    g.state = g.qt + tss_arena_align(((uint64_t)o->window - 2) * sizeof(double));
    g.bytes = g.state + tss_arena_align(sizeof(tsm_online_state));
    return g;
}

void tss_online_init(tss_online *o, const tss_ring *ring, uint32_t m) {
    *o = (tss_online){.window = ring->window, .m = m, .cap = ring->cap};
}

void tss_online_set_m(tss_online *o, uint32_t m) {
    o->m = m;
    o->st.valid = 0;
}

uint64_t tss_online_bytes(const tss_online *o) {
    return layout(o).bytes;
}

const double *tss_online_window(const tss_online *o, const tss_arena *a, const tss_ring *ring) {
    return (const double *)tss_arena_at(a, o->off + layout(o).ring) + tss_ring_start(ring);
}

/* o has its region at off now: its window goes up at the next round (or now). */
static void placed_at(tss_online *o, uint64_t off, const tss_ring *r) {
    o->off = off;
    o->placed = 1;
    o->stale = r->fill > 0;
    o->st.valid = 0;
}

tsm_status tss_online_place(tss_arena *a, tss_stream **list, size_t n) {
    uint64_t need = 0, off;
    tsm_status st = TSM_OK;
    for (size_t q = 0; q < n && st == TSM_OK; q++) {
        tss_online *o = &list[q]->on;
        if (o->placed)
            continue;
        /* a region given back by a removed stream, if one of this size is free */
        st = a->nfree ? tss_arena_reuse(a, tss_arena_align(tss_online_bytes(o)), &off) : TSM_EINVAL;
        if (st == TSM_OK)
            placed_at(o, off, &list[q]->ring);
        else if (st == TSM_EINVAL)
            need += tss_arena_align(tss_online_bytes(o)), st = TSM_OK;
    }
    if (st == TSM_OK)
        st = tss_arena_reserve(a, need);
    /* when the arena could not grow (memory), what it has left goes to the first
     * streams; the others stay without a region (their rounds are skipped) */
    const int short_of_memory = st == TSM_ENOMEM;
    tsm_status up = short_of_memory ? TSM_OK : st;
    for (size_t q = 0; q < n && up == TSM_OK; q++) {
        tss_online *o = &list[q]->on;
        const tss_ring *r = &list[q]->ring;
        if (!o->placed) {
            const uint64_t bytes = tss_arena_align(tss_online_bytes(o));
            if (short_of_memory &&
                (a->size - a->used < bytes || tss_arena_reserve(a, bytes) != TSM_OK))
                continue;
            placed_at(o, tss_arena_take(a, bytes), r);
        }
        if (o->stale) {
            up = tss_arena_put(a, o->off + layout(o).ring, r->v,
                               2 * (uint64_t)r->cap * sizeof *r->v);
            o->stale = up != TSM_OK;
            o->st.valid = 0;
        }
    }
    return up != TSM_OK ? up : st;
}

/* Byte offsets of a round's outputs in the io buffer (each array: total entries). */
typedef struct {
    uint64_t nn, idx, mag, mag_idx, end;
} outputs;

/* Describes stream s's job on the arena (its outputs, shape and magnitude views, at the
 * io offsets o, plus src entries) and its scatter descriptor, and copies its samples to
 * vals[src ..]. Before they enter the host ring (the job needs the old fill). */
static void describe(tss_arena *a, tss_stream *s, uint64_t src, const outputs *o,
                     tsm_online_job *jb, tss_scatter *sc, double *vals) {
    const tss_ring *r = &s->ring;
    const region g = layout(&s->on);
    unsigned char *base = tss_arena_at(a, s->on.off);
    *jb = (tsm_online_job){
        .ring = (const double *)(base + g.ring),
        .mu = (double *)(base + g.mu),
        .inv = (double *)(base + g.inv),
        .kind = base + g.kind,
        .qt = (double *)(base + g.qt),
        .state = (tsm_online_state *)(base + g.state),
        .nn = (double *)tss_arena_io_dev(a, o->nn) + src,
        .nn_index = (int64_t *)tss_arena_io_dev(a, o->idx) + src,
        .cap = r->cap,
        .pos0 = tss_ring_start(r),
        .fill = r->fill,
        .nnew = s->chunk,
        .window = s->p.window,
        .m = s->p.subsequence,
        .excl = s->p.excl,
        .m2 = (double *)(base + g.m2),
        .mag = (double *)tss_arena_io_dev(a, o->mag) + src,
        .mag_index = (int64_t *)tss_arena_io_dev(a, o->mag_idx) + src,
    };
    *sc = (tss_scatter){
        .ring = s->on.off + g.ring,
        .state = s->on.off + g.state,
        .src = src,
        .cap = r->cap,
        .head = r->head,
        .n = s->chunk,
        .reset = !s->on.st.valid,
    };
    const tss_staging *q = &s->stage;
    memcpy(vals + src, q->v + q->head, s->chunk * sizeof *vals);
}

/* Moves s's round from staging into its host ring. */
static void push_host(tss_stream *s) {
    const tss_staging *q = &s->stage;
    tss_ring_append(&s->ring, q->v + q->head, q->ts + q->head, s->chunk);
    tss_staging_consume(&s->stage, s->chunk);
}

/* A job's outputs, host copies, at its offset. */
typedef struct {
    const double *nn, *mag;
    const int64_t *idx, *mag_idx;
} job_out;

/* The level view (level.h) and the magnitude view's score (robust.h) of subsequence
 * x[i .. i + m - 1] against its window's history x[base .. i - 1] into sc, the magnitude
 * distance then joining the stream's history of them. The magnitude score's unit is
 * 1% of sqrt(m) times the width of that history's range (the level view's): a
 * difference immaterial against the stream's range never scores high. Both NAN when
 * the level's runs could not be kept (memory). */
static void views_of(tss_stream *s, const double *xh, uint64_t x0, size_t base, size_t i,
                     tss_scored *sc) {
    const uint32_t m = s->p.subsequence;
    double width;
    sc->magnitude_score = NAN;
    if (tss_level_at(&s->level, xh, x0, base, i, m, &width, &sc->level) == 0) {
        const double unit = TSS_MAGNITUDE_FLOOR * sqrt((double)m) * width;
        sc->magnitude_score = tss_robust_score(&s->det.mag, sc->magnitude, unit);
    }
    (void)tss_robust_add(&s->det.mag, sc->magnitude);
}

/* Scores one job's outputs (x0 = sequence number of x[0]): each completed subsequence
 * with a left neighbour gets its views and goes through the stream's detection
 * (detect.h), armed once the window holds its warm-up; the level view (level.h) comes
 * from the host ring, which already holds the round's samples at the job's positions
 * (a left neighbour means at least excl >= 1 samples of history: base < i).
 * The alerts it queues get their timestamps from the host ring. */
static void score(tss_stream *s, const tsm_online_job *jb, const job_out *out, uint64_t x0,
                  tss_score_fn on_score, void *user) {
    const uint32_t m = s->p.subsequence, warm = tss_stream_warm(s), W = jb->window;
    const size_t queued = s->out.n;
    const double *xh = s->ring.v + jb->pos0; /* x[0 .. fill + nnew) on the host */
    for (uint32_t k = 0; k < jb->nnew; k++) {
        if (!isfinite(out->nn[k])) /* no subsequence yet, or no left neighbour */
            continue;
        const uint64_t fill = jb->fill + k + 1, start = x0 + fill - m;
        const size_t e = jb->fill + k, base = e + 1 > W ? e + 1 - W : 0, i = e + 1 - m;
        tss_scored sc = {
            .start = start,
            .m = m,
            .raw = out->nn[k],
            .neighbor = x0 + (uint64_t)out->idx[k],
            .magnitude = out->mag[k],
            .magnitude_neighbor = x0 + (uint64_t)out->mag_idx[k],
        };
        views_of(s, xh, x0, base, i, &sc);
        tss_detect_step(s, &sc, fill, fill >= warm, on_score != NULL);
        if (on_score)
            on_score(user, s->id, &sc);
    }
    for (size_t q = queued; q < s->out.n; q++)
        s->out.item[q].start_timestamp_ns = tss_stream_ts(s, s->out.item[q].start_seq);
}

/* A stream's round that could not run: its samples go to the host ring unscored, and
 * its arena window is rebuilt from there at its next round. */
static void skipped(tss_stream *s) {
    s->proc_seq += s->chunk;
    s->since_pass += s->chunk;
    s->on.st.valid = 0;
    s->on.stale = s->on.placed;
}

/* The round of list's streams, every one placed unless placed (tss_online_place's
 * status) says otherwise. */
static tsm_status round_of(tsm_ctx *ctx, tss_arena *a, tss_stream **list, size_t n,
                           tsm_status placed, tss_score_fn on_score, void *user) {
    tsm_online_job *jobs = malloc((n ? n : 1) * sizeof *jobs);
    uint64_t *x0 = malloc((n ? n : 1) * sizeof *x0);
    uint64_t *src = malloc((n ? n : 1) * sizeof *src);
    if (!jobs || !x0 || !src) {
        free(jobs);
        free(x0);
        free(src);
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu online jobs", n);
    }
    uint64_t total = 0;
    for (size_t q = 0; q < n; q++)
        total += list[q]->chunk;
    const uint64_t vals_off = tss_arena_align(n * sizeof(tss_scatter)), arr = total * 8;
    outputs o;
    o.nn = tss_arena_align(vals_off + arr);
    o.idx = tss_arena_align(o.nn + arr);
    o.mag = tss_arena_align(o.idx + arr);
    o.mag_idx = tss_arena_align(o.mag + arr);
    const uint64_t io = o.mag_idx + arr;
    tsm_status st = placed;
    if (st == TSM_OK)
        st = tss_arena_io(a, io);
    for (size_t q = 0, at = 0; q < n; at += list[q]->chunk, q++) {
        x0[q] = tss_stream_window_seq(list[q]);
        src[q] = at;
        if (st == TSM_OK)
            describe(a, list[q], at, &o, &jobs[q], (tss_scatter *)a->host_io + q,
                     (double *)(a->host_io + vals_off));
        push_host(list[q]);
    }
    if (st == TSM_OK)
        st = tss_arena_scatter(a, vals_off + total * sizeof(double), n, vals_off);
    if (st == TSM_OK)
        st = tsm_online_update(ctx, jobs, n);
    if (st == TSM_OK)
        st = tss_arena_fetch(a, o.nn, io - o.nn);
        /* The streams score independently (each its own calibration, events and alert
         * queue), so over the threads: one subsequence costs about as much as its share of
         * the kernel. In order on one thread when a caller's on_score wants the calls. */
#pragma omp parallel for schedule(dynamic, 16) if (!on_score && n > 16)
    for (size_t q = 0; q < n; q++) {
        tss_stream *s = list[q];
        if (st != TSM_OK) {
            skipped(s);
            continue;
        }
        s->proc_seq += s->chunk;
        s->since_pass += s->chunk;
        s->on.st.valid = 1;
        const job_out out = {(const double *)(a->host_io + o.nn) + src[q],
                             (const double *)(a->host_io + o.mag) + src[q],
                             (const int64_t *)(a->host_io + o.idx) + src[q],
                             (const int64_t *)(a->host_io + o.mag_idx) + src[q]};
        score(s, &jobs[q], &out, x0[q], on_score, user);
    }
    free(jobs);
    free(x0);
    free(src);
    return st;
}

tsm_status tss_online_round(tsm_ctx *ctx, tss_arena *a, tss_stream **list, size_t n,
                            tss_score_fn on_score, void *user) {
    const tsm_status placed = tss_online_place(a, list, n);
    tss_stream **run = placed == TSM_ENOMEM ? malloc(n * sizeof *run) : NULL;
    if (!run)
        return round_of(ctx, a, list, n, placed, on_score, user);
    /* Short of memory for some streams' regions: the round goes on for the others (a
     * burst of new streams near the limits must not stop the streams already running). */
    size_t k = 0;
    for (size_t q = 0; q < n; q++) {
        if (list[q]->on.placed && !list[q]->on.stale)
            run[k++] = list[q];
        else {
            push_host(list[q]);
            skipped(list[q]);
        }
    }
    const tsm_status st = round_of(ctx, a, run, k, TSM_OK, on_score, user);
    free(run);
    return st != TSM_OK ? st : placed; /* the message on ctx is the latest failure's */
}
