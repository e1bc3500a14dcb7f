/* SPDX-License-Identifier: Apache-2.0 */
/* sockets.h - tsmined's ZeroMQ sockets, created and bound once at start:
 *   ingest  PULL bound to every ingest.endpoints entry (ZMQ_RCVHWM from a byte budget,
 *           ZMQ_MAXMSGSIZE)
 *   sub     SUB connected to every ingest.subscribe entry, all topics (or NULL)
 *   pub     PUB bound to alerts.endpoint (ZMQ_SNDHWM per subscriber; plain PUB: a
 *           full subscriber queue loses that subscriber's alerts only, see alerts.h;
 *           a small ZMQ_MAXMSGSIZE for what subscribers send)
 *   control ROUTER bound to control.endpoint, serving REQ clients (small ZMQ_MAXMSGSIZE,
 *           small queues both ways, ZMQ_ROUTER_MANDATORY so that a dropped reply is
 *           counted)
 * ZMQ_MAXMSGSIZE bounds each frame, ZMQ_RCVHWM / ZMQ_SNDHWM count whole messages, and
 * libzmq keeps the frames of a multipart message it has not received to its end, out
 * of the reader's sight: what bounds that is the guard (guard.h).
 * Every socket has a short linger except pub, which gets a bounded one so the last
 * alerts leave at exit. With security.curve set, every one of them is a CURVE server
 * that admits only the clients of the allow-list (security.h). */
#ifndef TSD_SOCKETS_H
#define TSD_SOCKETS_H

#include <stddef.h>

#include "config.h"
#include "daemon/guard/security.h"

/* Largest control request accepted (ControlRequest is a command and a stream id). */
#define TSD_CONTROL_MAX_MSG 65536
/* Requests queued per control peer before libzmq stops reading it, and replies queued
 * per control peer before further ones are dropped (counted: control_reply_drops). A
 * REQ client has one request in flight; a DEALER that never reads its replies pins at
 * most TSD_CONTROL_SNDHWM replies plus TSD_PEER_SNDBUF of kernel buffer. */
#define TSD_CONTROL_RCVHWM 16
#define TSD_CONTROL_SNDHWM 4
/* Largest frame a subscriber may send to the alerts socket: a SUBSCRIBE is one byte and
 * a stream id prefix (at most TSS_MAX_ID bytes), and the CURVE handshake's commands
 * take a few hundred. libzmq keeps every subscription in a trie of about 40 bytes per
 * byte of prefix, so without a bound one 16 MB SUBSCRIBE cost 0.5-1.1 GB (issue 17). */
#define TSD_ALERTS_MAX_MSG 4096
/* Subscriptions queued per subscriber until the publisher thread reads them. */
#define TSD_ALERTS_RCVHWM 64
/* SO_SNDBUF of the connections of the alerts and control sockets: room for ~1500
 * alerts, the rate of a busy daemon for a round trip of seconds, or a few replies. */
#define TSD_PEER_SNDBUF (256 * 1024)
/* How long an accepted connection may take to complete its ZMTP (and CURVE)
 * handshake before libzmq drops it (its default is 30 s): a peer that connects and
 * says nothing holds a descriptor for no longer than this. */
#define TSD_HANDSHAKE_MS 10000

/* Which socket an accepted connection belongs to (the guard counts and limits them
 * per socket, guard.h). */
typedef enum { TSD_SOCK_INGEST, TSD_SOCK_ALERTS, TSD_SOCK_CONTROL, TSD_SOCK_KINDS } tsd_sock_kind;

/* "ingest", "alerts", "control". */
const char *tsd_sock_kind_name(int kind);

/* An endpoint a socket is bound to, as libzmq reports it (the real port of "*"). */
typedef struct {
    tsd_sock_kind kind;
    char endpoint[256];
} tsd_bound;

typedef struct {
    void *zctx;
    void *ingest, *sub, *pub, *control;
    tsd_security *security; /* NULL when CURVE is off */
    /* every endpoint bound, for the guard */
    tsd_bound bound[TSC_MAX_ENDPOINTS + 2];
    size_t n_bound;
    /* the ingest ZMQ_RCVHWM in force (messages per connection) */
    int ingest_hwm;
} tsd_sockets;

/* The ingest queue of one connection in messages: limits.peer_buffer bytes of messages
 * of the largest size libzmq lets in (2 * max_message_size, ZMQ_MAXMSGSIZE), at least
 * 1 and at most limits.ingest_hwm. */
int tsd_sockets_ingest_hwm(const tsc_config *cfg);

/* What tsd_sockets_open returns when the CURVE key files are unusable (a configuration
 * error, EX_CONFIG), as opposed to -1 for a socket that cannot be set up. */
#define TSD_SOCKETS_EKEYS (-2)

/* Creates and binds/connects all sockets from cfg, logging each bound endpoint (the
 * real port when it was "*"). On failure everything is closed and err names the
 * endpoint and the ZeroMQ error (-1), or the key file and what is wrong with it
 * (TSD_SOCKETS_EKEYS). */
int tsd_sockets_open(tsd_sockets *s, const tsc_config *cfg, char *err, size_t errlen);
void tsd_sockets_close(tsd_sockets *s);

#endif
