/* SPDX-License-Identifier: Apache-2.0 */
/* source_zmq.c - the ZeroMQ source (source.h): SampleBatch messages on the PULL socket
 * bound at ingest.endpoints, and on the SUB socket connected to ingest.subscribe when
 * it is set (a message there may carry a topic frame before the batch). The sockets
 * are the daemon's (sockets.h); this file reads them. */
#include "daemon/source/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>

#include "daemon/core/log.h"
#include "daemon/guard/peers.h"

/* Messages read from one socket between two looks at the clock, at the stop. */
#define FINISH_BATCH 1024
/* While connections still close after the unbind: how long one wait for a message
 * lasts before the connections are looked at again. */
#define STOP_POLL_MS 20

typedef struct {
    const tsd_sockets *sock;
    const tsc_config *cfg;
    int open_binds;   /* stop: unbinds that failed (their connections stay open) */
    tsd_peers *peers; /* stop .. finish: the accepted connections */
    int peers_tried;  /* tsd_peers_open was called (it failed when peers is NULL) */
} zmq_source;

static int zmq_open(void **self, const tsd_source_env *env, char *err, size_t errlen) {
    zmq_source *z = calloc(1, sizeof *z);
    if (!z) {
        snprintf(err, errlen, "ingest: out of memory");
        return EX_OSERR;
    }
    z->sock = env->sock, z->cfg = env->cfg;
    *self = z;
    return 0;
}

static size_t zmq_poll_items(void *self, zmq_pollitem_t *items) {
    const zmq_source *z = self;
    items[0] = (zmq_pollitem_t){.socket = z->sock->ingest, .events = ZMQ_POLLIN};
    items[1] = (zmq_pollitem_t){.socket = z->sock->sub, .events = ZMQ_POLLIN};
    return z->sock->sub ? 2 : 1;
}

/* Reads up to max messages from sock, stopping early once max_staged samples wait in
 * the engine; returns how many were read, *full set when a bound stopped it (the socket
 * may hold more). `sub` messages may carry a topic frame before the batch. The frames
 * of the ingest socket are reported to the guard (guard.h: what each peer has sent and
 * the daemon has read), and so is finding it empty. A multipart message is read to its
 * end and counted under `frames` (libzmq hands it over only once it has ended, and
 * keeps its frames until then: the guard cuts a peer whose message does not end). */
static size_t drain(const tsd_source_ctx *c, void *sock, int sub, size_t max, size_t max_staged,
                    int *full) {
    uint64_t t0 = tsd_now_ns();
    size_t n = 0;
    zmq_msg_t frame[2];
    zmq_msg_init(&frame[0]);
    zmq_msg_init(&frame[1]);
    tsd_guard *guard = sub ? NULL : c->guard;
    for (; n < max; n++) {
        if (tss_engine_pending(c->engine) >= max_staged)
            break;
        if (zmq_msg_recv(&frame[0], sock, ZMQ_DONTWAIT) < 0) {
            if (errno == EAGAIN)
                tsd_guard_emptied(guard, TSD_SOCK_INGEST, t0);
            break;
        }
        tsd_guard_note(guard, &frame[0]);
        size_t parts = 1;
        zmq_msg_t *last = &frame[0];
        while (zmq_msg_more(last)) { /* the rest of a multipart message is already here */
            last = &frame[1];        /* frames after the second overwrite it */
            if (zmq_msg_recv(last, sock, 0) < 0)
                break;
            tsd_guard_note(guard, last);
            parts++;
        }
        const char *peer = zmq_msg_gets(&frame[0], "Peer-Address");
        if (parts == 1 || (sub && parts == 2)) {
            const tsd_sender from = tsd_security_sender(c->security, &frame[0]); /* CURVE */
            tsd_ingest_message_from(c->ingest, c->engine, zmq_msg_data(last), zmq_msg_size(last),
                                    peer, &from);
        } else
            tsd_ingest_refuse(c->ingest, TSD_REASON_FRAMES, zmq_msg_size(last), peer,
                              sub ? "expected 1 or 2 frames" : "expected 1 frame");
    }
    zmq_msg_close(&frame[0]);
    zmq_msg_close(&frame[1]);
    if (full)
        *full |= n == max || tss_engine_pending(c->engine) >= max_staged;
    return n;
}

/* A socket that zmq_poll found without a whole message was empty after `polled`: the
 * guard learns that unread bytes there are a message that has not ended. */
static size_t zmq_drain(void *self, const tsd_source_ctx *c, const zmq_pollitem_t *items,
                        size_t max, size_t max_staged, int *more) {
    const zmq_source *z = self;
    size_t n = 0;
    if (c->revents_valid && !(items[0].revents & ZMQ_POLLIN))
        tsd_guard_emptied(c->guard, TSD_SOCK_INGEST, c->polled);
    if (items[0].revents & ZMQ_POLLIN)
        n += drain(c, z->sock->ingest, 0, max, max_staged, more);
    if (z->sock->sub && (items[1].revents & ZMQ_POLLIN))
        n += drain(c, z->sock->sub, 1, max, max_staged, more);
    return n;
}

/* Opens the list of accepted connections once (before the unbinds, and again for a
 * second finish). */
static void peers_open(zmq_source *z) {
    char err[256];
    if (z->peers || z->peers_tried)
        return;
    z->peers_tried = 1;
    if (tsd_peers_open(&z->peers, z->sock->bound, z->sock->n_bound, err, sizeof err) != 0)
        tsd_log(TSD_LOG_WARNING, "stopping: %s; reading until the sockets stay empty", err);
}

/* Unbinds every bound ingest endpoint (libzmq closes the connections it accepted
 * there; what they had queued stays readable, and each sender keeps what it had not
 * delivered, for the next start) and disconnects the SUB socket from its publishers. */
static void zmq_stop(void *self) {
    zmq_source *z = self;
    peers_open(z);
    for (size_t k = 0; k < z->sock->n_bound; k++) {
        const tsd_bound *b = &z->sock->bound[k];
        if (b->kind == TSD_SOCK_INGEST && zmq_unbind(z->sock->ingest, b->endpoint) != 0) {
            tsd_log(TSD_LOG_WARNING, "stopping: cannot unbind %s: %s", b->endpoint,
                    zmq_strerror(errno));
            z->open_binds++;
        }
    }
    for (size_t k = 0; z->sock->sub && k < z->cfg->n_ingest_sub_endpoints; k++)
        zmq_disconnect(z->sock->sub, z->cfg->ingest_sub_endpoints[k]);
}

/* The ingest connections still open (-1: unknown, they could not be listed). */
static long ingest_connections(tsd_peers *peers, tsd_peer **scan, size_t *cap) {
    size_t fds, n = peers ? tsd_peers_scan(peers, scan, cap, &fds) : (size_t)-1;
    if (n == (size_t)-1)
        return -1;
    long live = 0;
    for (size_t k = 0; k < n; k++)
        live += (*scan)[k].kind == TSD_SOCK_INGEST;
    return live;
}

/* Reads everything the sockets hold into staging, until they are empty and every
 * ingest connection has closed (libzmq has handed over all it took from them), or the
 * deadline. */
static size_t zmq_finish(void *self, const tsd_source_ctx *c, uint64_t deadline, int *unread) {
    zmq_source *z = self;
    tsd_peer *scan = NULL;
    size_t cap = 0, n = 0, got;
    zmq_pollitem_t items[TSD_SOURCE_ITEMS];
    const int nitems = (int)zmq_poll_items(z, items);
    peers_open(z);
    *unread = 1;
    while (tsd_now_ns() < deadline) {
        got = drain(c, z->sock->ingest, 0, FINISH_BATCH, SIZE_MAX, NULL);
        if (z->sock->sub)
            got += drain(c, z->sock->sub, 1, FINISH_BATCH, SIZE_MAX, NULL);
        n += got;
        if (got)
            continue;
        /* empty now; done once no connection can add more (unknown: once nothing came
         * within a poll) */
        const long live = z->open_binds ? 1 : ingest_connections(z->peers, &scan, &cap);
        if (live == 0) { /* what the last one queued before it closed is readable now */
            if ((got = drain(c, z->sock->ingest, 0, FINISH_BATCH, SIZE_MAX, NULL)) == 0) {
                *unread = 0;
                break;
            }
            n += got;
            continue;
        }
        if (zmq_poll(items, nitems, STOP_POLL_MS) == 0 && live < 0) {
            *unread = 0;
            break;
        }
    }
    free(scan);
    tsd_peers_close(&z->peers);
    z->peers_tried = 0;
    return n;
}

static void zmq_close_source(void *self) {
    zmq_source *z = self;
    tsd_peers_close(&z->peers);
    free(z); /* the sockets are the daemon's */
}

const tsd_source_ops tsd_source_zmq = {
    .name = "zmq",
    .open = zmq_open,
    .poll_items = zmq_poll_items,
    .drain = zmq_drain,
    .stop = zmq_stop,
    .finish = zmq_finish,
    .close = zmq_close_source,
};
