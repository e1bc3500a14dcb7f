/* alerts.c - Alert encoding and non-blocking publishing (plain PUB semantics, see
 * alerts.h). */
#include "alerts.h"

#include <errno.h>
#include <string.h>

#include <zmq.h>

#include "ingest.h" /* TSD_SCHEMA_VERSION */
#include "tsmine.pb-c.h"

void tsd_alerts_init(tsd_alerts *a, void *pub, uint32_t log_rate_per_s) {
    memset(a, 0, sizeof *a);
    a->pub = pub;
    a->next_id = 1;
    tsd_ratelimit_init(&a->limit, log_rate_per_s);
}

/* Counts an alert that did not leave; logs (rate-limited) unless errnum is EAGAIN,
 * which a PUB socket does not return today but would mean "no room" if it did. */
static void dropped(tsd_alerts *a, int errnum, const char *why) {
    a->drops++;
    if (errnum == EAGAIN)
        return;
    a->errors++;
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&a->limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_ERR, "alerts: alert %llu not published: %s (%llu similar not logged)",
                (unsigned long long)(a->next_id - 1), why, (unsigned long long)suppressed);
}

/* Encodes and sends one alert; a->next_id is already its id. */
static void send_alert(tsd_alerts *a, Tsmine__V1__Alert *msg) {
    /* A stream id is at most TSS_MAX_ID bytes and the other fields at most ~100. */
    uint8_t buf[TSS_MAX_ID + 160];
    size_t len = tsmine__v1__alert__get_packed_size(msg);
    if (len > sizeof buf) {
        dropped(a, 0, "encoded alert too large");
        return;
    }
    tsmine__v1__alert__pack(msg, buf);
    /* PUB never blocks and never refuses for a full subscriber: it drops that
     * subscriber's copy. The second frame follows a queued first one as a whole
     * message (HWMs count whole messages). */
    if (zmq_send(a->pub, msg->stream_id, strlen(msg->stream_id), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(a->pub, buf, len, ZMQ_DONTWAIT) < 0) {
        int errnum = errno;
        dropped(a, errnum, zmq_strerror(errnum));
        return;
    }
    if ((unsigned)msg->kind < TSS_ALERT_KINDS)
        a->published[msg->kind]++;
}

/* The per-stream sequence number of the alert being published: the engine's count of
 * the stream's alerts (every kind), which already includes this one. One hash lookup. */
static uint64_t stream_seq(const tsd_alerts *a, const char *stream_id) {
    tss_stream_info info;
    if (!a->engine || tss_engine_stream_find(a->engine, stream_id, &info) != 0)
        return 0;
    uint64_t n = 0;
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        n += info.alerts[k];
    return n;
}

void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *al) {
    tsd_alerts *a = user;
    uint64_t t0 = tsd_now_ns();
    Tsmine__V1__Alert msg = TSMINE__V1__ALERT__INIT;
    msg.schema_version = TSD_SCHEMA_VERSION;
    msg.alert_id = a->next_id++;
    msg.stream_id = (char *)stream_id;
    msg.kind = (Tsmine__V1__AlertKind)al->kind;
    msg.start_seq = al->start_seq;
    msg.start_timestamp_ns = al->start_timestamp_ns;
    msg.length = al->length;
    msg.distance = al->distance;
    msg.neighbor_seq = al->neighbor_seq;
    msg.threshold = al->threshold;
    msg.detected_at_ns = tsd_realtime_ns();
    msg.seq = stream_seq(a, stream_id);
    if ((unsigned)al->kind < TSS_ALERT_KINDS)
        a->found[al->kind]++;
    send_alert(a, &msg);
    a->ns_publish += tsd_now_ns() - t0;
}
