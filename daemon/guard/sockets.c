/* SPDX-License-Identifier: Apache-2.0 */
/* sockets.c - creation, options and binding of tsmined's ZeroMQ sockets. */
#include "daemon/guard/sockets.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "daemon/core/log.h"
#include "daemon/guard/security.h"

const char *tsd_sock_kind_name(int kind) {
    static const char *const names[TSD_SOCK_KINDS] = {"ingest", "alerts", "control"};
    return kind >= 0 && kind < TSD_SOCK_KINDS ? names[kind] : "?";
}

int tsd_sockets_ingest_hwm(const tsc_config *cfg) {
    const uint64_t frame = 2 * cfg->max_message_size;
    uint64_t hwm = cfg->peer_buffer / (frame ? frame : 1);
    if (hwm < 1)
        hwm = 1;
    return hwm < (uint64_t)cfg->ingest_hwm ? (int)hwm : cfg->ingest_hwm;
}

/* Sets an integer option (int or int64_t by size); 0 or -1 with err. */
static int setopt(void *sock, int opt, int64_t v, size_t size, const char *what, char *err,
                  size_t errlen) {
    int iv = (int)v;
    if (zmq_setsockopt(sock, opt, size == sizeof iv ? (void *)&iv : (void *)&v, size) == 0)
        return 0;
    snprintf(err, errlen, "%s: zmq_setsockopt: %s", what, zmq_strerror(errno));
    return -1;
}

/* A new socket of the given type with its linger and handshake time limit, a CURVE
 * server under the ZAP handler when sec is not NULL; NULL with err. */
static void *new_socket(void *zctx, tsd_security *sec, int type, int linger_ms, const char *what,
                        char *err, size_t errlen) {
    void *s = zmq_socket(zctx, type);
    if (!s) {
        snprintf(err, errlen, "%s: zmq_socket: %s", what, zmq_strerror(errno));
        return NULL;
    }
    if (setopt(s, ZMQ_LINGER, linger_ms, sizeof(int), what, err, errlen) != 0 ||
        setopt(s, ZMQ_HANDSHAKE_IVL, TSD_HANDSHAKE_MS, sizeof(int), what, err, errlen) != 0 ||
        (sec && tsd_security_apply(sec, s, what, err, errlen) != 0)) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

/* Refuses ZMTP/1.0 and 2.0 peers on a socket without CURVE. Without a ZMTP/3 signature
 * libzmq takes any bytes for an unversioned ZMTP/1.0 peer and decodes random garbage
 * into messages: on the control socket they would only be counted and dropped, but
 * garbage has no business being decoded at all. libzmq refuses ZMTP < 3 whenever ZAP
 * is enabled, which a ZAP domain does for the NULL mechanism; with no ZAP handler bound
 * and ZMQ_ZAP_ENFORCE_DOMAIN left at 0, NULL clients are admitted as before. The domain
 * is security.c's; CURVE sockets have ZAP on already. */
static int refuse_zmtp1(void *sock, const char *what, char *err, size_t errlen) {
    if (zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "tsmine", 6) == 0)
        return 0;
    snprintf(err, errlen, "%s: zmq_setsockopt(ZMQ_ZAP_DOMAIN): %s", what, zmq_strerror(errno));
    return -1;
}

/* Binds (or connects) and logs the endpoint actually used; a bound one is noted in
 * s->bound as a socket of that kind (kind < 0: connected, not noted). */
static int attach(tsd_sockets *s, void *sock, const char *endpoint, int kind, const char *what,
                  char *err, size_t errlen) {
    const int bind = kind >= 0;
    int rc = bind ? zmq_bind(sock, endpoint) : zmq_connect(sock, endpoint);
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot %s %s: %s", what, bind ? "bind" : "connect", endpoint,
                 zmq_strerror(errno));
        return -1;
    }
    char real[512] = "";
    size_t len = sizeof real;
    if (!bind || zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, real, &len) != 0)
        snprintf(real, sizeof real, "%s", endpoint);
    tsd_log(TSD_LOG_INFO, "%s: %s %s", what, bind ? "listening on" : "connected to", real);
    if (bind && s->n_bound < sizeof s->bound / sizeof s->bound[0]) {
        tsd_bound *b = &s->bound[s->n_bound++];
        b->kind = (tsd_sock_kind)kind;
        snprintf(b->endpoint, sizeof b->endpoint, "%s", real);
    }
    return 0;
}

int tsd_sockets_open(tsd_sockets *s, const tsc_config *cfg, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->zctx = zmq_ctx_new();
    if (!s->zctx) {
        snprintf(err, errlen, "zmq_ctx_new: %s", zmq_strerror(errno));
        return -1;
    }
    /* Two I/O threads: the alerts' (PUB: hundreds of thousands of small frames a second
     * at full load) apart from the ingest's and control's, so that a burst of alerts
     * never delays the samples coming in (ZMQ_AFFINITY below picks the thread). */
    if (zmq_ctx_set(s->zctx, ZMQ_IO_THREADS, 2) != 0) {
        snprintf(err, errlen, "zmq_ctx_set(ZMQ_IO_THREADS): %s", zmq_strerror(errno));
        tsd_sockets_close(s);
        return -1;
    }
    const uint64_t io_in = 1, io_alerts = 2; /* bit k: I/O thread k */
    /* CURVE (security.h): keys and the ZAP handler before any socket can take a peer. */
    if (cfg->curve_secret_key_file[0] &&
        tsd_security_open(&s->security, s->zctx, cfg->curve_secret_key_file,
                          cfg->curve_authorized_keys, cfg->log_rate_per_s, err, errlen) != 0) {
        tsd_sockets_close(s);
        return TSD_SOCKETS_EKEYS;
    }
    /* Messages up to max_message_size are decoded; those up to twice that still arrive and
     * are counted as oversized (decode.c), so a sender learns nothing new but the operator
     * sees them; libzmq itself disconnects a peer that announces more than twice the
     * limit, before allocating the message, which bounds the memory a hostile sender can
     * pin to 2 * max_message_size per connection. */
    int64_t maxmsg = 2 * (int64_t)cfg->max_message_size;
    /* A connection's queue is bounded in messages (ZMQ_RCVHWM), each at most maxmsg: the
     * byte budget peer_buffer gives the count, so that one fast sender pins at most
     * peer_buffer bytes while the daemon is busy (with ingest_hwm = 100,000 messages,
     * one PUSH queued +1.7 GB in 3 s; issue 17). */
    s->ingest_hwm = tsd_sockets_ingest_hwm(cfg);

    if (!(s->ingest = new_socket(s->zctx, s->security, ZMQ_PULL, 0, "ingest", err, errlen)) ||
        setopt(s->ingest, ZMQ_AFFINITY, io_in, sizeof io_in, "ingest", err, errlen) ||
        setopt(s->ingest, ZMQ_RCVHWM, s->ingest_hwm, sizeof(int), "ingest", err, errlen) ||
        setopt(s->ingest, ZMQ_MAXMSGSIZE, maxmsg, sizeof(int64_t), "ingest", err, errlen))
        goto fail;
    for (size_t i = 0; i < cfg->n_ingest_endpoints; i++)
        if (attach(s, s->ingest, cfg->ingest_endpoints[i], TSD_SOCK_INGEST, "ingest", err, errlen))
            goto fail;

    if (cfg->n_ingest_sub_endpoints) {
        if (!(s->sub = new_socket(s->zctx, s->security, ZMQ_SUB, 0, "ingest (subscribe)", err,
                                  errlen)) ||
            setopt(s->sub, ZMQ_AFFINITY, io_in, sizeof io_in, "ingest", err, errlen) ||
            setopt(s->sub, ZMQ_RCVHWM, s->ingest_hwm, sizeof(int), "ingest", err, errlen) ||
            setopt(s->sub, ZMQ_MAXMSGSIZE, maxmsg, sizeof(int64_t), "ingest", err, errlen))
            goto fail;
        if (zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, "", 0) != 0) {
            snprintf(err, errlen, "ingest (subscribe): %s", zmq_strerror(errno));
            goto fail;
        }
        for (size_t i = 0; i < cfg->n_ingest_sub_endpoints; i++)
            if (attach(s, s->sub, cfg->ingest_sub_endpoints[i], -1, "ingest (subscribe)", err,
                       errlen))
                goto fail;
    }

    /* At exit, up to 1 s for queued alerts to leave. Plain PUB semantics (no
     * ZMQ_XPUB_NODROP): a subscriber whose queue holds alerts_hwm alerts loses its own
     * copies, the others lose nothing (alerts.h). A stalled subscriber pins at most its
     * queue plus the kernel's send buffer: fixed at TSD_PEER_SNDBUF rather than
     * autotuned (up to tcp_wmem's maximum, 4 MiB on Linux), so that bound is known.
     * What subscribers send is bounded too: each frame by TSD_ALERTS_MAX_MSG, the queue
     * of unread subscriptions by TSD_ALERTS_RCVHWM. */
    if (!(s->pub = new_socket(s->zctx, s->security, ZMQ_PUB, 1000, "alerts", err, errlen)) ||
        setopt(s->pub, ZMQ_AFFINITY, io_alerts, sizeof io_alerts, "alerts", err, errlen) ||
        setopt(s->pub, ZMQ_SNDHWM, cfg->alerts_hwm, sizeof(int), "alerts", err, errlen) ||
        setopt(s->pub, ZMQ_SNDBUF, TSD_PEER_SNDBUF, sizeof(int), "alerts", err, errlen) ||
        setopt(s->pub, ZMQ_MAXMSGSIZE, TSD_ALERTS_MAX_MSG, sizeof(int64_t), "alerts", err,
               errlen) ||
        setopt(s->pub, ZMQ_RCVHWM, TSD_ALERTS_RCVHWM, sizeof(int), "alerts", err, errlen) ||
        attach(s, s->pub, cfg->alerts_endpoint, TSD_SOCK_ALERTS, "alerts", err, errlen))
        goto fail;

    /* The control socket is a ROUTER serving REQ clients (control.c handles the
     * envelope), not a REP: libzmq 4.3.4's REP, given a message without an empty
     * delimiter whose peer then leaves, stays half-way through an outgoing message
     * (router_t::rollback keeps _more_out without a reply pipe) and silently drops the
     * NEXT reply, to another client: a well-formed ZMTP/3 peer could mute control
     * (tests/integration/hostile_test.py --case raw). A ROUTER drops a reply to a gone
     * or full peer and nothing else. ZMQ_ROUTER_MANDATORY makes such a drop visible to
     * control.c (EAGAIN, EHOSTUNREACH with ZMQ_DONTWAIT), which counts it: without a
     * small SNDHWM, three or four DEALERs that never read their STATUS replies queued
     * +1.5 GB (issue 17). */
    if (!(s->control = new_socket(s->zctx, s->security, ZMQ_ROUTER, 0, "control", err, errlen)) ||
        setopt(s->control, ZMQ_AFFINITY, io_in, sizeof io_in, "control", err, errlen) ||
        setopt(s->control, ZMQ_MAXMSGSIZE, TSD_CONTROL_MAX_MSG, sizeof(int64_t), "control", err,
               errlen) ||
        setopt(s->control, ZMQ_RCVHWM, TSD_CONTROL_RCVHWM, sizeof(int), "control", err, errlen) ||
        setopt(s->control, ZMQ_SNDHWM, TSD_CONTROL_SNDHWM, sizeof(int), "control", err, errlen) ||
        setopt(s->control, ZMQ_SNDBUF, TSD_PEER_SNDBUF, sizeof(int), "control", err, errlen) ||
        setopt(s->control, ZMQ_ROUTER_MANDATORY, 1, sizeof(int), "control", err, errlen) ||
        (!s->security && refuse_zmtp1(s->control, "control", err, errlen)) ||
        attach(s, s->control, cfg->control_endpoint, TSD_SOCK_CONTROL, "control", err, errlen))
        goto fail;
    if (s->security && tsd_security_start(s->security, err, errlen) != 0)
        goto fail;
    return 0;
fail:
    tsd_sockets_close(s);
    return -1;
}

void tsd_sockets_close(tsd_sockets *s) {
    void **socks[] = {&s->ingest, &s->sub, &s->pub, &s->control};
    for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
        if (*socks[i]) {
            zmq_close(*socks[i]);
            *socks[i] = NULL;
        }
    tsd_security_close(&s->security); /* after the sockets it serves, before the context */
    if (s->zctx) {
        zmq_ctx_term(s->zctx); /* waits for pub's linger at most */
        s->zctx = NULL;
    }
}
