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
 * gets. What the publisher can count is an alert that did not leave at all (encoding
 * or zmq_send failed): `drops`; such an alert consumes its seq, so it is a gap for
 * every subscriber of its stream. */
#ifndef TSD_ALERTS_H
#define TSD_ALERTS_H

#include <stdint.h>

#include "engine.h"
#include "log.h"

typedef struct {
    void *pub;                           /* the PUB socket (not owned) */
    const tss_engine *engine;            /* per-stream alert counts -> seq (not owned);
                                          * NULL: seq left 0 */
    uint64_t next_id;                    /* alert_id of the next alert (from 1) */
    uint64_t found[TSS_ALERT_KINDS];     /* handed to tsd_alerts_publish, by kind */
    uint64_t published[TSS_ALERT_KINDS]; /* handed to ZeroMQ */
    uint64_t drops;                      /* not handed to ZeroMQ: sent to no subscriber */
    uint64_t errors;                     /* of those, failures other than EAGAIN (logged) */
    uint64_t ns_publish;                 /* time in tsd_alerts_publish (encode and send) */
    tsd_ratelimit limit;                 /* log lines about failed sends */
} tsd_alerts;

/* log_rate_per_s: the most log lines per second about failed sends. */
void tsd_alerts_init(tsd_alerts *a, void *pub, uint32_t log_rate_per_s);

/* Encodes and sends one alert; the engine's on_alert callback (user = the tsd_alerts).
 * O(length of the stream id); consumes an alert_id even when the send fails. seq: the
 * stream's count of alerts so far, this one included (the engine counts each alert
 * before its callback and checkpoints the counts), so 1, 2, 3, ... per stream. */
void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *alert);

#endif
