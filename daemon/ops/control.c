/* SPDX-License-Identifier: Apache-2.0 */
/* control.c - ControlRequest -> ControlReply on the control socket, a ROUTER serving REQ
 * clients: the envelope (routing id, empty delimiter) is handled here (sockets.c: why
 * not REP). */
#include "daemon/ops/control.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "daemon/ops/counters.h"
#include "daemon/state/ckpt_job.h"
#include "tsmine.pb-c.h"

#ifndef TSMINE_VERSION
#define TSMINE_VERSION "unknown"
#endif

/* Requests served per tsd_control_serve call. */
#define CONTROL_BATCH 8
/* The most counters a reply carries, over its fields. */
#define STATUS_MAX 256

/* A reply under construction; everything it points to lives here or in static
 * storage, and reply_free releases it. */
typedef struct {
    Tsmine__V1__ControlReply msg;
    Tsmine__V1__StreamState *states, **state_ptrs;
    Tsmine__V1__Counter counters[STATUS_MAX];
    size_t n_counters;
    Tsmine__V1__Counter *field[TSD_STATUS_FIELDS][STATUS_MAX]; /* the reply's fields */
    size_t n_field[TSD_STATUS_FIELDS];
    char names[STATUS_MAX][48];
    char error[512], message[2048];
} reply_builder;

static void fail(reply_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(reply_builder *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->error, sizeof b->error, fmt, ap);
    va_end(ap);
    b->msg.ok = 0;
    b->msg.error = b->error;
}

/* Adds a counter to one of the reply's repeated Counter fields (TSD_STATUS_...). */
static void counter(reply_builder *b, int field, const char *name, uint64_t value) {
    if (b->n_counters >= sizeof b->counters / sizeof b->counters[0])
        return;
    size_t i = b->n_counters++;
    Tsmine__V1__Counter *c = &b->counters[i];
    tsmine__v1__counter__init(c);
    snprintf(b->names[i], sizeof b->names[i], "%s", name);
    c->name = b->names[i];
    c->value = value;
    b->field[field][b->n_field[field]++] = c;
}

static void state_of(const tss_stream_info *in, Tsmine__V1__StreamState *s, char *id) {
    tsmine__v1__stream_state__init(s);
    strcpy(id, in->id);
    s->stream_id = id;
    s->samples = in->samples;
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        s->alerts += in->alerts[k];
    s->next_seq = in->next_seq;
    s->window_fill = in->window_fill;
    s->window = in->params.window;
    s->subsequence = in->params.subsequence;
    s->hop = in->params.hop;
    s->range = in->range;
    s->calibrated = in->calibrated != 0;
    s->gaps = in->gaps;
    s->rejected = in->rejected;
    s->subsequence_auto = in->subsequence_auto != 0;
    s->period = in->period;
    s->threshold = in->params.threshold;
    s->event_open = in->event_open != 0;
    s->events = in->events;
    s->last_score = in->last_score;
    s->warmup = in->params.warmup;
    s->epoch = in->epoch;
    s->idle_seconds = in->idle_s;
}

/* Room for n StreamStates and their ids, in one allocation. */
static int alloc_states(reply_builder *b, size_t n) {
    size_t one = sizeof(Tsmine__V1__StreamState) + sizeof(void *) + TSS_MAX_ID + 1;
    char *mem = malloc(n ? n * one : 1);
    if (!mem)
        return -1;
    b->states = (Tsmine__V1__StreamState *)mem;
    b->state_ptrs = (Tsmine__V1__StreamState **)(mem + n * sizeof *b->states);
    return 0;
}

static char *state_id(reply_builder *b, size_t n, size_t i) {
    return (char *)(b->state_ptrs + n) + i * (TSS_MAX_ID + 1);
}

/* Every stream's state into b (STATUS). */
static int all_streams(tsd_daemon *d, reply_builder *b) {
    size_t n = tss_engine_stream_count(d->engine);
    if (alloc_states(b, n) != 0) {
        fail(b, "out of memory for %zu streams", n);
        return -1;
    }
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        tss_stream_info info;
        if (tss_engine_stream_at(d->engine, i, &info) != 0)
            continue;
        state_of(&info, &b->states[got], state_id(b, n, got));
        b->state_ptrs[got] = &b->states[got];
        got++;
    }
    b->msg.streams = b->state_ptrs;
    b->msg.n_streams = got;
    return 0;
}

/* One series of the counter table that has a STATUS key into b. */
static void status_series(void *ctx, const tsd_series *x) {
    if (x->status)
        counter(ctx, x->field, x->status, x->status_value);
}

/* The daemon's counters into b (STATUS and COUNTERS): the counter table's (counters.h). */
static void counters(tsd_daemon *d, reply_builder *b) {
    tsd_metrics_snapshot s;
    tsd_daemon_snapshot(d, &s);
    tsd_counters_walk(&s, status_series, b);
    b->msg.rejected = b->field[TSD_STATUS_REJECTED];
    b->msg.n_rejected = b->n_field[TSD_STATUS_REJECTED];
    b->msg.alerts_by_kind = b->field[TSD_STATUS_ALERTS_BY_KIND];
    b->msg.n_alerts_by_kind = b->n_field[TSD_STATUS_ALERTS_BY_KIND];
    b->msg.counters = b->field[TSD_STATUS_COUNTERS];
    b->msg.n_counters = b->n_field[TSD_STATUS_COUNTERS];
}

static void one_stream(tsd_daemon *d, const char *id, reply_builder *b) {
    tss_stream_info info;
    if (tss_engine_stream_find(d->engine, id, &info) != 0) {
        fail(b, "unknown stream \"%.*s\"", TSS_MAX_ID, id);
        return;
    }
    if (alloc_states(b, 1) != 0) {
        fail(b, "out of memory");
        return;
    }
    state_of(&info, &b->states[0], state_id(b, 1, 0));
    b->state_ptrs[0] = &b->states[0];
    b->msg.streams = b->state_ptrs;
    b->msg.n_streams = 1;
}

/* RESET_STREAM or DELETE_STREAM of one stream, logged. */
static void change_stream(tsd_daemon *d, int command, const char *id, reply_builder *b) {
    const int del = command == TSMINE__V1__CONTROL_REQUEST__COMMAND__DELETE_STREAM;
    if ((del ? tss_engine_delete_stream(d->engine, id) : tss_engine_reset_stream(d->engine, id)) !=
        0) {
        fail(b, "unknown stream \"%.*s\"", TSS_MAX_ID, id);
        return;
    }
    snprintf(b->message, sizeof b->message,
             del ? "stream \"%.*s\" deleted"
                 : "stream \"%.*s\" starts over at its next batch (a RESET alert)",
             TSS_MAX_ID, id);
    tsd_log(TSD_LOG_NOTICE, "control: %s", b->message);
}

/* CHECKPOINT: writes what changed since the last checkpoint, all at once (the main loop
 * waits for it: an operator's request before a power cut or a backup), and says what. */
static void checkpoint_now(tsd_daemon *d, reply_builder *b) {
    if (!d->ckpt) {
        fail(b, "checkpoints are off (no usable state_dir)");
        return;
    }
    if (tsd_daemon_checkpoint(d) != 0) {
        fail(b, "checkpoint failed (see the log)");
        return;
    }
    tsd_ckpt_stats st;
    tsd_ckpt_job_stats(d->ckpt, &st);
    snprintf(b->message, sizeof b->message,
             "checkpoint written to %.1500s: %llu streams changed since the last one, in %.3f s",
             d->state_dir, (unsigned long long)st.last_records, st.last_duration_s);
    tsd_log(TSD_LOG_INFO, "control: %s", b->message);
}

/* Fills b from the request bytes; every path leaves a complete reply. */
static void dispatch(tsd_daemon *d, const void *req, size_t len, reply_builder *b) {
    Tsmine__V1__ControlRequest *r =
        tsmine__v1__control_request__unpack(NULL, len, (const uint8_t *)req);
    if (!r) {
        fail(b, "malformed request: not a tsmine.v1.ControlRequest (%zu bytes)", len);
        return;
    }
    if (r->schema_version > TSD_SCHEMA_VERSION) {
        fail(b, "schema_version %u is newer than this daemon's (%u)", r->schema_version,
             TSD_SCHEMA_VERSION);
    } else {
        switch (r->command) {
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS:
            if (all_streams(d, b) == 0)
                counters(d, b);
            break;
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__COUNTERS: counters(d, b); break;
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM: one_stream(d, r->stream_id, b); break;
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__RESET_STREAM:
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__DELETE_STREAM:
            change_stream(d, r->command, r->stream_id, b);
            break;
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__RECALIBRATE: {
            size_t n = tss_engine_recalibrate(d->engine, r->stream_id);
            snprintf(b->message, sizeof b->message, "%zu streams will recalibrate", n);
            tsd_log(TSD_LOG_INFO, "control: recalibrate \"%.*s\": %s", TSS_MAX_ID, r->stream_id,
                    b->message);
            break;
        }
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__CHECKPOINT: checkpoint_now(d, b); break;
        case TSMINE__V1__CONTROL_REQUEST__COMMAND__RELOAD:
            if (tsd_daemon_reload(d, b->message, sizeof b->message) != 0)
                fail(b, "%s", b->message);
            break;
        default: fail(b, "unknown command %d", (int)r->command); break;
        }
    }
    tsmine__v1__control_request__free_unpacked(r, NULL);
}

/* tsd_control_handle, or, when refuse is not NULL, the reply that refuses the
 * request with that error. */
static int handle(tsd_daemon *d, const void *req, size_t len, const char *refuse, uint8_t **reply,
                  size_t *replylen) {
    reply_builder *b = calloc(1, sizeof *b);
    if (!b)
        return -1;
    tsmine__v1__control_reply__init(&b->msg);
    b->msg.schema_version = TSD_SCHEMA_VERSION;
    b->msg.ok = 1;
    b->msg.backend = (char *)(d->engine ? tsm_backend_name(tss_engine_backend(d->engine)) : "");
    b->msg.version = TSMINE_VERSION;
    b->msg.message = b->message;
    d->control_requests++;
    if (refuse)
        fail(b, "%s", refuse);
    else
        dispatch(d, req, len, b);
    if (!b->msg.ok) {
        d->control_errors++;
        uint64_t suppressed;
        if (tsd_ratelimit_allow(&d->control_limit, tsd_now_ns(), &suppressed))
            tsd_log(TSD_LOG_WARNING, "control: request refused: %s", b->error);
    }
    *replylen = tsmine__v1__control_reply__get_packed_size(&b->msg);
    *reply = malloc(*replylen ? *replylen : 1);
    if (*reply)
        tsmine__v1__control_reply__pack(&b->msg, *reply);
    free(b->states);
    free(b);
    return *reply ? 0 : -1;
}

int tsd_control_handle(tsd_daemon *d, const void *req, size_t len, uint8_t **reply,
                       size_t *replylen) {
    return handle(d, req, len, NULL, reply, replylen);
}

/* Reads and drops the rest of a message whose frame msg was just read (each frame
 * reported to the guard). */
static void drain_rest(tsd_daemon *d, void *sock, zmq_msg_t *msg) {
    while (zmq_msg_more(msg)) {
        zmq_msg_close(msg);
        zmq_msg_init(msg);
        if (zmq_msg_recv(msg, sock, 0) < 0)
            break;
        tsd_guard_note(d->guard, msg);
    }
}

/* Receives one whole message from the ROUTER: the peer's routing id into id and, when
 * the envelope is a REQ client's (routing id, empty delimiter, body), the body's first
 * frame into msg, with *bad set when the body has more frames. Returns 1 for a request
 * to answer, 0 for a message without that envelope (read, counted and dropped: nothing
 * can be answered; REP would have kept state across it, see sockets.c), -1 when
 * nothing is waiting. */
static int receive(tsd_daemon *d, void *router, zmq_msg_t *id, zmq_msg_t *msg, int *bad) {
    *bad = 0;
    const uint64_t before = tsd_now_ns();
    if (zmq_msg_recv(id, router, ZMQ_DONTWAIT) < 0) { /* the routing id: not from the wire */
        if (errno == EAGAIN)
            tsd_guard_emptied(d->guard, TSD_SOCK_CONTROL, before);
        return -1;
    }
    int got = zmq_msg_more(id) && zmq_msg_recv(msg, router, 0) >= 0;
    if (got)
        tsd_guard_note(d->guard, msg);
    if (got && d->sock.security) {
        /* CURVE: a key revoked by a reload gets no answer (counted, its connection cut).
         * The routing id is the ROUTER's own frame: the peer's metadata is on this one. */
        const tsd_sender from = tsd_security_sender(d->sock.security, msg);
        if (tsd_security_admit(d->sock.security, &from, NULL) != TSS_OK) {
            drain_rest(d, router, msg);
            return 0;
        }
    }
    int ok = got && zmq_msg_size(msg) == 0 && zmq_msg_more(msg);
    if (ok) {
        zmq_msg_close(msg);
        zmq_msg_init(msg);
        ok = zmq_msg_recv(msg, router, 0) >= 0;
        if (ok)
            tsd_guard_note(d->guard, msg);
        *bad = ok && zmq_msg_more(msg); /* a request is one frame: answer with an error */
    }
    drain_rest(d, router, msg);
    if (!ok) {
        d->control_errors++;
        uint64_t suppressed;
        if (tsd_ratelimit_allow(&d->control_limit, tsd_now_ns(), &suppressed))
            tsd_log(TSD_LOG_DEBUG, "control: a message without a request envelope, dropped");
    }
    return ok;
}

/* Sends body to the peer of routing id (its envelope, then the body), never waiting. A
 * peer that is gone, or has TSD_CONTROL_SNDHWM replies unread, loses this reply only:
 * with ZMQ_ROUTER_MANDATORY (sockets.c) the routing frame fails at once with
 * EHOSTUNREACH or EAGAIN and nothing is queued; the rest of a message whose first frame
 * was accepted always goes through. */
static int send_reply(void *router, zmq_msg_t *id, const uint8_t *body, size_t len) {
    if (zmq_msg_send(id, router, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(router, body, len, ZMQ_DONTWAIT) < 0)
        return -1;
    return 0;
}

/* Counts a reply that could not be sent and says why, at the control log rate. */
static void reply_dropped(tsd_daemon *d, const char *why) {
    d->control_reply_drops++;
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&d->control_limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_WARNING, "control: reply dropped: %s (%llu replies dropped in all)", why,
                (unsigned long long)d->control_reply_drops);
}

void tsd_control_serve(tsd_daemon *d) {
    for (int i = 0; i < CONTROL_BATCH; i++) {
        zmq_msg_t id, msg;
        zmq_msg_init(&id);
        zmq_msg_init(&msg);
        int bad, got = receive(d, d->sock.control, &id, &msg, &bad);
        if (got <= 0) {
            zmq_msg_close(&id);
            zmq_msg_close(&msg);
            if (got < 0)
                return;
            continue;
        }
        uint8_t *reply = NULL;
        size_t len = 0;
        int rc = handle(d, zmq_msg_data(&msg), zmq_msg_size(&msg),
                        bad ? "malformed request: expected one frame" : NULL, &reply, &len);
        zmq_msg_close(&msg);
        if (rc != 0)
            reply_dropped(d, "out of memory");
        else if (send_reply(d->sock.control, &id, reply, len) != 0)
            reply_dropped(d, errno == EAGAIN         ? "the client does not read its replies"
                             : errno == EHOSTUNREACH ? "the client is gone"
                                                     : zmq_strerror(errno));
        zmq_msg_close(&id);
        free(reply);
    }
}
