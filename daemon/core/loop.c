/* SPDX-License-Identifier: Apache-2.0 */
/* loop.c - tsmined's main loop: one thread, zmq_poll over the control socket and the
 * sources' poll items (source.h; and the alert publisher thread beside it, alerts.h,
 * from start to stop).
 *
 * Each iteration: wait for input at most until the next deadline (tick, watchdog);
 * read up to DRAIN_BATCH messages per socket of each source, and no more once the staged
 * samples would take TICK_TARGET_NS to process (bounds, so that control requests and
 * ticks are never starved by a flood); serve control requests; tick
 * as soon as the ingest sockets are empty and samples wait, or when PENDING_TICK
 * samples wait, or when tick_ms has passed since the last tick began (the batching is
 * adaptive: a tick takes what arrived during the one before, so a sample waits for at
 * most the tick in progress under any load, and ticks grow with the load by
 * themselves); then the periodic duties (checkpoint, STATUS= line, metrics snapshot)
 * and the signal flags. A sticky device error (tss_engine_device_lost) ends the loop with a
 * checkpoint and TSD_EXIT_DEVICE_LOST (DESIGN 2; device_lost below). The time of
 * each iteration outside zmq_poll is the daemon's busy time (metrics.h splits it by
 * phase). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <zmq.h>

#include "daemon/core/daemon.h"
#include "daemon/core/signals.h"
#include "daemon/ops/control.h"

/* Messages read from one ingest socket per poll. */
#define DRAIN_BATCH 1024
/* TSD_TICK_TARGET_NS (daemon.h), the longest a tick should take under a flood: a drain
 * stops reading once the staged samples would take about this long to process, at the
 * cost per sample the recent ticks measured (timers.ns_per_sample), and the engine's
 * tick returns after it with the rest still staged (tick_budget_s), so that control
 * requests and the watchdog are served between ticks within about one (plus a launch
 * of passes, TSS_PASS_BATCH_S): on two CPU cores at W = 4096, 1024 messages of 512
 * samples made ticks of seconds and status requests timed out, and before the first
 * estimate a drain of 1024 messages of 4096 random samples held the loop for 53-120 s
 * (issue 17). On the GPU the cost per sample is ~60 ns, so DRAIN_BATCH binds first. */
#define TICK_TARGET_NS TSD_TICK_TARGET_NS
/* Staged samples that trigger a tick even while the ingest sockets still hold more
 * (bounds latency and staging memory under a flood: a full drain stages up to
 * DRAIN_BATCH messages first). */
#define PENDING_TICK (1u << 14)
/* The metrics snapshot's interval: it walks every stream (ring occupancy), too much
 * to do after every tick with 10^4 streams; a scrape sees counters at most this old. */
#define METRICS_NS 100000000ull
/* On SIGTERM (stop): the sources stop taking data first (their stop: ZeroMQ unbinds), then
 * everything libzmq already queued is read into staging, never dropped: at most
 * ingest_hwm messages (from peer_buffer) per connection, the connections bounded by the
 * guard. STOP_READ_NS bounds that reading in time all the same; what is still queued
 * then is left unread (counted as such, not received) and a sender recovers it by
 * resending from the stream's next_seq (docs/protocol.md). One tick processes what it
 * can of the staging, and the checkpoint keeps the rest (processed at the next start). */
#define STOP_READ_NS 5000000000ull
/* STATUS= line interval. */
#define STATUS_NS 2000000000ull
/* Bytes of the publisher thread's queue (alerts.h): about 300,000 alerts of short
 * stream ids, a second of alerts at 10^7 samples/s on the GPU bench. */
#define PUBLISH_QUEUE (32u << 20)

typedef struct {
    uint64_t next_tick, next_checkpoint, next_status, next_metrics, next_sinks;
    long checkpoint_wait_ms; /* the checkpoint in progress wants its next step by then (-1) */
    uint64_t status_samples; /* samples at the last STATUS= line */
    int pressure;            /* memory over budget at the last look (guard.h) */
    uint64_t status_at;
    double ns_per_sample; /* a tick's time per sample it processed (average; 0: none yet) */
} timers;

/* The staged samples a drain may reach before it stops reading (TICK_TARGET_NS);
 * PENDING_TICK until the first estimate (a tick follows at once and makes one). */
static size_t drain_cap(const timers *t) {
    if (t->ns_per_sample <= 0)
        return PENDING_TICK;
    const double cap = TICK_TARGET_NS / t->ns_per_sample;
    return cap < PENDING_TICK ? PENDING_TICK : cap > 1e15 ? SIZE_MAX : (size_t)cap;
}

/* Folds a tick of `ns` that processed `samples` and left `left` staged into
 * t->ns_per_sample. Ticks of fewer than PENDING_TICK samples are dominated by their
 * fixed costs and are left out, unless they ran for their whole budget with samples
 * still staged: then the passes bound the rate (a pass per hop of every stream), and
 * their time per sample, passes included, is the cost a drain must plan for. Leaving
 * those out too kept the estimate unset under a flood of pass-bound streams, and
 * staging unbounded (+20M samples in 3 s under ASan). */
static void note_tick(timers *t, uint64_t ns, size_t samples, size_t left) {
    if (samples < PENDING_TICK && !(left && ns >= TICK_TARGET_NS))
        return;
    const double x = (double)ns / (double)(samples ? samples : 1);
    t->ns_per_sample = t->ns_per_sample > 0 ? 0.75 * t->ns_per_sample + 0.25 * x : x;
}

/* What the sources' drains need (source.h), as of a poll entered at `polled`. */
static tsd_source_ctx source_ctx(tsd_daemon *d, uint64_t polled, int revents_valid) {
    return (tsd_source_ctx){.ingest = &d->ingest,
                            .engine = d->engine,
                            .guard = d->guard,
                            .security = d->sock.security,
                            .polled = polled,
                            .revents_valid = revents_valid};
}

/* Before the process ends (stop, device_lost): every source stops taking more (once),
 * then reads everything already queued into staging, until STOP_READ_NS has passed.
 * Nothing read is dropped. Returns the messages read; *unread: 1 when the time ran out
 * with more queued. */
static size_t drain_queued(tsd_daemon *d, int *unread) {
    const uint64_t start = tsd_now_ns();
    const tsd_source_ctx ctx = source_ctx(d, start, 0);
    for (size_t i = 0; !d->ingest_stopped && i < d->nsources; i++)
        d->sources[i].ops->stop(d->sources[i].self);
    d->ingest_stopped = 1; /* (a device lost in the stop's own tick comes here again) */
    size_t n = 0;
    *unread = 0;
    for (size_t i = 0; i < d->nsources; i++) {
        int more = 0;
        n += d->sources[i].ops->finish(d->sources[i].self, &ctx, start + STOP_READ_NS, &more);
        *unread |= more;
    }
    return n;
}

/* The words of the closing log line about the checkpoint (ck: its result): how many
 * of the streams are saved, counting exactly those of the files that failed. */
static const char *saved(const tsd_daemon *d, int ck, char *buf, size_t len) {
    const size_t n = tss_engine_stream_count(d->engine);
    tsd_ckpt_stats st = {0};
    if (d->ckpt)
        tsd_ckpt_job_stats(d->ckpt, &st);
    if (!d->state_dir[0])
        snprintf(buf, len, "%zu streams not saved (no state_dir)", n);
    else if (ck == 0)
        snprintf(buf, len, "%zu streams checkpointed", n);
    else if (st.last_all_failed)
        snprintf(buf, len, "%zu streams NOT checkpointed (out of memory)", n);
    else
        snprintf(buf, len, "%zu streams checkpointed, %llu NOT checkpointed (their files failed)",
                 n - (st.last_failed_streams < n ? (size_t)st.last_failed_streams : n),
                 (unsigned long long)st.last_failed_streams);
    return buf;
}

/* A sticky device error (DESIGN 2): nothing more can run on the device, but every
 * window, sequence number and staged sample is host memory. Says why (log, STATUS=),
 * sends STOPPING=1, reads what is already queued into staging (ingest touches only
 * the host; staged samples are checkpointed), writes the checkpoint and returns
 * TSD_EXIT_DEVICE_LOST so that systemd restarts the process. */
static int device_lost(tsd_daemon *d, const char *why) {
    tsd_log(TSD_LOG_ERR, "tick: %s: the device is lost; checkpointing and exiting %d", why,
            TSD_EXIT_DEVICE_LOST);
    char line[1200];
    snprintf(line, sizeof line, "device lost (%s): checkpointing, exiting %d", why,
             TSD_EXIT_DEVICE_LOST);
    tsd_notify_status(line);
    tsd_notify_stopping();
    int unread;
    size_t n = drain_queued(d, &unread);
    int ck = tsd_daemon_checkpoint(d);
    char words[160];
    tsd_log(TSD_LOG_ERR, "device lost: %zu queued messages read%s, %s", n,
            unread ? " (more left unread: time ran out)" : "", saved(d, ck, words, sizeof words));
    return TSD_EXIT_DEVICE_LOST;
}

/* Ticks the engine; returns 0, or TSD_EXIT_DEVICE_LOST when the device is lost (the
 * checkpoint written). */
static int tick(tsd_daemon *d) {
    char err[1024];
    const int rc = tss_engine_tick(d->engine, err, sizeof err);
    tsd_guard_settled(d->guard);
    if (rc == 0)
        return 0;
    if (tss_engine_device_lost(d->engine))
        return device_lost(d, err);
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&d->tick_limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_ERR, "tick: %s (the passes concerned are skipped; %llu similar not logged)",
                err, (unsigned long long)suppressed);
    return 0;
}

/* Every STATUS_NS: systemd's STATUS= line, and the summaries of log lines the rate
 * limits held back (so that a burst's count comes even when nothing follows it). */
static void status_line(tsd_daemon *d, timers *t, uint64_t now) {
    tsd_ingest_flush_log(&d->ingest);
    tsd_ratelimit_flush(&d->control_limit, now, TSD_LOG_WARNING, "control request refusals");
    tsd_ratelimit_flush(&d->tick_limit, now, TSD_LOG_ERR, "tick failures");
    tsd_log_flush();
    double secs = (double)(now - t->status_at) * 1e-9;
    uint64_t samples = d->ingest.count.samples;
    char line[256];
    snprintf(line, sizeof line, "%zu streams, %.0f samples/s, backend %s",
             tss_engine_stream_count(d->engine),
             secs > 0 ? (double)(samples - t->status_samples) / secs : 0.0,
             tsm_backend_name(tss_engine_backend(d->engine)));
    tsd_notify_status(line);
    t->status_samples = samples;
    t->status_at = now;
    t->next_status = now + STATUS_NS;
}

/* Milliseconds to wait in zmq_poll: until the next tick, checkpoint or watchdog, at
 * least 0 (a checkpoint is not left waiting for a long tick_ms). */
static long poll_timeout(const tsd_daemon *d, const timers *t, uint64_t now) {
    uint64_t wait = t->next_tick > now ? t->next_tick - now : 0;
    uint64_t wd = tsd_notify_watchdog_wait(&d->notify, now);
    if (wd < wait)
        wait = wd;
    uint64_t ck = t->next_checkpoint > now ? t->next_checkpoint - now : 0;
    if (d->cfg.checkpoint_interval_s && ck < wait)
        wait = ck;
    if (t->checkpoint_wait_ms >= 0 && (uint64_t)t->checkpoint_wait_ms * 1000000ull < wait)
        wait = (uint64_t)t->checkpoint_wait_ms * 1000000ull; /* its steps go on */
    return (long)((wait + 999999) / 1000000);
}

/* SIGTERM/SIGINT, in bounded time (STOP_READ_NS above): stop taking more, read what is
 * already queued into staging (drain_queued: none of it dropped), process what one
 * tick can, checkpoint (which waits for the passes in flight, about TSS_PASS_BATCH_S;
 * the streams still waiting for theirs, and samples still staged, are saved and go on
 * at the next start). Returns 0, or EX_IOERR when the checkpoint failed (systemd sees
 * the state was not saved). */
static int stop(tsd_daemon *d) {
    const uint64_t t0 = tsd_now_ns();
    tsd_notify_stopping();
    int unread;
    size_t n = drain_queued(d, &unread);
    const uint64_t read_ns = tsd_now_ns() - t0;
    int rc = tick(d);
    if (rc != 0)
        return rc; /* the device was lost in this tick: device_lost checkpointed */
    const size_t staged = tss_engine_pending(d->engine);
    int ck = tsd_daemon_checkpoint(d);
    char words[160];
    tsd_log(unread || ck ? TSD_LOG_WARNING : TSD_LOG_NOTICE,
            "stopping: %zu queued messages read in %.2f s, none dropped%s, %zu samples left "
            "staged, %s, in %.2f s; %llu messages received in all",
            n, (double)read_ns * 1e-9,
            unread ? " (time ran out with more queued: the senders resend it from next_seq)" : "",
            staged, saved(d, ck, words, sizeof words), (double)(tsd_now_ns() - t0) * 1e-9,
            (unsigned long long)d->ingest.count.messages);
    return ck == 0 || !d->state_dir[0] ? 0 : EX_IOERR;
}

/* The poll set: the control socket first, then each source's items (source.h); returns
 * how many. */
static int poll_items(tsd_daemon *d, zmq_pollitem_t *items) {
    items[0] = (zmq_pollitem_t){.socket = d->sock.control, .events = ZMQ_POLLIN};
    size_t n = 1;
    for (size_t i = 0; i < d->nsources; i++) {
        tsd_source *s = &d->sources[i];
        s->item = n;
        s->n_items = s->ops->poll_items(s->self, items + n);
        n += s->n_items;
    }
    return (int)n;
}

/* Each source reads what the poll found (bounded: DRAIN_BATCH messages per socket and
 * drain_cap staged samples); *more |= 1 when a bound stopped one. */
static void drain_sources(tsd_daemon *d, const timers *t, const zmq_pollitem_t *items, int nitems,
                          const tsd_source_ctx *ctx, int *more) {
    int readable = 0; /* the time is the receive phase's only when there was input */
    for (int k = 1; k < nitems; k++)
        readable |= items[k].revents & ZMQ_POLLIN;
    const uint64_t t0 = readable ? tsd_now_ns() : 0;
    for (size_t i = 0; i < d->nsources; i++) {
        const tsd_source *s = &d->sources[i];
        s->ops->drain(s->self, ctx, items + s->item, DRAIN_BATCH, drain_cap(t), more);
    }
    if (readable)
        d->ns_drain += tsd_now_ns() - t0;
}

/* The loop of tsd_daemon_run, with the publisher thread running. */
static int run(tsd_daemon *d) {
    zmq_pollitem_t items[1 + TSD_SOURCES_MAX * TSD_SOURCE_ITEMS];
    const int nitems = poll_items(d, items);
    uint64_t now = tsd_now_ns();
    timers t = {.next_tick = now, .status_at = now, .checkpoint_wait_ms = -1};
    t.next_checkpoint = now + (uint64_t)d->cfg.checkpoint_interval_s * 1000000000ull;
    char ready[256];
    snprintf(ready, sizeof ready, "ready: %zu streams restored, backend %s",
             tss_engine_stream_count(d->engine), tsm_backend_name(tss_engine_backend(d->engine)));
    tsd_notify_ready(ready);
    tsd_log(TSD_LOG_NOTICE, "%s", ready);
    tsd_notify_watchdog(&d->notify, now);

    int rc = 0;
    while (!tsd_flag_stop) {
        const uint64_t polled = tsd_now_ns();
        const int ready = zmq_poll(items, nitems, poll_timeout(d, &t, polled));
        if (ready < 0 && errno != EINTR) {
            tsd_log(TSD_LOG_ERR, "zmq_poll: %s", zmq_strerror(errno));
            rc = EX_OSERR;
            break;
        }
        uint64_t woke = tsd_now_ns();
        /* A socket that zmq_poll found without a whole message was empty after `polled`:
         * the guard learns that unread bytes there are a message that has not ended. (Not
         * after EINTR: revents were not filled in.) */
        if (ready >= 0 && !(items[0].revents & ZMQ_POLLIN))
            tsd_guard_emptied(d->guard, TSD_SOCK_CONTROL, polled);
        int more = 0; /* a drain stopped at a bound: the socket may hold more */
        const tsd_source_ctx ctx = source_ctx(d, polled, ready >= 0);
        drain_sources(d, &t, items, nitems, &ctx, &more);
        if (items[0].revents & ZMQ_POLLIN) {
            tsd_alerts_sync(&d->alerts); /* the counters control reports */
            tsd_control_serve(d);
        }

        now = tsd_now_ns();
        const size_t pending = tss_engine_pending(d->engine);
        if (now >= t.next_tick || pending >= PENDING_TICK || (pending && !more)) {
            uint64_t started = now;
            if ((rc = tick(d)) != 0)
                break;
            now = tsd_now_ns();
            const size_t left = tss_engine_pending(d->engine); /* nothing arrives meanwhile */
            note_tick(&t, now - started, pending > left ? pending - left : 0, left);
            /* Fixed rate, not fixed delay: the next tick is due tick_ms after this one
             * STARTED, so a sample waits at most tick_ms plus the tick in progress,
             * however long ticks take; after an overrun the next tick runs at once
             * (after one drain), without catching up on the ones missed. */
            t.next_tick = started + (uint64_t)d->cfg.tick_ms * 1000000ull;
        }
        if (now >= t.next_sinks) /* the sinks' periodic hooks (Alertmanager's reconcile) */
            t.next_sinks = tsd_daemon_sinks_periodic(d, now);
        if (d->metrics && now >= t.next_metrics) {
            tsd_metrics_snapshot snap;
            tsd_alerts_sync(&d->alerts);
            tsd_daemon_snapshot(d, &snap);
            tsd_metrics_publish(d->metrics, &snap);
            t.next_metrics = now + METRICS_NS;
        }
        /* Memory just went over budget: checkpoint now, so that if the kernel or an
         * allocation failure ends the process all the same, little is lost. */
        const int pressure = tsd_guard_pressure(d->guard);
        if (pressure && !t.pressure && d->cfg.checkpoint_interval_s)
            t.next_checkpoint = now;
        t.pressure = pressure;
        /* checkpoints go in steps of well under a millisecond between the other work
         * (ckpt_job.h); SIGUSR1 asks for one now */
        if (tsd_flag_checkpoint || (d->cfg.checkpoint_interval_s && now >= t.next_checkpoint)) {
            tsd_flag_checkpoint = 0;
            tsd_daemon_checkpoint_start(d);
            t.next_checkpoint = now + (uint64_t)d->cfg.checkpoint_interval_s * 1000000000ull;
        }
        t.checkpoint_wait_ms = tsd_daemon_checkpoint_step(d);
        if (now >= t.next_status)
            status_line(d, &t, now);
        tsd_notify_watchdog(&d->notify, now);
        if (tsd_flag_reload) {
            tsd_flag_reload = 0;
            char msg[2048];
            tsd_daemon_reload(d, msg, sizeof msg);
        }
        d->ns_busy += tsd_now_ns() - woke;
    }
    if (rc == TSD_EXIT_DEVICE_LOST)
        return rc; /* checkpointed by device_lost */
    if (rc != 0) { /* zmq_poll failed: save what there is, then fail */
        tsd_notify_stopping();
        tsd_daemon_checkpoint(d);
        return rc;
    }
    return stop(d);
}

int tsd_daemon_run(tsd_daemon *d) {
    char err[256];
    /* under an address-space limit, at most half of what may still be mapped */
    const uint64_t room = tsd_daemon_as_room(d) / 2;
    const size_t queue =
        room < PUBLISH_QUEUE ? (size_t)(room > (1u << 20) ? room : 1u << 20) : PUBLISH_QUEUE;
    if (tsd_alerts_start(&d->alerts, queue, err, sizeof err) != 0)
        tsd_log(TSD_LOG_WARNING, "%s: alerts are sent from the main loop", err);
    int rc = run(d);
    tsd_alerts_stop(&d->alerts); /* every queued alert leaves before the sockets close */
    return rc;
}
