/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt_ingest.c - MQTT messages into the engine (mqtt.h): the bounded queue between
 * the client's thread and the main loop, the topic-to-stream rule, and each payload
 * through the ingest path of ZeroMQ (decode.h), counted per reason.
 *
 * Sequence numbers: a protobuf batch carries its own (first_seq, epoch); a JSON
 * payload's "seq" is used when present; otherwise (JSON without "seq", line protocol)
 * each batch takes the stream's next expected number, so the samples of a stream are
 * numbered in arrival order, continuing from the checkpoint after a restart. Such a
 * stream cannot tell a QoS 1 redelivery from new samples: a sender that needs
 * duplicates caught puts "seq" in its payload.
 *
 * A source (source.h) on the connection the MQTT alert sink shares (tsd_mqtt_share):
 * open while a broker is set; its own rejection reasons are json and influx. */
#include "daemon/mqtt/mqtt_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"
#include "daemon/source/mqtt_payload.h"
#include "daemon/source/source.h"

/* Its own rejection reasons (source.h), from m->reason_base on. */
enum { REASON_JSON, REASON_INFLUX };
/* Messages ingested between two looks at the queue, at the stop. */
#define FINISH_BATCH 1024

/* ---- the queue ---- */

void tsd_mqtt__push(tsd_mqtt *m, const char *topic, const void *payload, size_t len) {
    const size_t tlen = strlen(topic);
    tsd_mqtt_msg *x = malloc(sizeof *x + len + tlen + 1);
    pthread_mutex_lock(&m->mu);
    m->count.messages++;
    if (!x) { /* counted as received; the main loop never sees it */
        pthread_mutex_unlock(&m->mu);
        tsd_log(TSD_LOG_ERR, "mqtt: out of memory: a %zu-byte message on %s is lost", len, topic);
        return;
    }
    x->next = NULL;
    x->len = len;
    if (len) /* an empty payload may come as NULL */
        memcpy(x->data, payload, len);
    x->topic = x->data + len;
    memcpy(x->topic, topic, tlen + 1);
    if (m->queued_bytes >= TSD_MQTT_QUEUE_BYTES && !m->stop)
        m->count.queue_waits++;
    while (m->queued_bytes >= TSD_MQTT_QUEUE_BYTES && !m->stop)
        pthread_cond_wait(&m->room, &m->mu); /* TCP and the broker hold the rest */
    const int was_empty = m->head == NULL;
    if (m->tail)
        m->tail->next = x;
    else
        m->head = x;
    m->tail = x;
    m->queued_bytes += len;
    pthread_mutex_unlock(&m->mu);
    if (was_empty) {
        const uint64_t one = 1;
        if (write(m->efd, &one, sizeof one) < 0) { /* only EAGAIN: already readable */
        }
    }
}

/* The oldest message, or NULL. Main thread. */
static tsd_mqtt_msg *pop(tsd_mqtt *m) {
    pthread_mutex_lock(&m->mu);
    tsd_mqtt_msg *x = m->head;
    if (x) {
        m->head = x->next;
        if (!m->head)
            m->tail = NULL;
        m->queued_bytes -= x->len;
        pthread_cond_signal(&m->room);
    }
    pthread_mutex_unlock(&m->mu);
    return x;
}

void tsd_mqtt__queue_free(tsd_mqtt *m) {
    for (tsd_mqtt_msg *x; (x = pop(m));)
        free(x);
}

/* ---- one message ---- */

/* The stream id of a topic: without its first strip_levels levels, after
 * stream_prefix. 0, or -1 when nothing is left or it is longer than TSS_MAX_ID. */
static int topic_stream(const tsd_mqtt *m, const char *topic, char *id) {
    const char *p = topic;
    for (uint32_t k = 0; k < m->strip_levels && p; k++)
        p = (p = strchr(p, '/')) ? p + 1 : NULL;
    if (!p || !*p)
        return -1;
    int n = snprintf(id, TSS_MAX_ID + 1, "%s%s", m->stream_prefix, p);
    return n > 0 && n <= TSS_MAX_ID ? 0 : -1;
}

/* What the payload callbacks need. */
typedef struct {
    tsd_ingest *in;
    tss_engine *e;
    const char *topic_id; /* NULL: the topic gives no stream id */
    const char *peer;
} ctx;

/* One parsed JSON or line-protocol batch into the engine: its stream (the payload's or
 * the topic's), its sequence numbers (the payload's or arrival order, above). */
static void ingest_batch(void *user, const tsd_payload_batch *pb) {
    ctx *c = user;
    Tsmine__V1__SampleBatch b = TSMINE__V1__SAMPLE_BATCH__INIT;
    b.stream_id = (char *)(pb->stream_id ? pb->stream_id : c->topic_id ? c->topic_id : "");
    b.schema_version = TSD_SCHEMA_VERSION;
    tss_stream_info info;
    const int known = b.stream_id[0] && tss_engine_stream_find(c->e, b.stream_id, &info) == 0;
    b.epoch = known ? info.epoch : 0;
    b.first_seq = pb->has_seq ? pb->first_seq : known ? info.next_seq : 0;
    b.values = (double *)pb->values;
    b.n_values = pb->n;
    if (pb->ts_ns) {
        b.timestamps_ns = (int64_t *)pb->ts_ns;
        b.n_timestamps_ns = pb->n;
    }
    tsd_ingest_batch(c->in, c->e, &b, c->peer);
}

/* A protobuf SampleBatch: decoded as on ZeroMQ; one without a stream id takes the
 * topic's. */
static void ingest_protobuf(ctx *c, const tsd_mqtt_msg *x) {
    Tsmine__V1__SampleBatch *b = NULL;
    int r = tsd_decode(&c->in->dec, x->data, x->len, &b);
    if (r != TSS_OK) {
        tsd_ingest_reject(c->in, r, x->len, c->peer, "not a SampleBatch");
        return;
    }
    char *own = b->stream_id;
    if (!own[0] && c->topic_id)
        b->stream_id = (char *)c->topic_id;
    tsd_ingest_batch(c->in, c->e, b, c->peer);
    b->stream_id = own; /* protobuf-c frees its own */
    tsd_decoded_free(&c->in->dec, &b);
}

/* One message: counted, parsed by its format, its batches ingested; a payload that
 * does not parse is counted under its format's reason. */
static void ingest_message(tsd_mqtt *m, tsd_ingest *in, tss_engine *e, const tsd_mqtt_msg *x) {
    char id[TSS_MAX_ID + 1], peer[96];
    snprintf(peer, sizeof peer, "mqtt:%.80s", x->topic);
    ctx c = {in, e, topic_stream(m, x->topic, id) == 0 ? id : NULL, peer};
    tsd_ingest_received(in, x->len);
    if (x->len == 0) {
        tsd_ingest_reject(in, TSS_REJECT_EMPTY, 0, peer, "an empty payload");
        return;
    }
    int format =
        m->format == TSD_PAYLOAD_AUTO ? (int)tsd_payload_detect(x->data, x->len) : m->format;
    char err[256];
    if (format == TSD_PAYLOAD_PROTOBUF)
        ingest_protobuf(&c, x);
    else if (format == TSD_PAYLOAD_JSON &&
             tsd_payload_json(x->data, x->len, ingest_batch, &c, err, sizeof err) != 0)
        tsd_ingest_reject(in, m->reason_base + REASON_JSON, x->len, peer, err);
    else if (format == TSD_PAYLOAD_INFLUX &&
             tsd_payload_influx(x->data, x->len, ingest_batch, &c, err, sizeof err) != 0)
        tsd_ingest_reject(in, m->reason_base + REASON_INFLUX, x->len, peer, err);
}

/* Ingests up to max queued messages, stopping once max_staged samples wait in the
 * engine; returns how many were read, *more set when some are left. */
static size_t drain(tsd_mqtt *m, tsd_ingest *in, tss_engine *e, size_t max, size_t max_staged,
                    int *more) {
    uint64_t v;
    if (read(m->efd, &v, sizeof v) < 0) { /* EAGAIN: nothing signalled; look anyway */
    }
    size_t n = 0;
    for (; n < max && tss_engine_pending(e) < max_staged; n++) {
        tsd_mqtt_msg *x = pop(m);
        if (!x)
            return n;
        ingest_message(m, in, e, x);
        free(x);
    }
    /* left some: signal again, so that the next poll comes back at once */
    pthread_mutex_lock(&m->mu);
    const int left = m->head != NULL;
    pthread_mutex_unlock(&m->mu);
    if (left) {
        const uint64_t one = 1;
        if (write(m->efd, &one, sizeof one) < 0) {
        }
        if (more)
            *more = 1;
    }
    return n;
}

static int mqtt_open(void **self, const tsd_source_env *env, char *err, size_t errlen) {
    tsd_mqtt *m = NULL;
    const int rc = tsd_mqtt_share(&m, env->cfg, err, errlen);
    if (m)
        m->reason_base = env->reason_base;
    *self = m;
    return rc;
}

/* The queue's eventfd: messages wait. */
static size_t mqtt_poll_items(void *self, zmq_pollitem_t *items) {
    items[0] = (zmq_pollitem_t){.fd = ((tsd_mqtt *)self)->efd, .events = ZMQ_POLLIN};
    return 1;
}

static size_t mqtt_drain(void *self, const tsd_source_ctx *c, const zmq_pollitem_t *items,
                         size_t max, size_t max_staged, int *more) {
    return items[0].revents & ZMQ_POLLIN ? drain(self, c->ingest, c->engine, max, max_staged, more)
                                         : 0;
}

/* Disconnects (mqtt.h "Delivery"): the broker keeps what it has not delivered. */
static void mqtt_stop(void *self) {
    tsd_mqtt_stop_ingest(self);
}

/* What the broker delivered was acknowledged, so all of it goes into staging (the queue
 * is bounded), whatever the deadline. */
static size_t mqtt_finish(void *self, const tsd_source_ctx *c, uint64_t deadline, int *unread) {
    size_t n = 0, got;
    (void)deadline;
    while ((got = drain(self, c->ingest, c->engine, FINISH_BATCH, SIZE_MAX, NULL)))
        n += got;
    *unread = 0;
    return n;
}

static void mqtt_close(void *self) {
    tsd_mqtt *m = self;
    tsd_mqtt_unshare(&m);
}

static const char *const reasons[] = {
    [REASON_JSON] = "json",     /* a JSON payload of the wrong shape (mqtt_payload.h) */
    [REASON_INFLUX] = "influx", /* a line-protocol payload that does not parse */
};

const tsd_source_ops tsd_source_mqtt = {
    .name = "mqtt",
    .reasons = reasons,
    .n_reasons = sizeof reasons / sizeof reasons[0],
    .open = mqtt_open,
    .poll_items = mqtt_poll_items,
    .drain = mqtt_drain,
    .stop = mqtt_stop,
    .finish = mqtt_finish,
    .close = mqtt_close,
};
