/* SPDX-License-Identifier: Apache-2.0 */
/* client.h - what the daemon companions of `tsmine` (replay, alerts, status, the
 * control requests; their command line is tools/cli/companion.h) and the
 * `tsmine-loadgen` benchmark share (DESIGN 5.2, 6): the daemon's default endpoints,
 * ZeroMQ sockets with one-line errors, control requests, SampleBatch packing and the
 * JSON form of an Alert. Failures to reach the daemon exit with EX_UNAVAILABLE. */
#ifndef TSMINE_CLIENT_H
#define TSMINE_CLIENT_H

#include "tsmine.pb-c.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The daemon's embedded default endpoints (DESIGN 5.4). */
#define CLIENT_INGEST_DEFAULT  "tcp://127.0.0.1:5555"
#define CLIENT_ALERTS_DEFAULT  "tcp://127.0.0.1:5556"
#define CLIENT_CONTROL_DEFAULT "tcp://127.0.0.1:5557"

/* CURVE keys of a client (--curve-key NAME.key_secret --server-key S.key), Z85 text as
 * lib/curve_key.h reads them. */
typedef struct {
    int on; /* 0: a plain (NULL mechanism) client */
    char public_key[41], secret_key[41], server_key[41];
} client_curve;

/* Flags of client_socket. */
enum {
    CLIENT_BIND = 1 << 0,      /* bind instead of connect */
    CLIENT_IMMEDIATE = 1 << 1, /* ZMQ_IMMEDIATE: queue only to completed connections */
    CLIENT_ONCE = 1 << 2,      /* ZMQ_RECONNECT_IVL -1: a connection that fails or drops is
                                * never made again by libzmq (one connection, one daemon) */
};

/* A ZeroMQ socket of the given type, connected to endpoint (flags: CLIENT_*), with
 * ZMQ_LINGER linger_ms (-1 = until delivered). Returns NULL after printing "tsmine:
 * WHAT: ENDPOINT: zmq error" (what names the caller, e.g. "replay"). */
void *client_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                    const char *what);

/* The same as a CURVE client with the keys of curve (a plain one when curve is NULL or
 * off). A daemon that refuses the key never answers: sends time out, as with no
 * daemon. */
void *client_secure_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                           const client_curve *curve, const char *what);

/* client_secure_socket with a monitor: *monitor is a PAIR socket that receives the
 * zmq_socket_monitor events of the mask `events` (two frames each: the 16-bit event and
 * its 32-bit value, then the peer's address), from before the socket connects. Close
 * *monitor after the socket (zmq_socket_monitor(s, NULL, 0) first). Returns NULL (and
 * *monitor NULL) after printing why. */
void *client_monitored_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                              const client_curve *curve, const char *what, int events,
                              void **monitor);

/* The next event of a monitor of client_monitored_socket (ZMQ_EVENT_*), waiting up to
 * wait_ms (-1: for ever); 0 when none came. */
int client_monitor_event(void *monitor, long wait_ms);

/* One request to the control socket (REQ, CURVE with curve unless NULL or off):
 * command (a ControlRequest.Command) for stream_id (NULL = none); waits up to
 * timeout_ms (0 = for ever) for the reply.
 * Returns it (free with tsmine__v1__control_reply__free_unpacked), or NULL after
 * printing why, with *rc = EX_UNAVAILABLE (no reply) or EX_PROTOCOL (undecodable). */
Tsmine__V1__ControlReply *client_control(void *zctx, const char *endpoint, int command,
                                         const char *stream_id, long timeout_ms,
                                         const client_curve *curve, const char *what, int *rc);

/* client_control, giving up as soon as `watch` (a socket, or NULL: never) has a message
 * to read: then it returns NULL with *rc = 0 and prints nothing, and `watch` keeps its
 * message. For a client that must drop a request when its other connection drops. */
Tsmine__V1__ControlReply *client_control_watch(void *zctx, const char *endpoint, int command,
                                               const char *stream_id, long timeout_ms,
                                               const client_curve *curve, const char *what,
                                               void *watch, int *rc);

/* The hint that follows "no reply"-type messages: "" for a plain client, else a
 * reminder that a CURVE daemon silently refuses unknown keys. */
const char *client_curve_hint(const client_curve *curve);

/* Packs one SampleBatch (schema version 1) into *buf, growing it (malloc'ed, *cap
 * bytes) as needed: sample k has timestamp ts_ns[k], or first_ts_ns + k * period_ns
 * when ts_ns is NULL. Returns the packed size, or 0 when out of memory. O(n). */
size_t client_pack_batch(const char *stream_id, uint64_t first_seq, const int64_t *ts_ns,
                         int64_t first_ts_ns, int64_t period_ns, const double *values, size_t n,
                         uint8_t **buf, size_t *cap);

/* The name of an alert kind as the proto spells it ("DISCORD"), or "UNKNOWN". */
const char *client_alert_kind_name(int kind);

/* Prints the alert as one JSON object on one line, with its proto field names. */
void client_print_alert(FILE *out, const Tsmine__V1__Alert *alert);

/* Prints a JSON number, or null when x is not finite. */
void client_print_double(FILE *out, double x);

/* CLOCK_REALTIME in nanoseconds. */
int64_t client_realtime_ns(void);

#endif
