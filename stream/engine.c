/* SPDX-License-Identifier: Apache-2.0 */
/* engine.c - the engine's lifecycle, the tick (DESIGN 5.1, 5.3) and its queries.
 * Ingest is in ingest.c, checkpoints in checkpoint.c.
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
#include "passes.h"
#include "test_fault.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tss_reject_name(tss_reject r) {
    static const char *const names[TSS_REJECT_COUNT] = {
        [TSS_OK] = "ok",
        [TSS_REJECT_BAD_ID] = "bad_id",
        [TSS_REJECT_EMPTY] = "empty",
        [TSS_REJECT_TOO_LARGE] = "too_large",
        [TSS_REJECT_NONFINITE] = "nonfinite",
        [TSS_REJECT_TIMESTAMPS] = "timestamps",
        [TSS_REJECT_TIME_BACKWARDS] = "time_backwards",
        [TSS_REJECT_DUPLICATE] = "duplicate",
        [TSS_REJECT_OUT_OF_ORDER] = "out_of_order",
        [TSS_REJECT_TOO_MANY_STREAMS] = "too_many_streams",
        [TSS_REJECT_STREAM_REFUSED] = "stream_refused",
        [TSS_REJECT_SEQ_JUMP] = "seq_jump",
        [TSS_REJECT_FUTURE_TIME] = "future_time",
        [TSS_REJECT_STALE_EPOCH] = "stale_epoch",
    };
    return (unsigned)r < TSS_REJECT_COUNT ? names[r] : "unknown";
}

static void *pass_thread(void *arg);

/* OpenMP threads of the pass thread's team (tss_passes_execute's). */
#define PASS_TEAM 4
/* Windows of the first launch, before the cost of one is measured (launch_size): one,
 * since nothing bounds what more would cost (8 MK passes on noise at W = 4096 held
 * the first join for up to 1.3 s on a 2-core CPU, against the 1 s bound of control). */
#define PASS_BATCH_FIRST 1

int tss_engine_new(const tss_engine_options *opt, tss_engine **out, char *err, unsigned errlen) {
    *out = NULL;
    tss_engine *e = calloc(1, sizeof *e);
    if (!e) {
        tssi_say(err, errlen, "out of memory for the engine");
        return -1;
    }
    e->opt = *opt;
    if (tssi_test_fault_read(e, err, errlen) != 0) {
        free(e);
        return -1;
    }
    if (e->opt.max_streams == 0)
        e->opt.max_streams = TSS_MAX_STREAMS_DEFAULT;
    const char *why = NULL;
    tsm_ctx *probe = NULL;
    if (tsm_ctx_new(&probe, opt->backend, &why) != TSM_OK) {
        tssi_say(err, errlen, "backend %s unavailable: %s", tsm_backend_name(opt->backend),
                 why ? why : "unknown reason");
        free(e);
        return -1;
    }
    e->backend = tsm_ctx_backend(probe);
    if (tssi_test_fault_check(e, err, errlen) != 0) {
        tsm_ctx_destroy(&probe);
        free(e);
        return -1;
    }
    tsm_ctx_set_threads(probe, opt->threads);
    e->threads = tsm_ctx_threads(probe);
    e->wide = probe; /* CUDA: the device; CPU: T threads */
    /* on the CPU the passes and the rounds would share the cores: a thread of their own
     * cost 22% of the daemon's throughput (oversubscribed teams) for no gain, so there
     * they run within the ticks, whose length tick_budget_s bounds */
    const int overlap = opt->overlap_passes == TSS_OVERLAP_ALWAYS ||
                        (opt->overlap_passes && e->backend == TSM_BACKEND_CUDA);
    if (overlap && tsm_ctx_new(&e->side, e->backend, &why) != TSM_OK) {
        tssi_say(err, errlen, "backend %s: a second context for the passes: %s",
                 tsm_backend_name(e->backend), why ? why : "unknown reason");
        tsm_ctx_destroy(&e->wide);
        free(e);
        return -1;
    }
    if (e->side) {
        tsm_ctx_set_threads(e->side, e->threads);
        /* the rounds' kernels (latency: LEFT_DISCORD) go ahead of the passes' */
        if (tsm_ctx_set_urgent(e->wide) != TSM_OK) {
            tssi_say(err, errlen, "backend %s: %s", tsm_backend_name(e->backend),
                     tsm_ctx_error(e->wide));
            tsm_ctx_destroy(&e->side);
            tsm_ctx_destroy(&e->wide);
            free(e);
            return -1;
        }
        /* and they keep some SMs of their own; without (an old driver), the passes
         * share every SM, slower rounds but the same results */
        if (tsm_ctx_set_sm_share(e->side, TSS_PASS_SM_SHARE, &e->pass_sms) != TSM_OK)
            tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "%s", tsm_ctx_error(e->side));
        else if (!e->pass_sms)
            tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "the %s backend has no SMs",
                     tsm_backend_name(e->backend));
    } else {
        tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "the passes do not overlap the rounds");
    }
    tss_arena_init(&e->arena, e->wide);
    if (e->side) { /* without the thread, the passes run at launch (no overlap) */
        pthread_mutex_init(&e->mu, NULL);
        pthread_cond_init(&e->cv, NULL);
        e->have_thread = pthread_create(&e->thread, NULL, pass_thread, e) == 0;
        if (!e->have_thread) {
            pthread_cond_destroy(&e->cv);
            pthread_mutex_destroy(&e->mu);
        }
    }
    *out = e;
    return 0;
}

int tss_engine_pass_sms(const tss_engine *e, const char **why) {
    *why = e->pass_sms_why;
    return e->pass_sms;
}

void tss_engine_destroy(tss_engine **self_p) {
    if (*self_p) {
        tss_engine *e = *self_p;
        tssi_engine_join(e, 0, NULL, 0);
        if (e->have_thread) {
            pthread_mutex_lock(&e->mu);
            e->stop = 1;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
            pthread_join(e->thread, NULL);
            pthread_cond_destroy(&e->cv);
            pthread_mutex_destroy(&e->mu);
        }
        tss_registry_free(&e->reg);
        tss_arena_free(&e->arena);
        tsm_ctx_destroy(&e->side);
        tsm_ctx_destroy(&e->wide);
        free(e->dirty);
        free(e->fly);
        free(e->wait);
        free(e);
        *self_p = NULL;
    }
}

void tss_engine_set_room(tss_engine *e, uint64_t (*room)(void *user), void *user) {
    tss_arena_set_room(&e->arena, room, user);
}

tsm_backend tss_engine_backend(const tss_engine *e) {
    return e->backend;
}

/* Room for need entries in the stream list *list of capacity *cap (grown by doubling);
 * 0, or -1 when out of memory (the list unchanged). */
static int reserve_streams(tss_stream ***list, size_t *cap, size_t need) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    while (c < need)
        c *= 2;
    tss_stream **l = realloc(*list, c * sizeof *l);
    if (!l)
        return -1;
    *list = l;
    *cap = c;
    return 0;
}

int tssi_engine_reserve_wait(tss_engine *e, size_t more) {
    return reserve_streams(&e->wait, &e->wait_cap, e->nwait + more);
}

int tssi_engine_reserve_dirty(tss_engine *e, size_t more) {
    return reserve_streams(&e->dirty, &e->dirty_cap, e->ndirty + more);
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

size_t tss_engine_pending(const tss_engine *e) {
    return e->pending;
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

/* The end of a burst of emits (tss_engine_options.on_alerts_end). */
static void emitted(tss_engine *e) {
    if (e->opt.on_alerts_end)
        e->opt.on_alerts_end(e->opt.user);
}

/* Hands b's alerts to the callback, numbering each (seq) by s's count. */
static void emit_buf(tss_engine *e, tss_stream *s, tss_alert_buf *b) {
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
    emit_buf(e, s, &s->out);
    emitted(e);
}

/* At the join of s's passes: folds their counters into the engine's first (so a
 * callback sees the pass that found its alert counted), then hands their alerts to the
 * callback, then what s's rounds queued since (the passes' come from samples before
 * the rounds'). The rounds emit their own alerts with emit_buf. O(alerts). */
static void emit(tss_engine *e, tss_stream *s) {
    e->c.passes_discord += s->passes_discord;
    e->c.passes_motif += s->passes_motif;
    e->c.pass_failures += s->pass_failures;
    e->c.seconds_discord += s->sec_discord;
    e->c.seconds_motif += s->sec_motif;
    s->passes_discord = s->passes_motif = s->pass_failures = 0;
    s->sec_discord = s->sec_motif = 0.0;
    emit_buf(e, s, &s->pass_out);
    emit_buf(e, s, &s->out);
}

/* Records a sticky device error: every later tick fails with its message. */
static void lose_device(tss_engine *e, const char *msg) {
    if (!e->device_lost)
        snprintf(e->device_msg, sizeof e->device_msg, "device lost earlier: %s", msg);
    e->device_lost = 1;
}

int tss_engine_device_lost(const tss_engine *e) {
    return e->device_lost;
}

/* The pass thread: runs each batch of passes handed to it (launch) on the engine's
 * second ctx, until the engine stops it. */
static void *pass_thread(void *arg) {
    tss_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->work && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->stop)
            break;
        e->work = 0;
        pthread_mutex_unlock(&e->mu);
        /* the host side of a batch (de-duplication, alerts) is light: a small team,
         * whose idle threads do not spin on cores the main and publisher threads need */
        const double t0 = tssi_now();
        tss_passes_execute(e->passes, e->side, e->threads < PASS_TEAM ? e->threads : PASS_TEAM);
        e->exec_secs = tssi_now() - t0; /* read by the join, after passes_done */
        pthread_mutex_lock(&e->mu);
        atomic_store_explicit(&e->passes_done, 1, memory_order_release);
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Waits until the pass thread has finished the batch it was handed. */
static void wait_passes(tss_engine *e) {
    pthread_mutex_lock(&e->mu);
    while (!atomic_load_explicit(&e->passes_done, memory_order_acquire))
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

int tssi_engine_join(tss_engine *e, int emit_them, char *err, unsigned errlen) {
    if (!e->passes && !e->nfly)
        return 0;
    double t0 = tssi_now();
    if (e->threaded)
        wait_passes(e);
    e->threaded = 0;
    tsm_ctx *ran = e->have_thread ? e->side : e->wide;
    tsm_status st = tss_passes_end(&e->passes, e->fly, e->nfly);
    e->c.seconds_passes += tssi_now() - t0;
    if (st != TSM_OK) {
        tssi_say(err, errlen, "passes: %s", tsm_ctx_error(ran));
        if (st == TSM_EDEVICE)
            lose_device(e, tsm_ctx_error(ran));
    }
    for (size_t k = 0; k < e->nfly; k++) {
        e->fly[k]->inflight = 0;
        if (emit_them)
            emit(e, e->fly[k]);
    }
    emitted(e);
    if (e->nfly && e->fly_work > 0) { /* the cost of the passes, for the next launches' size */
        const double x = e->exec_secs / e->fly_work;
        e->pass_cost = e->pass_cost > 0 ? 0.75 * e->pass_cost + 0.25 * x : x;
    }
    e->nfly = 0;
    return st == TSM_OK ? 0 : -1;
}

/* What a stream's passes cost, in units of e->pass_cost: the pairs of its window's
 * subsequences. The exact passes' worst case (noise, where little is pruned) grows with
 * them. Counted per window instead, the first passes after the warm-up (a quarter of W
 * or less) set a cost that full windows then exceeded 6 to 30 times (launches of 0.57 s
 * for TSS_PASS_BATCH_S = 0.2: MK on noise at W = 4096, 2-core CPU). */
static double pass_work(const tss_stream *s) {
    const double m = s->p.subsequence, fill = s->ring.fill;
    const double c = fill > m ? fill - m + 1 : 1;
    return c * c;
}

/* The streams the next launch takes, the first waiting: as many as the measured cost
 * lets run in TSS_PASS_BATCH_S (PASS_BATCH_FIRST before any is measured), at least one.
 * So a join, which waits for the launch in flight, never waits much longer than that,
 * whatever the number of streams due at once. O(streams taken). */
static size_t launch_size(const tss_engine *e) {
    if (e->pass_cost <= 0)
        return e->nwait < PASS_BATCH_FIRST ? e->nwait : PASS_BATCH_FIRST;
    size_t n = 1;
    double work = e->nwait ? pass_work(e->wait[0]) : 0;
    while (n < e->nwait && (work + pass_work(e->wait[n])) * e->pass_cost <= TSS_PASS_BATCH_S)
        work += pass_work(e->wait[n++]);
    return n;
}

/* Launches the passes of the n due streams (creation order): on the pass thread with
 * overlap_passes, else at once (joined by the caller). Returns tss_passes_start's
 * status (message on e->wide). */
static tsm_status launch(tss_engine *e, tss_stream **due, size_t n) {
    if (reserve_streams(&e->fly, &e->fly_cap, n) != 0)
        return tsm_fail(e->wide, TSM_ENOMEM, "out of memory for %zu passes", n);
    /* an automatic m without a period: look again (up to 0.5 ms a stream at W = 4096;
     * streams fed at one rate reach the same fill together, so over the threads) */
    size_t looks = 0;
    for (size_t k = 0; k < n; k++)
        looks += due[k]->next_check && due[k]->ring.fill >= due[k]->next_check;
    const int threads = looks < 2 ? 1 : e->threads;
    (void)threads; /* a build without OpenMP ignores the pragma */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (looks > 0)
    for (size_t k = 0; k < n; k++) {
        tss_stream *s = due[k];
        if (s->next_check && s->ring.fill >= s->next_check)
            tss_stream_choose_m(s, s->ring.v + tss_ring_start(&s->ring), s->ring.fill);
    }
    e->fly_work = 0;
    for (size_t k = 0; k < n; k++)
        e->fly_work += pass_work(due[k]);
    double t0 = tssi_now();
    /* a stream restored at its pass point has no window in the arena yet: place it
     * (no passes are in flight: the arena may grow); a failure shows in its passes */
    (void)tss_online_place(&e->arena, due, n);
    tsm_status st = tss_passes_start(e->wide, &e->arena, due, n, &e->passes);
    memcpy(e->fly, due, n * sizeof *due);
    e->nfly = n;
    for (size_t k = 0; k < n; k++)
        due[k]->inflight = 1;
    atomic_store_explicit(&e->passes_done, 0, memory_order_relaxed);
    if (e->passes && e->have_thread) {
        pthread_mutex_lock(&e->mu);
        e->work = 1;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        e->threaded = 1;
    } else if (e->passes) {
        const double t1 = tssi_now();
        tss_passes_execute(e->passes, e->wide, e->threads);
        e->exec_secs = tssi_now() - t1;
    }
    e->c.seconds_passes += tssi_now() - t0;
    return st;
}

/* Moves the passes on without waiting for them (block: waiting): joins those in flight
 * once they are done (without a pass thread: at once), then launches the waiting
 * streams' passes if none are in flight (joined at once without a pass thread). 0, or
 * -1 with the first failure in err. */
static int advance_passes(tss_engine *e, int block, char *err, unsigned errlen) {
    int rc = 0;
    if (e->nfly &&
        (block || !e->threaded || atomic_load_explicit(&e->passes_done, memory_order_acquire)))
        rc = tssi_engine_join(e, 1, err, errlen);
    if (e->nfly || e->nwait == 0)
        return rc;
    tsm_status st = TSM_OK;
    /* the first n waiting, in the order they reached their pass points */
    const size_t n = e->device_lost ? e->nwait : launch_size(e);
    if (!e->device_lost) /* else nothing can run them: the streams go on without */
        st = launch(e, e->wait, n);
    for (size_t k = 0; k < n; k++)
        e->wait[k]->waiting = 0;
    memmove(e->wait, e->wait + n, (e->nwait - n) * sizeof *e->wait);
    e->nwait -= n;
    if (st != TSM_OK) {
        if (rc == 0)
            tssi_say(err, errlen, "passes: %s", tsm_ctx_error(e->wide));
        rc = -1;
        if (st == TSM_EDEVICE)
            lose_device(e, tsm_ctx_error(e->wide));
    }
    if (!e->threaded && e->nfly && tssi_engine_join(e, 1, rc ? NULL : err, errlen) != 0)
        rc = -1;
    return rc;
}

int tss_engine_flush(tss_engine *e, char *err, unsigned errlen) {
    int rc = 0;
    while (e->nwait || e->nfly) { /* joins, launches the waiting, launch by launch */
        if (advance_passes(e, 1, rc ? NULL : err, errlen) != 0)
            rc = -1;
        if (e->nfly && tssi_engine_join(e, 1, rc ? NULL : err, errlen) != 0)
            rc = -1;
        if (e->device_lost)
            break;
    }
    return rc;
}

void tssi_engine_unwait(tss_engine *e, tss_stream *s) {
    if (!s->waiting)
        return;
    size_t kept = 0;
    for (size_t k = 0; k < e->nwait; k++)
        if (e->wait[k] != s)
            e->wait[kept++] = e->wait[k];
    e->nwait = kept;
    s->waiting = 0;
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
        if (advance_passes(e, 0, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
        for (size_t k = 0; k < e->ndirty; k++)
            if (plan(e->dirty[k]) > 0)
                act[nact++] = e->dirty[k];
        if (nact == 0) {
            /* with a pass thread the caller never waits for passes: a later tick
             * launches the waiting (its loop keeps ticking while samples are staged) */
            if (e->device_lost || !samples_wait(e) || e->have_thread)
                break;
            if (advance_passes(e, 1, msg, sizeof msg) != 0) /* launches the waiting */
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
                lose_device(e, tsm_ctx_error(e->wide));
        }
        for (size_t k = 0; k < nact; k++) {
            tss_stream *s = act[k];
            e->pending -= s->chunk;
            e->c.samples_processed += s->chunk;
            if (s->ring.fill >= tss_stream_warm(s) && s->since_pass >= s->p.hop) {
                s->waiting = 1;
                e->wait[e->nwait++] = s;
                e->c.pass_waits += e->nfly > 0;
            }
            emit_buf(e, s, &s->out); /* GAP and LEFT_DISCORD of this round */
        }
        emitted(e);
        if (e->device_lost)
            break; /* nothing more can run on the device */
        /* the passes of the streams that just reached their pass points; without a pass
         * thread they run here, so only while the budget lasts (the next tick launches
         * them first): two launches in a tick held it 0.75 s for a budget of 0.2 */
        if ((e->have_thread || !spent(e, began)) && advance_passes(e, 0, msg, sizeof msg) != 0)
            failure(&failed, err, errlen, msg);
    }
    return failed ? -1 : 0;
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
        return advance_passes(e, 0, err, errlen); /* the passes of earlier ticks */
    e->ticks_with_work++;
    tss_stream **act = malloc(e->ndirty * sizeof *act);
    if (!act || reserve_streams(&e->wait, &e->wait_cap, e->nwait + e->ndirty) != 0) {
        free(act);
        tssi_say(err, errlen, "out of memory for a tick over %zu streams", e->ndirty);
        return -1;
    }
    qsort(e->dirty, e->ndirty, sizeof *e->dirty, by_index);
    for (size_t k = 0; k < e->ndirty; k++)
        e->dirty[k]->fail[0] = '\0';
    int failed = rounds(e, act, err, errlen);
    size_t kept = 0;
    for (size_t k = 0; k < e->ndirty; k++) {
        tss_stream *s = e->dirty[k];
        if (s->fail[0] && !failed) {
            tssi_say(err, errlen, "%s", s->fail);
            failed = 1;
        }
        emit_buf(e, s, &s->out); /* what a failed round left queued */
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
    emitted(e);
    e->ndirty = kept;
    free(act);
    e->c.seconds_tick += tssi_now() - t0;
    return failed ? -1 : 0;
}

size_t tss_engine_recalibrate(tss_engine *e, const char *prefix) {
    size_t len = strlen(prefix), n = 0;
    tssi_engine_join(e, 1, NULL, 0); /* a launch in flight (bounded) publishes first */
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
        if (strncmp(s->id, prefix, len) == 0) {
            if (s->cfg.subsequence == 0) /* its window restarts: no pass point to keep */
                tssi_engine_unwait(e, s);
            tss_stream_recalibrate(s);
            emit_buf(e, s, &s->out); /* the ANOMALY_END of an event it closed */
            n++;
        }
    }
    emitted(e);
    return n;
}

/* Whether two parameter sets are the same; NAN range equals NAN. */
static int same_params(const tss_params *a, const tss_params *b) {
    int same_range = (isnan(a->range) && isnan(b->range)) || a->range == b->range;
    return a->window == b->window && a->subsequence == b->subsequence && a->hop == b->hop &&
           a->excl == b->excl && a->warmup == b->warmup && a->threshold == b->threshold &&
           a->threshold_end == b->threshold_end && same_range && a->motif == b->motif &&
           a->references == b->references && a->left_discord == b->left_discord;
}

size_t tss_engine_reparam(tss_engine *e) {
    size_t n = 0;
    if (!e->opt.params_for)
        return 0;
    tssi_engine_join(e, 1, NULL, 0); /* a new shape frees the window the passes read */
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
        tss_params p;
        if (e->opt.params_for(e->opt.user, s->id, &p) != 0 || tss_params_check(&p, NULL, 0) != 0)
            continue; /* refused or invalid now: the stream keeps what it has */
        if (same_params(&p, &s->cfg))
            continue;
        const int shape = p.window != s->cfg.window || p.subsequence != s->cfg.subsequence ||
                          p.hop != s->cfg.hop || p.excl != s->cfg.excl;
        if (shape) /* its window restarts: no pass point to keep */
            tssi_engine_unwait(e, s);
        if (tss_stream_set_params(s, &p) != 0)
            continue;
        emit_buf(e, s, &s->out); /* the ANOMALY_END of an event it closed */
        n++;
    }
    emitted(e);
    return n;
}

static void info_of(const tss_engine *e, const tss_stream *s, tss_stream_info *out) {
    *out = (tss_stream_info){0};
    snprintf(out->id, sizeof out->id, "%s", s->id);
    out->params = s->p;
    out->subsequence_auto = s->cfg.subsequence == 0;
    out->period = s->period;
    out->samples = s->samples;
    out->rejected = s->rejected;
    memcpy(out->alerts, s->alerts, sizeof out->alerts);
    out->next_seq = s->next_seq;
    out->window_fill = s->ring.fill;
    out->gaps = s->gaps;
    const tss_detect *d = &s->det;
    out->calibrated = s->p.subsequence && s->ring.fill >= tss_stream_warm(s) &&
                      (!isnan(s->p.range) || tss_calib_ready(&d->cal));
    out->range = !isnan(s->p.range) ? s->p.range
                 : out->calibrated  ? tss_calib_far_raw(&d->cal)
                                    : NAN;
    out->event_open = d->open;
    out->events = d->events;
    out->last_score = isnan(d->last_value) || !tss_calib_ready(&d->cal)
                          ? NAN
                          : tss_calib_score(&d->cal, d->last_value).score;
    out->epoch = s->epoch;
    out->idle_s = tssi_engine_now(e) - s->last_active;
}

size_t tss_engine_stream_count(const tss_engine *e) {
    return e->reg.n;
}

int tss_engine_stream_at(const tss_engine *e, size_t i, tss_stream_info *out) {
    if (i >= e->reg.n)
        return -1;
    info_of(e, e->reg.list[i], out);
    return 0;
}

int tss_engine_stream_find(const tss_engine *e, const char *id, tss_stream_info *out) {
    const tss_stream *s = tss_registry_find(&e->reg, id);
    if (!s)
        return -1;
    if (out)
        info_of(e, s, out);
    return 0;
}

void tss_engine_counters_get(const tss_engine *e, tss_engine_counters *out) {
    *out = e->c;
    out->passes_pending = e->nwait + e->nfly;
    out->ring_bytes = out->ring_samples = 0;
    for (size_t k = 0; k < e->reg.n; k++) {
        const tss_stream *s = e->reg.list[k];
        out->ring_bytes += tss_ring_bytes(&s->ring) + (s->on.placed ? tss_online_bytes(&s->on) : 0);
        out->ring_samples += s->ring.fill;
    }
}
