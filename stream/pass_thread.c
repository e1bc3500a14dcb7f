/* SPDX-License-Identifier: Apache-2.0 */
/* pass_thread.c - the windowed passes of the engine (DESIGN 5.3; step 2 of the tick,
 * engine.h): the streams waiting at their pass points, the launches of their passes
 * (passes.c: PD3 and MK over a bounded batch of windows), their join (their DISCORD and
 * MOTIF alerts handed over), and, with overlap_passes, the thread that runs them on a
 * ctx of their own while the rounds go on. tick.c moves them on between rounds.
 *
 * A stream that reaches a pass point goes on the wait list and takes no samples until
 * its passes are launched, so that they see the window of the pass point. A launch
 * takes the first waiting streams, as many as TSS_PASS_BATCH_S allows at the measured
 * cost (launch_size), so a join never waits much longer than that. Without the thread
 * a launch runs its passes at once and is joined right away. */
#include "engine_impl.h"

#include "online_round.h"
#include "passes.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* OpenMP threads of the pass thread's team (tss_passes_execute's). */
#define PASS_TEAM 4

/* Windows of the first launch, before the cost of one is measured (launch_size): one,
 * since nothing bounds what more would cost (8 MK passes on noise at W = 4096 held
 * the first join for up to 1.3 s on a 2-core CPU, against the 1 s bound of control). */
#define PASS_BATCH_FIRST 1

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

int tssi_pass_thread_open(tss_engine *e, char *err, unsigned errlen) {
    /* on the CPU the passes and the rounds would share the cores: a thread of their own
     * cost 22% of the daemon's throughput (oversubscribed teams) for no gain, so there
     * they run within the ticks, whose length tick_budget_s bounds */
    const int overlap = e->opt.overlap_passes == TSS_OVERLAP_ALWAYS ||
                        (e->opt.overlap_passes && e->backend == TSM_BACKEND_CUDA);
    if (!overlap) {
        tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "the passes do not overlap the rounds");
        return 0;
    }
    const char *why = NULL;
    if (tsm_ctx_new(&e->side, e->backend, &why) != TSM_OK) {
        tssi_say(err, errlen, "backend %s: a second context for the passes: %s",
                 tsm_backend_name(e->backend), why ? why : "unknown reason");
        return -1;
    }
    tsm_ctx_set_threads(e->side, e->threads);
    /* the rounds' kernels (latency: LEFT_DISCORD) go ahead of the passes' */
    if (tsm_ctx_set_urgent(e->wide) != TSM_OK) {
        tssi_say(err, errlen, "backend %s: %s", tsm_backend_name(e->backend),
                 tsm_ctx_error(e->wide));
        return -1;
    }
    /* and they keep some SMs of their own; without (an old driver), the passes
     * share every SM, slower rounds but the same results */
    if (tsm_ctx_set_sm_share(e->side, TSS_PASS_SM_SHARE, &e->pass_sms) != TSM_OK)
        tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "%s", tsm_ctx_error(e->side));
    else if (!e->pass_sms)
        tssi_say(e->pass_sms_why, sizeof e->pass_sms_why, "the %s backend has no SMs",
                 tsm_backend_name(e->backend));
    /* without the thread, the passes run at launch (no overlap) */
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->have_thread = pthread_create(&e->thread, NULL, pass_thread, e) == 0;
    if (!e->have_thread) {
        pthread_cond_destroy(&e->cv);
        pthread_mutex_destroy(&e->mu);
    }
    return 0;
}

void tssi_pass_thread_close(tss_engine *e) {
    if (!e->have_thread)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
}

/* Waits until the pass thread has finished the batch it was handed. */
static void wait_passes(tss_engine *e) {
    pthread_mutex_lock(&e->mu);
    while (!atomic_load_explicit(&e->passes_done, memory_order_acquire))
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

int tssi_engine_reserve_wait(tss_engine *e, size_t more) {
    return tssi_reserve_streams(&e->wait, &e->wait_cap, e->nwait + more);
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
    if (tssi_reserve_streams(&e->fly, &e->fly_cap, n) != 0)
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

/* At the join of s's passes: folds their counters into the engine's first (so a
 * callback sees the pass that found its alert counted), then hands their alerts to the
 * callback, then what s's rounds queued since (the passes' come from samples before
 * the rounds'). The rounds emit their own alerts (tick.c). O(alerts). */
static void emit_passes(tss_engine *e, tss_stream *s) {
    e->c.passes_discord += s->passes_discord;
    e->c.passes_motif += s->passes_motif;
    e->c.pass_failures += s->pass_failures;
    e->c.seconds_discord += s->sec_discord;
    e->c.seconds_motif += s->sec_motif;
    s->passes_discord = s->passes_motif = s->pass_failures = 0;
    s->sec_discord = s->sec_motif = 0.0;
    tssi_engine_emit(e, s, &s->pass_out);
    tssi_engine_emit(e, s, &s->out);
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
            tssi_engine_lose_device(e, tsm_ctx_error(ran));
    }
    for (size_t k = 0; k < e->nfly; k++) {
        e->fly[k]->inflight = 0;
        if (emit_them)
            emit_passes(e, e->fly[k]);
    }
    tssi_engine_emitted(e);
    if (e->nfly && e->fly_work > 0) { /* the cost of the passes, for the next launches' size */
        const double x = e->exec_secs / e->fly_work;
        e->pass_cost = e->pass_cost > 0 ? 0.75 * e->pass_cost + 0.25 * x : x;
    }
    e->nfly = 0;
    return st == TSM_OK ? 0 : -1;
}

int tssi_engine_advance_passes(tss_engine *e, int block, char *err, unsigned errlen) {
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
            tssi_engine_lose_device(e, tsm_ctx_error(e->wide));
    }
    if (!e->threaded && e->nfly && tssi_engine_join(e, 1, rc ? NULL : err, errlen) != 0)
        rc = -1;
    return rc;
}

int tss_engine_flush(tss_engine *e, char *err, unsigned errlen) {
    int rc = 0;
    while (e->nwait || e->nfly) { /* joins, launches the waiting, launch by launch */
        if (tssi_engine_advance_passes(e, 1, rc ? NULL : err, errlen) != 0)
            rc = -1;
        if (e->nfly && tssi_engine_join(e, 1, rc ? NULL : err, errlen) != 0)
            rc = -1;
        if (e->device_lost)
            break;
    }
    return rc;
}
