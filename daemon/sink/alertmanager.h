/* SPDX-License-Identifier: Apache-2.0 */
/* alertmanager.h - ANOMALY / ANOMALY_END events as Prometheus Alertmanager alerts
 * (HTTP API v2, POST /api/v2/alerts), through libcurl on a thread of its own.
 *
 * An ANOMALY opens an alert (labels alertname="TsmineAnomaly", stream, kind="anomaly",
 * daemon; annotations summary, distance, score, start_time, ..., the views; startsAt = when the
 * daemon detected it; endsAt = now + 4 x resend_interval, as Prometheus does, so that
 * Alertmanager resolves it by itself if the daemon goes away); while it is open it is
 * re-sent every resend_interval; the stream's ANOMALY_END resolves it (the same labels,
 * endsAt = when the event closed). Every URL gets every alert (as Prometheus sends to
 * each Alertmanager of a cluster). A failed request (no connection, timeout, HTTP 5xx
 * or 429) is counted and retried with exponential backoff (0.5 s doubling up to 30 s,
 * or resend_interval when shorter); a request Alertmanager refuses with another 4xx is
 * counted and its alerts dropped for that URL (retrying would fail again).
 *
 * Threads: tsd_am_offer is called by the alert publisher thread (sink_alertmanager.c)
 * and only copies the alert into a bounded queue (full: counted in queue_drops) and
 * wakes the sender; the sender thread owns the events and the HTTP transfers, so the
 * main loop and the publisher never wait for the network. Without libcurl at build
 * time (TSMINE_HAVE_ALERTMANAGER undefined) tsd_am_start refuses a configuration that
 * names a URL. */
#ifndef TSD_ALERTMANAGER_H
#define TSD_ALERTMANAGER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "daemon/sink/sink.h"

typedef struct tsd_am tsd_am;

/* What the sender counted (status and /metrics). */
typedef struct {
    int enabled;           /* 1 when URLs are configured and the thread runs */
    uint64_t sent;         /* firing alerts delivered (one per URL; resends included) */
    uint64_t resolved;     /* resolved alerts delivered (one per URL) */
    uint64_t failures;     /* requests that failed and will be retried */
    uint64_t rejected;     /* alerts Alertmanager refused (HTTP 4xx but 429): dropped */
    uint64_t queue_drops;  /* events lost before the sender: its queue or table was full */
    uint64_t open;         /* events open now (firing) */
    uint64_t orphaned;     /* open events resolved: the engine no longer has them */
    double last_success_s; /* when a request last succeeded (since the epoch), 0 = never */
} tsd_am_counters;

/* The fixed part of every alert: the `daemon` label and the generatorURL ("" = none). */
typedef struct {
    const char *daemon;
    const char *generator_url;
} tsd_am_ident;

/* One event as Alertmanager sees it: its ANOMALY, and its ANOMALY_END once closed. */
typedef struct {
    const tsd_alert_rec *open;
    const tsd_alert_rec *end; /* NULL while the event is open */
} tsd_am_event;

/* Starts the sender for cfg's alertmanager group: *out = NULL and 0 when no URL is
 * configured; -1 with the reason in err when a credential file cannot be read, the
 * build has no libcurl, or the thread cannot start. */
int tsd_am_start(tsd_am **out, const tsc_config *cfg, char *err, size_t errlen);
/* The sink's offer (user = the tsd_am): queues ANOMALY and ANOMALY_END alerts, ignores
 * the other kinds; TSD_SINK_TAKEN, or TSD_SINK_NO_ROOM when the queue is full (counted
 * in queue_drops). Never blocks on the network: O(1) under the queue's lock. */
int tsd_am_offer(void *user, const tsd_alert_rec *r);
/* Queues an open event for a stream whose event was open in the checkpoint (at start,
 * after the restore), so that its alert goes on being re-sent across a restart: an
 * ANOMALY with no details (length 0: only a summary), detected now; Alertmanager keeps
 * the earlier startsAt of the alert it still holds. Its ANOMALY_END resolves it. */
void tsd_am_resume(tsd_am *am, const char *stream_id);
/* Which streams have an event open in the engine, at realtime at_ns (the main thread,
 * every resend_interval): the sender resolves each open event of any other stream that
 * opened before at_ns and was missing from the previous list too, since no ANOMALY_END
 * will come for it (its stream was deleted, expired or evicted, or the ANOMALY_END was
 * lost to a full queue); one miss is not enough, as an ANOMALY_END emitted before at_ns
 * may still be in the publisher's queue. Takes ownership of
 * ids (malloc'd, n entries; NULL when n is 0); a list not yet taken is replaced. */
void tsd_am_reconcile(tsd_am *am, char (*ids)[TSS_MAX_ID + 1], size_t n, int64_t at_ns);
/* A copy of the counters (all 0 when am is NULL). Any thread. */
void tsd_am_counts(tsd_am *am, tsd_am_counters *out);
/* The counters as STATUS and /metrics name them (alertmanager_sent,
 * tsmine_alertmanager_alerts_sent_total, ...): 8 rows into out; returns 8. */
size_t tsd_am_counter_rows(const tsd_am_counters *c, tsd_counter out[8]);
/* Stops the thread (transfers under way are abandoned: open alerts expire at
 * Alertmanager at their endsAt) and frees everything; *am_p = NULL. */
void tsd_am_stop(tsd_am **am_p);

/* The JSON body of one POST /api/v2/alerts: an array of the n events' alerts (firing
 * ones end at firing_ends_ns) into buf (len bytes, NUL-terminated when len > 0).
 * Returns the length the whole body needs, as snprintf does. Pure (alertmanager_body.c). */
size_t tsd_am_body(char *buf, size_t len, const tsd_am_event *ev, size_t n, const tsd_am_ident *id,
                   int64_t firing_ends_ns);

#endif
