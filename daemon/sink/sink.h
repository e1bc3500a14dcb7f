/* SPDX-License-Identifier: Apache-2.0 */
/* sink.h - the contract of an alert sink (DESIGN 5.1): the ZeroMQ PUB socket, MQTT,
 * Alertmanager, the alert log are each one file that fills one tsd_sink_ops table and
 * exports nothing else, and one row of the registry (sink.c, tsd_sink_table) lists it.
 * The core calls only the ops; optional hooks are NULL when unused.
 *
 * Life cycle (daemon.c): open every row at start (a row whose settings leave it off
 * opens to NULL and takes no part), then alerts reach every open sink through offer,
 * in each stream's order, on the sending thread (the publisher thread, alert_publisher.h, or
 * the main thread without one); restore once after the checkpoint's restore; periodic
 * when it asks; reload at every SIGHUP or RELOAD; counters whenever STATUS or /metrics
 * look; close at the end, after the publisher thread has stopped.
 *
 * The alert counters of alerts.h (tsmine_alerts_published_total, ...: "handed to
 * ZeroMQ") follow the outcome of the sink whose ops set `counted` (ZeroMQ's: DESIGN
 * 5.2's subscribers); the other sinks count what they do with an alert themselves. */
#ifndef TSD_SINK_H
#define TSD_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "tsmine.pb-c.h"

/* One numbered alert, as the sinks get it (and the publisher thread queues it). */
typedef struct {
    tss_alert alert;
    uint64_t alert_id, seq;
    int64_t detected_at_ns;
    char stream_id[TSS_MAX_ID + 1]; /* last: the publisher's queue cuts the record after it */
} tsd_alert_rec;

/* The counter slot of an alert kind: the kind, or 0 for a value that is none. */
static inline int tsd_alert_slot(int kind) {
    return kind > 0 && kind < TSS_ALERT_KINDS ? kind : 0;
}

/* The most bytes a packed Alert takes besides its stream id; an alert that would take
 * more is dropped ("encoded alert too large"). */
#define TSD_ALERT_PACKED_MAX 256

/* The Alert message of a numbered alert (its stream_id points into r): the engine's
 * fields (lib/alert_msg.h) with the alert's number, stream and time. */
void tsd_alert_rec_msg(const tsd_alert_rec *r, Tsmine__V1__Alert *msg);

/* What offer did with an alert. */
enum {
    TSD_SINK_TAKEN,   /* sent, or queued by the sink to be sent */
    TSD_SINK_NO_ROOM, /* dropped for want of room (like EAGAIN: not an error) */
    TSD_SINK_FAILED,  /* dropped by a failure (logged by the sink, rate-limited) */
};

/* One counter a sink reports: the STATUS key and the /metrics family it appears as
 * (NULL: not there). Names and help are static strings. */
typedef struct {
    const char *status, *metric;
    const char *type; /* "counter" or "gauge" */
    const char *help;
    uint64_t value;
    double seconds; /* timestamp = 1: a time since the epoch, in /metrics with its
                     * milliseconds (%.3f), in STATUS as whole seconds (value) */
    int timestamp;
} tsd_counter;

/* A row of counts (not a timestamp). */
#define TSD_COUNTER(status, metric, type, help, value)                                             \
    { (status), (metric), (type), (help), (value), 0.0, 0 }

/* Counters one sink may report. */
#define TSD_SINK_ROWS 16
/* Counters all sources and sinks together may report (the snapshot keeps a copy). */
#define TSD_IO_COUNTERS 48

/* What a sink may use to open: the configuration (the sink copies what it keeps) and
 * the daemon's sockets. */
typedef struct {
    const tsc_config *cfg;
    void *pub; /* the PUB socket (sockets.h) */
} tsd_sink_env;

/* The open events of the engine (restore, periodic): the ids of the streams that have
 * an event open, as of at_ns (CLOCK_REALTIME, taken before the walk). */
typedef struct {
    const char (*ids)[TSS_MAX_ID + 1];
    size_t n;
    int64_t at_ns;
} tsd_open_events;

typedef struct tsd_sink_ops {
    const char *name; /* as logs and tests name it */
    int counted;      /* 1: the alert counters of alerts.h follow this sink's outcome */
    /* Opens the sink from env: 0 with *self, or *self NULL when its settings leave it
     * off; a sysexits code with err otherwise (the daemon does not start). */
    int (*open)(void **self, const tsd_sink_env *env, char *err, size_t errlen);
    /* Takes one alert (TSD_SINK_TAKEN, ...). Never blocks: a sink that does I/O copies
     * what it needs into a bounded queue of its own. The sending thread only. */
    int (*offer)(void *self, const tsd_alert_rec *r);
    /* Optional: the events open in the checkpoint, once at start after the restore. */
    void (*restore)(void *self, const tsd_open_events *ev);
    /* Optional: called again after the ns it returns (first at the loop's start), with
     * the events open now. The main thread. */
    uint64_t (*periodic)(void *self, const tsd_open_events *ev);
    /* Optional: SIGHUP or RELOAD (whatever the new file's fate): reopen files. */
    void (*reload)(void *self, const tsc_config *cfg);
    /* Optional: writes its counters into out (at most TSD_SINK_ROWS), returns how
     * many. Any thread. */
    size_t (*counters)(void *self, tsd_counter out[]);
    /* Stops and frees; after the sending thread has stopped. */
    void (*close)(void *self);
} tsd_sink_ops;

/* An open sink. */
typedef struct {
    const tsd_sink_ops *ops;
    void *self;
    uint64_t next_periodic; /* the main thread's: when periodic is due (tsd_now_ns) */
} tsd_sink;

/* The most sinks at once. */
#define TSD_SINKS_MAX 8

/* What the sending side counted (its own thread's copy when threaded), by kind (slot 0:
 * a value that is no kind, which the engine never gives): the outcomes of the counted
 * sink. */
typedef struct {
    uint64_t published[TSS_ALERT_KINDS]; /* handed to ZeroMQ */
    uint64_t dropped[TSS_ALERT_KINDS];   /* not handed to ZeroMQ (encoding or zmq_send) */
    uint64_t queued[TSS_ALERT_KINDS];    /* the thread's: in its queue now */
    uint64_t errors;                     /* of the dropped, failures other than no room */
    uint64_t ns_send;                    /* time spent in the sinks */
} tsd_alert_sends;

/* Adds b's counts into a. */
static inline void tsd_alert_sends_add(tsd_alert_sends *a, const tsd_alert_sends *b) {
    for (int k = 0; k < TSS_ALERT_KINDS; k++) {
        a->published[k] += b->published[k];
        a->dropped[k] += b->dropped[k];
        a->queued[k] += b->queued[k];
    }
    a->errors += b->errors, a->ns_send += b->ns_send;
}

/* Hands r to each of the n sinks in order; the outcome of a counted one goes into out.
 * The one place alerts leave (the publisher thread and alerts.c's synchronous mode). */
void tsd_sinks_offer(const tsd_sink *s, size_t n, const tsd_alert_rec *r, tsd_alert_sends *out);

/* Opens every row of the registry (tsd_sink_table) in order; those that open to NULL
 * are left out. 0 with out[0..*n), or a sysexits code with err (the ones opened are
 * closed). */
int tsd_sinks_open(tsd_sink out[TSD_SINKS_MAX], size_t *n, const tsd_sink_env *env, char *err,
                   size_t errlen);
/* Closes the n sinks; *n = 0. */
void tsd_sinks_close(tsd_sink *s, size_t *n);
/* The rows counters (a counters op of a sink or a source; NULL: none) gives for self,
 * at most max, into out; returns how many. */
size_t tsd_counters_take(size_t (*counters)(void *self, tsd_counter out[]), void *self,
                         tsd_counter *out, size_t max);
/* Appends the counters of the n sinks to out (at most max in all); returns how many. */
size_t tsd_sinks_counters(const tsd_sink *s, size_t n, tsd_counter *out, size_t max);
/* Calls every sink's reload hook. */
void tsd_sinks_reload(const tsd_sink *s, size_t n, const tsc_config *cfg);

#endif
