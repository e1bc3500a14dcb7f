/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - the sockets and message helpers that the daemon companions of `tsmine`
 * (tools/cli/companion.h) share with tsmine-loadgen. */
#include "lib/client.h"

#include "lib/alert_json.h"
#include "lib/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

/* Prints "tsmine: MESSAGE" as one line on stderr, as every message of tsmine does. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tsmine: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Seconds on the monotonic clock. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void *client_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                    const char *what) {
    return client_secure_socket(zctx, type, endpoint, flags, linger_ms, NULL, what);
}

/* Makes s a CURVE client with the keys of c (before it connects). */
static int set_curve(void *s, const client_curve *c) {
    return zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, c->server_key, sizeof c->server_key) ||
           zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, c->public_key, sizeof c->public_key) ||
           zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, c->secret_key, sizeof c->secret_key);
}

const char *client_curve_hint(const client_curve *curve) {
    return curve && curve->on ? "; with CURVE: is this key in the daemon's allow-list, and "
                                "--server-key the daemon's public key?"
                              : "";
}

void *client_secure_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                           const client_curve *curve, const char *what) {
    return client_monitored_socket(zctx, type, endpoint, flags, linger_ms, curve, what, 0, NULL);
}

/* Attaches a monitor of `events` to s (before it connects): a PAIR connected to the
 * inproc endpoint libzmq publishes them on, named uniquely within the process. */
static void *monitor_of(void *zctx, void *s, int events) {
    static unsigned serial;
    char where[64];
    snprintf(where, sizeof where, "inproc://tsmine-client-monitor-%u", serial++);
    if (zmq_socket_monitor(s, where, events) != 0)
        return NULL;
    void *m = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    if (m &&
        (zmq_setsockopt(m, ZMQ_LINGER, &zero, sizeof zero) != 0 || zmq_connect(m, where) != 0)) {
        zmq_close(m);
        m = NULL;
    }
    if (!m)
        zmq_socket_monitor(s, NULL, 0);
    return m;
}

void *client_monitored_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                              const client_curve *curve, const char *what, int events,
                              void **monitor) {
    if (monitor)
        *monitor = NULL;
    void *s = zmq_socket(zctx, type);
    if (!s) {
        say("%s: cannot create a socket: %s", what, zmq_strerror(zmq_errno()));
        return NULL;
    }
    if (curve && curve->on && set_curve(s, curve) != 0) {
        say("%s: CURVE: %s", what, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return NULL;
    }
    int immediate = (flags & CLIENT_IMMEDIATE) != 0, never = -1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_setsockopt(s, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    if (flags & CLIENT_ONCE)
        zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &never, sizeof never);
    if (monitor && !(*monitor = monitor_of(zctx, s, events))) {
        say("%s: cannot monitor a socket: %s", what, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return NULL;
    }
    if (((flags & CLIENT_BIND) ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint)) != 0) {
        say("%s: %s: %s", what, endpoint, zmq_strerror(zmq_errno()));
        if (monitor) {
            zmq_close(*monitor);
            *monitor = NULL;
        }
        zmq_close(s);
        return NULL;
    }
    return s;
}

int client_monitor_event(void *monitor, long wait_ms) {
    zmq_pollitem_t item = {.socket = monitor, .events = ZMQ_POLLIN};
    if (zmq_poll(&item, 1, wait_ms) <= 0)
        return 0;
    uint16_t event = 0;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    for (int frame = 0, more = 1; more; frame++) { /* the event and value, then the address */
        if (zmq_msg_recv(&msg, monitor, 0) < 0)
            break;
        if (frame == 0 && zmq_msg_size(&msg) >= sizeof event)
            memcpy(&event, zmq_msg_data(&msg), sizeof event);
        more = zmq_msg_more(&msg);
    }
    zmq_msg_close(&msg);
    return event;
}

Tsmine__V1__ControlReply *client_control(void *zctx, const char *endpoint, int command,
                                         const char *stream_id, long timeout_ms,
                                         const client_curve *curve, const char *what, int *rc) {
    return client_control_watch(zctx, endpoint, command, stream_id, timeout_ms, curve, what, NULL,
                                rc);
}

Tsmine__V1__ControlReply *client_control_watch(void *zctx, const char *endpoint, int command,
                                               const char *stream_id, long timeout_ms,
                                               const client_curve *curve, const char *what,
                                               void *watch, int *rc) {
    *rc = EX_UNAVAILABLE;
    void *sock = client_secure_socket(zctx, ZMQ_REQ, endpoint, 0, 0, curve, what);
    if (!sock)
        return NULL;
    Tsmine__V1__ControlRequest req = TSMINE__V1__CONTROL_REQUEST__INIT;
    req.schema_version = 1;
    req.command = (Tsmine__V1__ControlRequest__Command)command;
    req.stream_id = (char *)(stream_id ? stream_id : "");
    size_t len = tsmine__v1__control_request__get_packed_size(&req);
    uint8_t *buf = malloc(len ? len : 1);
    int timeout = timeout_ms ? (int)timeout_ms : -1;
    zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_pollitem_t items[2] = {{.socket = sock, .events = ZMQ_POLLIN},
                               {.socket = watch, .events = ZMQ_POLLIN}};
    Tsmine__V1__ControlReply *r = NULL;
    int ready = -1;
    if (buf && zmq_send(sock, buf, tsmine__v1__control_request__pack(&req, buf), 0) >= 0) {
        double end = now_s() + 1e-3 * (double)timeout_ms;
        for (int wait = timeout;;) { /* a signal (EINTR) waits again for what is left */
            ready = zmq_poll(items, watch ? 2 : 1, wait);
            if (ready >= 0 || zmq_errno() != EINTR)
                break;
            if (timeout >= 0 && (wait = (int)(1e3 * (end - now_s()))) <= 0) {
                ready = 0;
                break;
            }
        }
    }
    if (ready > 0 && !(items[0].revents & ZMQ_POLLIN)) { /* watch first: give up, unsaid */
        *rc = 0;
        goto out;
    }
    if (ready <= 0) {
        say("%s: %s: no reply within %ld ms (is tsmined running, with its control "
            "socket there?%s)",
            what, endpoint, timeout_ms, client_curve_hint(curve));
        goto out;
    }
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock, 0) >= 0)
        r = tsmine__v1__control_reply__unpack(NULL, zmq_msg_size(&msg), zmq_msg_data(&msg));
    if (!r) {
        say("%s: %s: the reply (%zu bytes) does not decode as a ControlReply", what, endpoint,
            zmq_msg_size(&msg));
        *rc = EX_PROTOCOL;
    }
    zmq_msg_close(&msg);
out:
    free(buf);
    zmq_close(sock);
    return r;
}

size_t client_pack_batch(const char *stream_id, uint64_t first_seq, const int64_t *ts_ns,
                         int64_t first_ts_ns, int64_t period_ns, const double *values, size_t n,
                         uint8_t **buf, size_t *cap) {
    Tsmine__V1__SampleBatch b = TSMINE__V1__SAMPLE_BATCH__INIT;
    b.schema_version = 1;
    b.stream_id = (char *)stream_id;
    b.first_seq = first_seq;
    if (ts_ns) {
        b.n_timestamps_ns = n;
        b.timestamps_ns = (int64_t *)ts_ns;
    } else {
        b.first_timestamp_ns = first_ts_ns;
        b.period_ns = period_ns;
    }
    b.n_values = n;
    b.values = (double *)values;
    size_t need = tsmine__v1__sample_batch__get_packed_size(&b);
    if (need > *cap) {
        uint8_t *p = realloc(*buf, need);
        if (!p)
            return 0;
        *buf = p;
        *cap = need;
    }
    return tsmine__v1__sample_batch__pack(&b, *buf);
}

const char *client_alert_kind_name(int kind) {
    return tsm_alert_kind_name(kind);
}

void client_print_double(FILE *out, double x) {
    char buf[40];
    if (isfinite(x)) {
        emit_double(buf, sizeof buf, x);
        fputs(buf, out);
    } else {
        fputs("null", out);
    }
}

void client_print_alert(FILE *out, const Tsmine__V1__Alert *a) {
    char buf[TSM_ALERT_JSON_MAX];
    tsm_alert_json(buf, sizeof buf, a);
    fprintf(out, "%s\n", buf);
}

int64_t client_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
