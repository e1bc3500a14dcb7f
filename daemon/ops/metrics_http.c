/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_http.c - GET /metrics over libmicrohttpd, answered from the latest snapshot
 * (see metrics.h for the threading). Compiled to stubs without TSMINE_HAVE_METRICS. */
#include "daemon/ops/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TSMINE_HAVE_METRICS
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "daemon/core/log.h"

/* libmicrohttpd's own messages per second (accept errors come at the rate of a busy
 * loop when descriptors run out: 1.5 million lines in 8.5 s before, issue 17). */
#define MHD_LOG_RATE 5

/* Slow and greedy clients (issue 17 item 10: 20 connections that sent one header byte
 * every 4 s kept every slot, and 35 of 35 scrapes failed). libmicrohttpd's own timeout
 * counts inactivity only, so a byte every few seconds holds a slot forever; hence:
 * - HTTP_PER_HOST connections per client address at most (refused beyond, counted);
 * - a request must be complete within HTTP_HEADER_NS of the connection's start (or of
 *   the end of its previous request): a connection past it is cut (counted);
 * - when HTTP_LIVE connections are open, a new one takes the place of the one that has
 *   waited longest for its request (counted as a cut); it is refused only when all of
 *   them are answering requests. So an attacker from many addresses holds no slot for
 *   long, and a scraper, whose request arrives within milliseconds, gets one: to be
 *   evicted it would have to be the oldest of 16 waiting connections;
 * - libmicrohttpd's inactivity timeout is HTTP_IDLE_S (a kept-alive connection between
 *   two scrapes is closed then; the scraper reconnects).
 * The table below tracks every connection libmicrohttpd holds (HTTP_SLOTS, its
 * connection limit: HTTP_LIVE plus room for those being cut). */
#define HTTP_SLOTS     24u
#define HTTP_LIVE      16u
#define HTTP_PER_HOST  4u
#define HTTP_IDLE_S    3u
#define HTTP_HEADER_NS 5000000000ull

/* One connection libmicrohttpd holds (its socket context). */
typedef struct {
    int used; /* between NOTIFY_STARTED and NOTIFY_CLOSED */
    int busy; /* its request is complete and being answered */
    int cut;  /* cut by us, not yet closed by libmicrohttpd */
    int fd;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    uint64_t since_ns; /* start, or the end of its previous request */
} http_conn;

struct tsd_metrics {
    struct MHD_Daemon *http;
    pthread_mutex_t lock; /* guards snap and conns */
    tsd_metrics_snapshot snap;
    http_conn conns[HTTP_SLOTS];
    _Atomic uint64_t refused_per_host, refused_full, cut_slow;
    tsd_ratelimit limit;     /* log lines about refusals and cuts */
    tsd_ratelimit mhd_limit; /* libmicrohttpd's own messages (under lock) */
    char last[256];          /* its latest one: why a start failed (under lock) */
};

/* libmicrohttpd's error messages, into the daemon's log at MHD_LOG_RATE lines per
 * second (MHD_OPTION_EXTERNAL_LOGGER, the first option so that it sees every message; from
 * the caller of MHD_start_daemon, then from the server thread). The latest is kept for the start-up
 * error. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
    tsd_metrics *m = cls;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    uint64_t suppressed;
    pthread_mutex_lock(&m->lock);
    snprintf(m->last, sizeof m->last, "%s", line);
    int ok = tsd_ratelimit_allow(&m->mhd_limit, tsd_now_ns(), &suppressed);
    pthread_mutex_unlock(&m->lock);
    if (ok && suppressed)
        tsd_log(TSD_LOG_WARNING, "metrics: %s (%llu more not logged)", line,
                (unsigned long long)suppressed);
    else if (ok)
        tsd_log(TSD_LOG_WARNING, "metrics: %s", line);
}

/* Resolves "HOST:PORT" or "[V6]:PORT" (numeric or a name such as localhost) into a
 * freshly allocated addrinfo list. */
static int parse_listen(const char *listen, struct addrinfo **res, char *msg, size_t msglen) {
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *h = listen;
    size_t hlen = colon ? (size_t)(colon - listen) : 0;
    if (hlen >= 2 && listen[0] == '[' && listen[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (!colon || hlen == 0 || hlen >= sizeof host || !colon[1]) {
        snprintf(msg, msglen, "metrics.listen \"%s\": expected HOST:PORT", listen);
        return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    int rc = getaddrinfo(host, colon + 1, &hints, res);
    if (rc != 0) {
        snprintf(msg, msglen, "metrics.listen \"%s\": %s", listen, gai_strerror(rc));
        return -1;
    }
    return 0;
}

/* 1 when a and b are the same host (IPv4 or IPv6 address; the port is ignored). */
static int same_host(const struct sockaddr *a, const struct sockaddr_storage *b) {
    if (a->sa_family != b->ss_family)
        return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 1;
}

/* Logs one refusal or cut at the rate limit. Under m->lock. */
static void note(tsd_metrics *m, const char *what) {
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&m->limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_WARNING, "metrics: %s (%llu similar not logged)", what,
                (unsigned long long)suppressed);
}

/* Cuts connection c (shutdown: libmicrohttpd sees it fail and closes it), if its
 * descriptor still holds the same connection (the peer address and port it had).
 * Under m->lock: libmicrohttpd tells NOTIFY_CLOSED (under the lock) before it closes
 * a descriptor, so c->fd is still that connection's or, at worst, checked here. */
static void cut_conn(tsd_metrics *m, http_conn *c, const char *why) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof peer;
    c->cut = 1;
    if (getpeername(c->fd, (struct sockaddr *)&peer, &len) != 0 || len != c->peer_len ||
        memcmp(&peer, &c->peer, len) != 0)
        return;
    shutdown(c->fd, SHUT_RDWR);
    atomic_fetch_add_explicit(&m->cut_slow, 1, memory_order_relaxed);
    note(m, why);
}

/* Cuts the connections whose request is not complete HTTP_HEADER_NS after they
 * started (or finished the one before). Under m->lock; O(HTTP_SLOTS). */
static void reap(tsd_metrics *m, uint64_t now) {
    for (size_t i = 0; i < HTTP_SLOTS; i++) {
        http_conn *c = &m->conns[i];
        if (c->used && !c->cut && !c->busy && now - c->since_ns > HTTP_HEADER_NS)
            cut_conn(m, c, "cut a connection whose request was not complete within 5 s");
    }
}

/* libmicrohttpd's accept policy: the per-host limit, then room among HTTP_LIVE
 * connections, evicting the one that has waited longest for its request. MHD_NO
 * refuses (the connection is closed at once). O(HTTP_SLOTS). */
static enum MHD_Result admit(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addrlen;
    tsd_metrics *m = cls;
    const uint64_t now = tsd_now_ns();
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&m->lock);
    reap(m, now);
    size_t live = 0, same = 0;
    http_conn *oldest = NULL;
    for (size_t i = 0; i < HTTP_SLOTS; i++) {
        http_conn *c = &m->conns[i];
        if (!c->used || c->cut)
            continue;
        live++;
        same += same_host(addr, &c->peer);
        if (!c->busy && (!oldest || c->since_ns < oldest->since_ns))
            oldest = c;
    }
    if (same >= HTTP_PER_HOST) {
        atomic_fetch_add_explicit(&m->refused_per_host, 1, memory_order_relaxed);
        note(m, "refused a connection: 4 open from the same host");
        ok = MHD_NO;
    } else if (live >= HTTP_LIVE && oldest) {
        cut_conn(m, oldest,
                 "cut the connection that waited longest for its request, for a new "
                 "one (all 16 taken)");
    } else if (live >= HTTP_LIVE) {
        atomic_fetch_add_explicit(&m->refused_full, 1, memory_order_relaxed);
        note(m, "refused a connection: all 16 taken by requests under way");
        ok = MHD_NO;
    }
    pthread_mutex_unlock(&m->lock);
    return ok;
}

/* NOTIFY_CONNECTION: a slot of the table from start to close. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    tsd_metrics *m = cls;
    pthread_mutex_lock(&m->lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = NULL;
        for (size_t i = 0; fd && addr && i < HTTP_SLOTS; i++) {
            http_conn *c = &m->conns[i];
            if (c->used)
                continue;
            *c = (http_conn){.used = 1, .fd = fd->connect_fd, .since_ns = tsd_now_ns()};
            c->peer_len = sizeof c->peer;
            if (getpeername(c->fd, (struct sockaddr *)&c->peer, &c->peer_len) != 0)
                c->peer_len = 0;
            *socket_context = c;
            break;
        }
    } else if (*socket_context) {
        ((http_conn *)*socket_context)->used = 0;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&m->lock);
}

/* NOTIFY_COMPLETED: the request was answered; the next one's clock starts now. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode code) {
    (void)req_cls, (void)code;
    tsd_metrics *m = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&m->lock);
    http_conn *c = info ? info->socket_context : NULL;
    if (c) {
        c->busy = 0;
        c->since_ns = tsd_now_ns();
    }
    pthread_mutex_unlock(&m->lock);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req_cls) {
    (void)version, (void)upload, (void)req_cls;
    tsd_metrics *m = cls;
    if (*upload_size)
        return MHD_NO; /* no request bodies here */
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&m->lock);
    if (info && info->socket_context) /* its request is complete: no deadline now */
        ((http_conn *)info->socket_context)->busy = 1;
    pthread_mutex_unlock(&m->lock);
    unsigned status = MHD_HTTP_OK;
    char *body = NULL;
    size_t len = 0;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0) {
        status = MHD_HTTP_NOT_FOUND;
    } else {
        tsd_metrics_snapshot s;
        pthread_mutex_lock(&m->lock);
        s = m->snap;
        pthread_mutex_unlock(&m->lock);
        len = tsd_metrics_format(&s, NULL, 0);
        body = malloc(len + 1);
        if (!body)
            return MHD_NO;
        tsd_metrics_format(&s, body, len + 1);
    }
    if (!body) {
        static const char *const msg[] = {"not found\n", "method not allowed\n"};
        const char *t = msg[status == MHD_HTTP_METHOD_NOT_ALLOWED];
        len = strlen(t);
        body = strdup(t);
        if (!body)
            return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            status == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
                                                  : "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

int tsd_metrics_start(const char *listen, tsd_metrics **out, char *msg, size_t msglen) {
    *out = NULL;
    msg[0] = '\0';
    if (!listen[0])
        return 0;
    struct addrinfo *ai;
    if (parse_listen(listen, &ai, msg, msglen) != 0)
        return -1;
    tsd_metrics *m = calloc(1, sizeof *m);
    if (!m) {
        freeaddrinfo(ai);
        snprintf(msg, msglen, "metrics: out of memory");
        return -1;
    }
    pthread_mutex_init(&m->lock, NULL);
    tsd_ratelimit_init(&m->limit, 5);
    tsd_ratelimit_init(&m->mhd_limit, MHD_LOG_RATE);
    /* MHD_USE_AUTO: epoll on Linux. Its default, select(), refuses every connection whose
     * descriptor is 1024 or more, which a daemon with a thousand sensors connected
     * reaches: scrapes failed ("not less than FD_SETSIZE"). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* A handful of scrapers at a time; slow and greedy clients: see HTTP_SLOTS. Errors go
     * through the daemon's log at a rate limit instead of libmicrohttpd's unlimited
     * stderr (the logger first, so that it sees every message). */
    m->http = MHD_start_daemon(flags, 0, admit, m, answer, m, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                               m, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                               HTTP_SLOTS, MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_S,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, m, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!m->http) { /* libmicrohttpd said why (a thread that cannot start, a bind error) */
        snprintf(msg, msglen, "metrics: cannot serve on %s: %s", listen,
                 m->last[0] ? m->last : "libmicrohttpd gave no reason");
        pthread_mutex_destroy(&m->lock);
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tsd_metrics_publish(tsd_metrics *m, const tsd_metrics_snapshot *s) {
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->snap = *s;
    reap(m, tsd_now_ns()); /* the header deadline, also while nobody connects */
    pthread_mutex_unlock(&m->lock);
}

void tsd_metrics_http_counters(tsd_metrics *m, tsd_metrics_http *out) {
    memset(out, 0, sizeof *out);
    if (!m)
        return;
    out->refused_per_host = atomic_load_explicit(&m->refused_per_host, memory_order_relaxed);
    out->refused_full = atomic_load_explicit(&m->refused_full, memory_order_relaxed);
    out->cut_slow = atomic_load_explicit(&m->cut_slow, memory_order_relaxed);
}

void tsd_metrics_stop(tsd_metrics **m_p) {
    tsd_metrics *m = *m_p;
    if (!m)
        return;
    MHD_stop_daemon(m->http); /* joins the server thread: no handler runs after this */
    pthread_mutex_destroy(&m->lock);
    free(m);
    *m_p = NULL;
}

#else /* !TSMINE_HAVE_METRICS */

int tsd_metrics_start(const char *listen, tsd_metrics **out, char *msg, size_t msglen) {
    *out = NULL;
    snprintf(msg, msglen, "%s",
             listen[0] ? "built without libmicrohttpd: metrics.listen is ignored" : "");
    return 0;
}
void tsd_metrics_publish(tsd_metrics *m, const tsd_metrics_snapshot *s) {
    (void)m, (void)s;
}
void tsd_metrics_http_counters(tsd_metrics *m, tsd_metrics_http *out) {
    (void)m;
    memset(out, 0, sizeof *out);
}
void tsd_metrics_stop(tsd_metrics **m_p) {
    *m_p = NULL;
}

#endif
