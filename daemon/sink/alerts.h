/* SPDX-License-Identifier: Apache-2.0 */
/* alerts.h - numbering the engine's alerts (an increasing alert_id, detected_at_ns from
 * CLOCK_REALTIME) and queueing them for the sinks (sink.h): the PUB socket (two frames,
 * the stream id then a packed tsmine.v1.Alert), MQTT, Alertmanager, ... Never blocks
 * the main loop.
 *
 * Plain PUB semantics: ZeroMQ keeps one queue per subscriber, bounded by alerts.hwm;
 * when a subscriber's queue is full, ZeroMQ drops that subscriber's copy and the send
 * still succeeds, so a slow subscriber loses its own alerts and the others lose
 * nothing. Those per-subscriber drops are invisible to the publisher (libzmq 4.3.4
 * exposes no per-subscriber count; daemon/README.md, "Slow subscribers"): each
 * subscriber sees its own losses as gaps in the per-stream `seq` of the alerts it
 * gets. What the publisher can count is an alert that did not leave at all (the
 * publisher thread's queue was full, encoding or zmq_send failed): `dropped`; such an
 * alert consumes its alert_id and seq, so it is a gap for every subscriber of its
 * stream.
 *
 * Counts per kind, exact at every tsd_alerts_sync (issue 17 item 11): every alert the
 * engine produced (found) is published (handed to ZeroMQ), dropped, or queued (on its
 * way: in the batch or the publisher thread's queue), exactly one of them:
 *   found[k] = published[k] + dropped[k] + queued[k]
 * The thread's counts are read under its lock, where an alert moves from queued to
 * published or dropped in one step; queued is 0 once the thread is stopped.
 *
 * Two modes. Without a publisher thread (tsd_alerts_start not called, or stopped),
 * tsd_alerts_publish hands the alert to the sinks on the caller's thread. With one
 * (alert_publisher.h), tsd_alerts_publish only numbers the alert (alert_id, detected_at_ns;
 * seq comes with the alert from the engine) and queues it; the thread hands it to the
 * sinks in queue order, so each stream's alerts keep their order and seq. The counters below
 * are the caller's thread's: tsd_alerts_sync folds in what the thread counted. */
#ifndef TSD_ALERTS_H
#define TSD_ALERTS_H

#include <stdint.h>

#include "daemon/core/log.h"
#include "daemon/sink/sink.h"
#include "engine.h"

typedef struct tsd_publisher tsd_publisher;

/* Alerts numbered and kept for one hand-over to the publisher thread. */
#define TSD_ALERT_BATCH 64

typedef struct {
    uint64_t next_id;                        /* alert_id of the next alert (from 1) */
    uint64_t found[TSS_ALERT_KINDS];         /* handed to tsd_alerts_publish, by kind */
    uint64_t published[TSS_ALERT_KINDS];     /* handed to ZeroMQ (as of the last sync) */
    uint64_t dropped[TSS_ALERT_KINDS];       /* not handed to ZeroMQ: sent to no subscriber */
    uint64_t queued[TSS_ALERT_KINDS];        /* on their way (batch and publisher queue) */
    uint64_t queue_dropped[TSS_ALERT_KINDS]; /* of dropped: refused by a full queue */
    uint64_t drops;                          /* the sum of dropped */
    uint64_t errors;                         /* of those, failures other than EAGAIN (logged) */
    uint64_t ns_send;                        /* the publisher thread's time sending */
    uint64_t ns_publish;                     /* time in tsd_alerts_publish (threaded: numbering
                                              * and queueing only) */
    tsd_ratelimit limit;                     /* log lines about failed sends */
    tsd_alert_sends own;                     /* sent on this thread (no publisher) */
    tsd_publisher *thread;                   /* the publisher thread, or NULL */
    tsd_sink sinks[TSD_SINKS_MAX];           /* where alerts go (tsd_alerts_add_sink; not owned) */
    size_t nsinks;
    tsd_alert_rec batch[TSD_ALERT_BATCH]; /* threaded: numbered, not yet queued */
    size_t nbatch;
} tsd_alerts;

/* log_rate_per_s: the most log lines per second about alerts a full queue refused. */
void tsd_alerts_init(tsd_alerts *a, uint32_t log_rate_per_s);

/* Adds an open sink (sink.h; self stays the caller's) that gets every alert after those
 * added before it; before tsd_alerts_start (the thread copies the sinks when it
 * starts). 0, or -1 when TSD_SINKS_MAX are taken. */
int tsd_alerts_add_sink(tsd_alerts *a, const tsd_sink_ops *ops, void *self);

/* Starts the publisher thread with a queue of capacity bytes (alert_publisher.h); from then on
 * only that thread offers alerts to the sinks, until tsd_alerts_stop. 0, or -1 with a message in
 * err (the alerts stay synchronous). */
int tsd_alerts_start(tsd_alerts *a, size_t capacity, char *err, size_t errlen);
/* Sends what is queued, joins the thread and syncs the counters; no-op when none. */
void tsd_alerts_stop(tsd_alerts *a);
/* Folds the publisher thread's counts into published, dropped, queued, drops and
 * errors, so that found = published + dropped + queued per kind. O(TSD_ALERT_BATCH). */
void tsd_alerts_sync(tsd_alerts *a);

/* Numbers one alert and sends it, or with the publisher thread adds it to the batch,
 * which goes to the thread's queue when full or at tsd_alerts_flush (one lock and one
 * wake-up per batch: the main thread hands over ~400,000 alerts a second at full load,
 * thousands at once when passes are joined); the engine's on_alert callback (user =
 * the tsd_alerts). O(length of the stream id); consumes an alert_id even when the send
 * fails. seq: alert->seq, the stream's count of alerts so far, this one included (the
 * engine sets it before its callback and checkpoints the counts), so 1, 2, 3, ... per
 * stream. */
void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *alert);
/* Queues the batch for the publisher thread (no-op without one, or when empty); the
 * engine's on_alerts_end callback, and tsd_alerts_stop does it first. Counts and logs
 * (rate-limited) the alerts a full queue refused. */
void tsd_alerts_flush(void *user);

#endif
