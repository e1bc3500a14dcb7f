/* SPDX-License-Identifier: Apache-2.0 */
/* alerts.c - Alert numbering and queueing (alerts.h); the thread that hands them to the
 * sinks is alert_publisher.c, the sinks are sink.h's. */
#include "daemon/sink/alerts.h"

#include <string.h>

#include "daemon/sink/alert_publisher.h"

void tsd_alerts_init(tsd_alerts *a, uint32_t log_rate_per_s) {
    memset(a, 0, sizeof *a);
    a->next_id = 1;
    tsd_ratelimit_init(&a->limit, log_rate_per_s);
}

void tsd_alerts_sync(tsd_alerts *a) {
    tsd_alert_sends sent = a->own;
    if (a->thread) {
        tsd_alert_sends t;
        tsd_publisher_counts(a->thread, &t); /* one consistent copy, under its lock */
        tsd_alert_sends_add(&sent, &t);
    }
    a->drops = 0;
    for (int k = 0; k < TSS_ALERT_KINDS; k++) {
        a->published[k] = sent.published[k];
        a->dropped[k] = sent.dropped[k] + a->queue_dropped[k];
        a->queued[k] = sent.queued[k];
        a->drops += a->dropped[k];
    }
    for (size_t i = 0; i < a->nbatch; i++) /* numbered, not handed to the thread yet */
        a->queued[tsd_alert_slot(a->batch[i].alert.kind)]++;
    a->errors = sent.errors;
    a->ns_send = sent.ns_send;
}

int tsd_alerts_add_sink(tsd_alerts *a, const tsd_sink_ops *ops, void *self) {
    if (a->nsinks == TSD_SINKS_MAX)
        return -1;
    a->sinks[a->nsinks++] = (tsd_sink){.ops = ops, .self = self};
    return 0;
}

int tsd_alerts_start(tsd_alerts *a, size_t capacity, char *err, size_t errlen) {
    if (a->thread)
        return 0;
    return tsd_publisher_start(&a->thread, a->sinks, a->nsinks, capacity, err, errlen);
}

void tsd_alerts_stop(tsd_alerts *a) {
    if (!a->thread)
        return;
    tsd_alerts_flush(a);
    tsd_alert_sends t;
    tsd_publisher_stop(&a->thread, &t); /* sends what is queued first */
    tsd_alert_sends_add(&a->own, &t);
    tsd_alerts_sync(a);
}

void tsd_alerts_flush(void *user) {
    tsd_alerts *a = user;
    if (!a->thread || a->nbatch == 0)
        return;
    uint64_t t0 = tsd_now_ns();
    uint64_t refused[TSS_ALERT_KINDS] = {0};
    const size_t n = a->nbatch, queued = tsd_publisher_push(a->thread, a->batch, n, refused);
    a->nbatch = 0;
    if (queued < n) {
        for (int k = 0; k < TSS_ALERT_KINDS; k++) /* like EAGAIN, not an error */
            a->queue_dropped[k] += refused[k];
        uint64_t suppressed;
        if (tsd_ratelimit_allow(&a->limit, t0, &suppressed))
            tsd_log(TSD_LOG_WARNING,
                    "alerts: %zu of alerts %llu-%llu not published: the publisher queue is "
                    "full (%llu similar not logged)",
                    n - queued, (unsigned long long)a->batch[0].alert_id,
                    (unsigned long long)a->batch[n - 1].alert_id, (unsigned long long)suppressed);
    }
    a->ns_publish += tsd_now_ns() - t0;
}

void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *al) {
    tsd_alerts *a = user;
    uint64_t t0 = tsd_now_ns();
    tsd_alert_rec one, *r = a->thread ? &a->batch[a->nbatch++] : &one;
    r->alert = *al;
    r->alert_id = a->next_id++;
    r->seq = al->seq; /* the engine's per-stream count */
    r->detected_at_ns = tsd_realtime_ns();
    size_t n = strnlen(stream_id, TSS_MAX_ID);
    memcpy(r->stream_id, stream_id, n);
    r->stream_id[n] = '\0';
    a->found[tsd_alert_slot(al->kind)]++;
    if (!a->thread) {
        tsd_sinks_offer(a->sinks, a->nsinks, r, &a->own);
        tsd_alerts_sync(a);
    }
    a->ns_publish += tsd_now_ns() - t0;
    if (a->nbatch == TSD_ALERT_BATCH)
        tsd_alerts_flush(a);
}
