/* alerts.c - Alert encoding and non-blocking publishing. */
#include "alerts.h"

#include <errno.h>
#include <string.h>

#include <zmq.h>

#include "ingest.h" /* TSD_SCHEMA_VERSION */
#include "log.h"
#include "tsmine.pb-c.h"

void tsd_alerts_init(tsd_alerts *a, void *pub) {
    memset(a, 0, sizeof *a);
    a->pub = pub;
    a->next_id = 1;
}

void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *al) {
    tsd_alerts *a = user;
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
    if ((unsigned)al->kind < TSS_ALERT_KINDS)
        a->found[al->kind]++;

    /* A stream id is at most TSS_MAX_ID bytes and the other fields at most ~100. */
    uint8_t buf[TSS_MAX_ID + 160];
    size_t len = tsmine__v1__alert__get_packed_size(&msg);
    if (len > sizeof buf) {
        a->errors++;
        return;
    }
    tsmine__v1__alert__pack(&msg, buf);
    size_t idlen = strlen(stream_id);
    if (zmq_send(a->pub, stream_id, idlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        if (errno == EAGAIN) {
            a->drops++;
        } else {
            a->errors++;
            tsd_log(TSD_LOG_ERR, "alerts: send: %s", zmq_strerror(errno));
        }
        return;
    }
    /* Once the first frame is queued the pipe takes the rest of the message (the HWM
     * counts whole messages), so this send does not block. */
    if (zmq_send(a->pub, buf, len, 0) < 0) {
        a->errors++;
        tsd_log(TSD_LOG_ERR, "alerts: send: %s", zmq_strerror(errno));
        return;
    }
    if ((unsigned)al->kind < TSS_ALERT_KINDS)
        a->published[al->kind]++;
}
