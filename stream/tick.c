/* SPDX-License-Identifier: Apache-2.0 */
/* tick.c - the tick (DESIGN 5.1, 5.3; engine.h, tss_engine_tick): its rounds, the
 * online step of each, and the handing of alerts to the callback. The windowed passes
 * it moves on between rounds are in pass_thread.c, the test hook of its online phase in
 * test_fault.c.
 *
 * A tick runs in rounds. A round takes from every stream with staged samples the run
 * up to its next pass point (window just full, or hop samples since the last pass),
 * its next gap, or its ring slack, whichever comes first; feeds all those runs through
 * the batched online kernel; hands the round's GAP and LEFT_DISCORD alerts to the
 * callback; then runs the passes of the streams that reached a pass point, batched
 * (passes.c: one kernel call per group of equal m and excl), and hands over their
 * DISCORD and MOTIF alerts. Both backends run this code: the windows live in the
 * engine's arena (arena.h), device memory on CUDA. Rounds repeat until nothing
 * is staged. So every pass sees the window it would see if samples arrived one at a
 * time, the alerts do not depend on how samples were grouped into batches and ticks,
 * nor on the thread count, and a LEFT_DISCORD never waits for the passes (most of a
 * tick's time) of its own round. Each stream queues its alerts in the order of the
 * samples that produce them, so emitting a queue needs no sorting (engine.h, "Alert
 * order"). With overlap_passes the passes run on a thread and no round waits for them
 * (rounds() below): a stream at a pass point waits, taking no samples, until the
 * passes in flight are done and its own are launched. */
#include "engine_impl.h"

#include "online_round.h"
#include "test_fault.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int tssi_engine_reserve_dirty(tss_engine *e, size_t more) {
    return tssi_reserve_streams(&e->dirty, &e->dirty_cap, e->ndirty + more);
}

int tssi_engine_mark_dirty(tss_engine *e, tss_stream *s) {
    if (s->dirty)
        return 0;
    if (tssi_engine_reserve_dirty(e, 1) != 0)
        return -1;
    e->dirty[e->ndirty++] = s;
    s->dirty = 1;
    return 0;
}

void tssi_engine_emitted(tss_engine *e) {
    if (e->opt.on_alerts_end)
        e->opt.on_alerts_end(e->opt.user);
}

void tssi_engine_emit(tss_engine *e, tss_stream *s, tss_alert_buf *b) {
    for (size_t k = 0; k < b->n; k++) {
        tss_alert *a = &b->item[k];
        s->alerts[a->kind]++;
        e->c.alerts[a->kind]++;
        a->seq = 0;
        for (int kind = 0; kind < TSS_ALERT_KINDS; kind++)
            a->seq += s->alerts[kind];
        if (e->opt.on_alert)
            e->opt.on_alert(e->opt.user, s->id, a);
    }
    b->n = 0;
}

void tssi_engine_emit_queued(tss_engine *e, tss_stream *s) {
    tssi_engine_emit(e, s, &s->out);
    tssi_engine_emitted(e);
}

void tssi_engine_lose_device(tss_engine *e, const char *msg) {
    if (!e->device_lost)
        snprintf(e->device_msg, sizeof e->device_msg, "device lost earlier: %s", msg);
    e->device_lost = 1;
}

/* With an automatic m still to choose: chooses it from the first `warmup` staged
 * samples (all of a shorter run that a gap ends: the window restarts there, and the
 * history before it is all there is). Returns whether s has an m now. O(warmup * m). */
static int choose_m(tss_stream *s) {
    if (s->p.subsequence)
        return 1;
    const tss_staging *q = &s->stage;
    const size_t run = tss_staging_run(q), warmup = s->cfg.warmup;
    if (run == 0 || (run < warmup && run == tss_staging_pending(q)))
        return 0; /* the warm-up history is not in yet */
    tss_stream_choose_m(s, q->v + q->head, run < warmup ? run : warmup);
    return 1;
}

/* Starts a round for s: emits the GAPs and RESETs at the head of its staging (each
 * restarts the window), chooses an automatic m once its warm-up history is staged, and
 * sets s->chunk to the samples it takes this round, up to its next pass point (hop
 * samples since the last pass and a warm window). Returns s->chunk: 0 when nothing is
 * staged, while an automatic m waits for its history, while s waits for its passes to
 * be launched (its window must stay that of its pass point), or when its window's
 * memory cannot be had (a failure of the tick; the samples stay staged). */
static uint32_t plan(tss_stream *s) {
    if (s->waiting)
        return s->chunk = 0;
    const tss_gap_mark *mk;
    while ((mk = tss_staging_head_mark(&s->stage)) != NULL) {
        if (mk->reset) {
            tss_stream_restart_run(s, mk->seq, mk->expected);
            tss_staging_pop_mark(&s->stage);
            continue;
        }
        tss_stream_restart(s); /* an open event ends before the gap */
        tss_alert a = {
            .kind = TSS_ALERT_GAP,
            .start_seq = mk->expected,
            .start_timestamp_ns = mk->expected_ts,
            .length = mk->missing > UINT32_MAX ? UINT32_MAX : (uint32_t)mk->missing,
            .score = NAN,
            .detected_seq = mk->seq,
        };
        tss_stream_alert(s, &a);
        s->proc_seq = mk->seq;
        tss_staging_pop_mark(&s->stage);
    }
    if (!choose_m(s))
        return s->chunk = 0;
    const tss_params *p = &s->p;
    uint64_t chunk = tss_staging_run(&s->stage);
    const uint64_t warm = tss_stream_warm(s);
    uint64_t to_pass = s->since_pass < p->hop ? p->hop - s->since_pass : 1;
    if (s->ring.fill < warm && warm - s->ring.fill > to_pass)
        to_pass = warm - s->ring.fill;
    uint64_t slack = s->ring.cap - s->ring.window;
    chunk = chunk < to_pass ? chunk : to_pass;
    s->chunk = (uint32_t)(chunk < slack ? chunk : slack);
    if (s->chunk && tss_ring_alloc(&s->ring) != 0) { /* its first samples: the window */
        tss_stream_fail(s, "window", "out of memory for the ring");
        s->chunk = 0;
    }
    return s->chunk;
}

static int by_index(const void *a, const void *b) {
    const tss_stream *x = *(tss_stream *const *)a, *y = *(tss_stream *const *)b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Whether a dirty stream has staged samples that wait for its passes to be launched. */
static int samples_wait(const tss_engine *e) {
    for (size_t k = 0; k < e->ndirty; k++) {
        const tss_stream *s = e->dirty[k];
        if (s->waiting && (tss_staging_run(&s->stage) || tss_staging_head_mark(&s->stage)))
            return 1;
    }
    return 0;
}

/* Whether the passes in flight must be joined before the next round's plan: one of
 * their streams restarts its window (a gap mark at the head of its staging). */
static int join_before_plan(const tss_engine *e) {
    for (size_t k = 0; e->nfly && k < e->ndirty; k++)
        if (e->dirty[k]->inflight && tss_staging_head_mark(&e->dirty[k]->stage))
            return 1;
    return 0;
}

/* Whether they must be joined before the round's online phase: it places a stream in
 * the arena (which may grow and move) or re-uploads a stale window. */
static int join_before_online(const tss_engine *e, tss_stream **act, size_t nact) {
    for (size_t k = 0; e->nfly && k < nact; k++)
        if (!act[k]->on.placed || act[k]->on.stale)
            return 1;
    return 0;
}

/* Whether a tick that began at `began` has used its budget (tick_budget_s). */
static int spent(const tss_engine *e, double began) {
    return e->opt.tick_budget_s > 0 && tssi_now() - began >= e->opt.tick_budget_s;
}

/* Notes a failure of the tick: the first message goes to err. */
static void failure(int *failed, char *err, unsigned errlen, const char *msg) {
    if (!*failed)
        tssi_say(err, errlen, "%s", msg);
    *failed = 1;
}

/* The online phase of a round over act[0..nact): the batched online kernel and the
 * views (online_round.c); through the test hook when it is armed (test_fault.h), which
 * costs one test of a flag here otherwise. */
static tsm_status online_phase(tss_engine *e, tss_stream **act, size_t nact) {
    if (tssi_test_fault_armed(e))
        return tssi_test_fault_round(e, act, nact);
    return tss_online_round(e->wide, &e->arena, act, nact, e->opt.on_score, e->opt.user);
}

/* After a round's online phase over act[0..nact): counts its samples processed, puts
 * the streams that reached a pass point on the wait list (room reserved by the tick),
 * and hands the round's GAP and LEFT_DISCORD alerts to the callback. */
static void round_done(tss_engine *e, tss_stream **act, size_t nact) {
    for (size_t k = 0; k < nact; k++) {
        tss_stream *s = act[k];
        e->pending -= s->chunk;
        e->c.samples_processed += s->chunk;
        if (s->ring.fill >= tss_stream_warm(s) && s->since_pass >= s->p.hop) {
            s->waiting = 1;
            e->wait[e->nwait++] = s;
            e->c.pass_waits += e->nfly > 0;
        }
        tssi_engine_emit(e, s, &s->out); /* GAP and LEFT_DISCORD of this round */
    }
    tssi_engine_emitted(e);
}

/* The rounds of a tick over the dirty streams (sorted by creation); act has room for
 * ndirty streams and e->wait for nwait + ndirty. The passes never hold up a round:
 * streams that reach a pass point while passes are in flight wait (plan gives them no
 * samples) until those are done; a stream whose passes are in flight still emits its
 * round's alerts at once (theirs come at the join). The main thread waits for the
 * passes only when a waiting stream has more samples staged. Returns 0, or -1 with
 * the first failure in err. */
static int rounds(tss_engine *e, tss_stream **act, char *err, unsigned errlen) {
    int failed = 0;
    char msg[1024];
    const double began = tssi_now();
    for (;;) {
        size_t nact = 0;
        if (spent(e, began))
            break; /* the rest stays staged for the next tick */
        if (join_before_plan(e) && tssi_engine_join(e, 1, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
        if (tssi_engine_advance_passes(e, 0, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
        for (size_t k = 0; k < e->ndirty; k++)
            if (plan(e->dirty[k]) > 0)
                act[nact++] = e->dirty[k];
        if (nact == 0) {
            /* with a pass thread the caller never waits for passes: a later tick
             * launches the waiting (its loop keeps ticking while samples are staged) */
            if (e->device_lost || !samples_wait(e) || e->have_thread)
                break;
            if (tssi_engine_advance_passes(e, 1, msg, sizeof msg) != 0) /* launches the waiting */
                failure(&failed, err, errlen, msg);
            continue;
        }
        if (join_before_online(e, act, nact) && tssi_engine_join(e, 1, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
        if (e->device_lost)
            break;
        double t0 = tssi_now();
        tsm_status st = online_phase(e, act, nact);
        e->c.seconds_online += tssi_now() - t0;
        if (st != TSM_OK) {
            snprintf(msg, sizeof msg, "online update: %s", tsm_ctx_error(e->wide));
            failure(&failed, err, errlen, msg);
            e->c.pass_failures++;
            if (st == TSM_EDEVICE)
                tssi_engine_lose_device(e, tsm_ctx_error(e->wide));
        }
        round_done(e, act, nact);
        if (e->device_lost)
            break; /* nothing more can run on the device */
        /* the passes of the streams that just reached their pass points; without a pass
         * thread they run here, so only while the budget lasts (the next tick launches
         * them first): two launches in a tick held it 0.75 s for a budget of 0.2 */
        if ((e->have_thread || !spent(e, began)) &&
            tssi_engine_advance_passes(e, 0, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
    }
    return failed ? -1 : 0;
}

/* At the end of a tick: reports a stream's failure if the rounds reported none (failed),
 * hands over what a failed round left queued, and keeps on the dirty list only the
 * streams with samples still staged. Returns whether the tick failed. O(dirty). */
static int settle(tss_engine *e, int failed, char *err, unsigned errlen) {
    size_t kept = 0;
    for (size_t k = 0; k < e->ndirty; k++) {
        tss_stream *s = e->dirty[k];
        if (s->fail[0] && !failed) {
            tssi_say(err, errlen, "%s", s->fail);
            failed = 1;
        }
        tssi_engine_emit(e, s, &s->out); /* what a failed round left queued */
        tss_staging_compact(&s->stage);
        /* samples that wait for the stream's passes (a pass thread) stay on the list
         * for the next tick; those of an automatic m that waits for its warm-up history
         * come back with the next batch */
        const int more = tss_staging_pending(&s->stage) || tss_staging_head_mark(&s->stage);
        if (more && s->p.subsequence && !e->device_lost)
            e->dirty[kept++] = s;
        else
            s->dirty = 0;
    }
    tssi_engine_emitted(e);
    e->ndirty = kept;
    return failed;
}

int tss_engine_tick(tss_engine *e, char *err, unsigned errlen) {
    if (e->device_lost) {
        tssi_say(err, errlen, "%s", e->device_msg);
        return -1;
    }
    double t0 = tssi_now();
    e->c.ticks++;
    tssi_engine_expire(e);
    if (e->ndirty == 0)
        return tssi_engine_advance_passes(e, 0, err, errlen); /* the passes of earlier ticks */
    e->ticks_with_work++;
    tss_stream **act = malloc(e->ndirty * sizeof *act);
    if (!act || tssi_engine_reserve_wait(e, e->ndirty) != 0) {
        free(act);
        tssi_say(err, errlen, "out of memory for a tick over %zu streams", e->ndirty);
        return -1;
    }
    qsort(e->dirty, e->ndirty, sizeof *e->dirty, by_index);
    for (size_t k = 0; k < e->ndirty; k++)
        e->dirty[k]->fail[0] = '\0';
    int failed = rounds(e, act, err, errlen);
    free(act);
    failed = settle(e, failed, err, errlen);
    e->c.seconds_tick += tssi_now() - t0;
    return failed ? -1 : 0;
}
