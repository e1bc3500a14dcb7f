/* SPDX-License-Identifier: Apache-2.0 */
/* alerts.c - Alert numbering, encoding and non-blocking publishing (plain PUB
 * semantics, see alerts.h); the thread that sends them is publisher.c. */
#include "alerts.h"

#include <errno.h>
#include <string.h>

#include <zmq.h>

#include "alert_msg.h"
#include "ingest.h" /* TSD_SCHEMA_VERSION */
#include "publisher.h"
#include "tsmine.pb-c.h"

void tsd_alerts_init(tsd_alerts *a, void *pub, uint32_t log_rate_per_s) {
    memset(a, 0, sizeof *a);
    a->pub = pub;
    a->next_id = 1;
    tsd_ratelimit_init(&a->limit, log_rate_per_s);
}

/* Counts an alert that did not leave; logs (rate-limited) unless errnum is EAGAIN,
 * which a PUB socket does not return today but would mean "no room" if it did. */
static void dropped(tsd_alert_sends *out, tsd_ratelimit *limit, const tsd_alert_rec *r, int errnum,
                    const char *why) {
    const uint64_t id = r->alert_id;
    out->dropped[tsd_alert_slot(r->alert.kind)]++;
    if (errnum == EAGAIN)
        return;
    out->errors++;
    uint64_t suppressed;
    if (tsd_ratelimit_allow(limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_ERR, "alerts: alert %llu not published: %s (%llu similar not logged)",
                (unsigned long long)id, why, (unsigned long long)suppressed);
}

void tsd_alert_rec_msg(const tsd_alert_rec *r, Tsmine__V1__Alert *out) {
    Tsmine__V1__Alert msg = TSMINE__V1__ALERT__INIT;
    tsm_alert_msg_fill(&msg, &r->alert);
    msg.schema_version = TSD_SCHEMA_VERSION;
    msg.alert_id = r->alert_id;
    msg.stream_id = (char *)r->stream_id;
    msg.detected_at_ns = r->detected_at_ns;
    msg.seq = r->seq;
    *out = msg;
}

void tsd_alerts_send(void *pub, const tsd_alert_rec *r, tsd_alert_sends *out,
                     tsd_ratelimit *limit) {
    Tsmine__V1__Alert msg;
    tsd_alert_rec_msg(r, &msg);
    /* A stream id is at most TSS_MAX_ID bytes (3 more for its tag and length) and the
     * other fields at most 209 with every varint at its longest (daemon_alerts_test
     * packs that alert). */
    uint8_t buf[TSS_MAX_ID + TSD_ALERT_PACKED_MAX];
    size_t len = tsmine__v1__alert__get_packed_size(&msg);
    if (len > sizeof buf) {
        dropped(out, limit, r, 0, "encoded alert too large");
        return;
    }
    tsmine__v1__alert__pack(&msg, buf);
    /* PUB never blocks and never refuses for a full subscriber: it drops that
     * subscriber's copy. The second frame follows a queued first one as a whole
     * message (HWMs count whole messages). */
    if (zmq_send(pub, r->stream_id, strlen(r->stream_id), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(pub, buf, len, ZMQ_DONTWAIT) < 0) {
        int errnum = errno;
        dropped(out, limit, r, errnum, zmq_strerror(errnum));
        return;
    }
    out->published[tsd_alert_slot(r->alert.kind)]++;
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

int tsd_alerts_add_sink(tsd_alerts *a, tsd_alert_sink_fn fn, void *user) {
    if (a->nsinks == TSD_ALERT_SINKS)
        return -1;
    a->sinks[a->nsinks++] = (tsd_alert_sink){fn, user};
    return 0;
}

int tsd_alerts_start(tsd_alerts *a, size_t capacity, char *err, size_t errlen) {
    if (a->thread)
        return 0;
    return tsd_publisher_start(&a->thread, a->pub, a->sinks, a->nsinks, capacity, a->limit.rate,
                               err, errlen);
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
        tsd_alerts_send(a->pub, r, &a->own, &a->limit);
        tsd_alert_sinks_call(a->sinks, a->nsinks, r);
        tsd_alerts_sync(a);
    }
    a->ns_publish += tsd_now_ns() - t0;
    if (a->nbatch == TSD_ALERT_BATCH)
        tsd_alerts_flush(a);
}
