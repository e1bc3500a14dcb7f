/* SPDX-License-Identifier: Apache-2.0 */
/* alerts.h - publishing the engine's alerts on the PUB socket: two frames, the stream
 * id (topic) then a packed tsmine.v1.Alert with an increasing alert_id and
 * detected_at_ns from CLOCK_REALTIME. Never blocks the main loop.
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
 * tsd_alerts_publish encodes and sends on the caller's thread. With one (publisher.h),
 * tsd_alerts_publish only numbers the alert (alert_id, detected_at_ns; seq comes
 * with the alert from the engine) and queues it; the thread encodes and sends in
 * queue order, so each stream's alerts keep their order and seq. The counters below
 * are the caller's thread's: tsd_alerts_sync folds in what the thread counted. */
#ifndef TSD_ALERTS_H
#define TSD_ALERTS_H

#include <stdint.h>

#include "engine.h"
#include "log.h"
#include "tsmine.pb-c.h"

typedef struct tsd_publisher tsd_publisher;

/* One numbered alert, as queued for the publisher thread. */
typedef struct {
    tss_alert alert;
    uint64_t alert_id, seq;
    int64_t detected_at_ns;
    char stream_id[TSS_MAX_ID + 1];
} tsd_alert_rec;

/* What the sending side counted (its own thread's copy when threaded), by kind (slot 0:
 * a value that is no kind, which the engine never gives). */
typedef struct {
    uint64_t published[TSS_ALERT_KINDS]; /* handed to ZeroMQ */
    uint64_t dropped[TSS_ALERT_KINDS];   /* not handed to ZeroMQ (encoding or zmq_send) */
    uint64_t queued[TSS_ALERT_KINDS];    /* the thread's: in its queue now */
    uint64_t errors;                     /* of the dropped, failures other than EAGAIN */
    uint64_t ns_send;                    /* time spent encoding and sending them */
} tsd_alert_sends;

/* The counter slot of an alert kind: the kind, or 0 for a value that is none. */
static inline int tsd_alert_slot(int kind) {
    return kind > 0 && kind < TSS_ALERT_KINDS ? kind : 0;
}

/* Adds b's counts into a. */
static inline void tsd_alert_sends_add(tsd_alert_sends *a, const tsd_alert_sends *b) {
    for (int k = 0; k < TSS_ALERT_KINDS; k++) {
        a->published[k] += b->published[k];
        a->dropped[k] += b->dropped[k];
        a->queued[k] += b->queued[k];
    }
    a->errors += b->errors, a->ns_send += b->ns_send;
}

/* A sink besides the PUB socket (DESIGN 5.1: Alertmanager, MQTT): called on the
 * sending thread (the publisher thread, or the main thread without one) with every
 * alert right after its PUB send, whatever that send's outcome, in each stream's
 * order. It must not block: copy what it needs into its own queue and return. */
typedef void (*tsd_alert_sink_fn)(void *user, const tsd_alert_rec *r);
typedef struct {
    tsd_alert_sink_fn fn;
    void *user;
} tsd_alert_sink;
#define TSD_ALERT_SINKS 4

/* Hands r to each of the n sinks. */
static inline void tsd_alert_sinks_call(const tsd_alert_sink *s, size_t n, const tsd_alert_rec *r) {
    for (size_t i = 0; i < n; i++)
        s[i].fn(s[i].user, r);
}

/* Alerts numbered and kept for one hand-over to the publisher thread. */
#define TSD_ALERT_BATCH 64

typedef struct {
    void *pub;                               /* the PUB socket (not owned) */
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
    tsd_alert_sink sinks[TSD_ALERT_SINKS];   /* besides the PUB socket (tsd_alerts_add_sink) */
    size_t nsinks;
    tsd_alert_rec batch[TSD_ALERT_BATCH]; /* threaded: numbered, not yet queued */
    size_t nbatch;
} tsd_alerts;

/* log_rate_per_s: the most log lines per second about failed sends. */
void tsd_alerts_init(tsd_alerts *a, void *pub, uint32_t log_rate_per_s);

/* Adds a sink that gets every alert after the PUB socket; before tsd_alerts_start
 * (the thread copies the sinks when it starts). 0, or -1 when TSD_ALERT_SINKS are
 * taken. */
int tsd_alerts_add_sink(tsd_alerts *a, tsd_alert_sink_fn fn, void *user);

/* Starts the publisher thread with a queue of capacity bytes (publisher.h); from then on only that
 * thread uses the PUB socket, until tsd_alerts_stop. 0, or -1 with a message in err
 * (the alerts stay synchronous). */
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

/* Encodes and sends one numbered alert on pub, counting into *out; failures logged
 * through limit. The sending side of both modes (the sinks come after it). */
void tsd_alerts_send(void *pub, const tsd_alert_rec *r, tsd_alert_sends *out, tsd_ratelimit *limit);

/* The most bytes a packed Alert takes besides its stream id; an alert that would take
 * more is dropped ("encoded alert too large"). */
#define TSD_ALERT_PACKED_MAX 256

/* The Alert message of a numbered alert (its stream_id points into r): the engine's
 * fields (tools/lib/alert_msg.h) with the alert's number, stream and time. */
void tsd_alert_rec_msg(const tsd_alert_rec *r, Tsmine__V1__Alert *msg);

#endif
