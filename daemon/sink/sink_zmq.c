/* SPDX-License-Identifier: Apache-2.0 */
/* sink_zmq.c - the ZeroMQ PUB sink (sink.h): every alert as two frames, the stream id
 * (topic) then a packed tsmine.v1.Alert (DESIGN 5.2). Plain PUB semantics (alerts.h):
 * a send never blocks, and a subscriber whose queue is full loses its own copy without
 * the publisher knowing. Its outcome is the alert counters' (counted). */
#include "daemon/sink/sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <zmq.h>

#include "daemon/core/log.h"

typedef struct {
    void *pub;           /* not owned */
    tsd_ratelimit limit; /* log lines about failed sends; the sending thread's */
} zmq_sink;

static int zmq_open(void **self, const tsd_sink_env *env, char *err, size_t errlen) {
    *self = NULL;
    if (!env->pub)
        return 0;
    zmq_sink *z = calloc(1, sizeof *z);
    if (!z) {
        snprintf(err, errlen, "alerts: out of memory");
        return EX_OSERR;
    }
    z->pub = env->pub;
    tsd_ratelimit_init(&z->limit, env->cfg->log_rate_per_s);
    *self = z;
    return 0;
}

/* An alert that did not leave: logged (rate-limited) unless errnum is EAGAIN, which a
 * PUB socket does not return today but would mean "no room" if it did. */
static int dropped(zmq_sink *z, const tsd_alert_rec *r, int errnum, const char *why) {
    if (errnum == EAGAIN)
        return TSD_SINK_NO_ROOM;
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&z->limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_ERR, "alerts: alert %llu not published: %s (%llu similar not logged)",
                (unsigned long long)r->alert_id, why, (unsigned long long)suppressed);
    return TSD_SINK_FAILED;
}

static int zmq_offer(void *self, const tsd_alert_rec *r) {
    zmq_sink *z = self;
    Tsmine__V1__Alert msg;
    tsd_alert_rec_msg(r, &msg);
    /* A stream id is at most TSS_MAX_ID bytes (3 more for its tag and length) and the
     * other fields at most 209 with every varint at its longest (daemon_alerts_test
     * packs that alert). */
    uint8_t buf[TSS_MAX_ID + TSD_ALERT_PACKED_MAX];
    size_t len = tsmine__v1__alert__get_packed_size(&msg);
    if (len > sizeof buf)
        return dropped(z, r, 0, "encoded alert too large");
    tsmine__v1__alert__pack(&msg, buf);
    /* PUB never blocks and never refuses for a full subscriber: it drops that
     * subscriber's copy. The second frame follows a queued first one as a whole
     * message (HWMs count whole messages). */
    if (zmq_send(z->pub, r->stream_id, strlen(r->stream_id), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(z->pub, buf, len, ZMQ_DONTWAIT) < 0) {
        int errnum = errno;
        return dropped(z, r, errnum, zmq_strerror(errnum));
    }
    return TSD_SINK_TAKEN;
}

static void zmq_close_sink(void *self) {
    free(self); /* the socket is the daemon's (sockets.h) */
}

const tsd_sink_ops tsd_sink_zmq = {
    .name = "zmq",
    .counted = 1,
    .open = zmq_open,
    .offer = zmq_offer,
    .close = zmq_close_sink,
};
