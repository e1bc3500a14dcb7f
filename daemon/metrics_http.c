/* metrics_http.c - GET /metrics over libmicrohttpd, answered from the latest snapshot
 * (see metrics.h for the threading). Compiled to stubs without TSMINE_HAVE_METRICS. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TSMINE_HAVE_METRICS
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "log.h"

/* libmicrohttpd's own messages per second (accept errors come at the rate of a busy
 * loop when descriptors run out: 1.5 million lines in 8.5 s before, issue 17). */
#define MHD_LOG_RATE 5

struct tsd_metrics {
    struct MHD_Daemon *http;
    pthread_mutex_t lock; /* guards snap, limit and last */
    tsd_metrics_snapshot snap;
    tsd_ratelimit limit; /* libmicrohttpd's messages */
    char last[256];      /* its latest one: why a start failed */
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
    int ok = tsd_ratelimit_allow(&m->limit, tsd_now_ns(), &suppressed);
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

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req_cls) {
    (void)version, (void)upload, (void)req_cls;
    tsd_metrics *m = cls;
    if (*upload_size)
        return MHD_NO; /* no request bodies here */
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
    tsd_ratelimit_init(&m->limit, MHD_LOG_RATE);
    /* MHD_USE_AUTO: epoll on Linux. Its default, select(), refuses every connection whose
     * descriptor is 1024 or more, which a daemon with a thousand sensors connected
     * reaches: scrapes failed ("not less than FD_SETSIZE"). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* A handful of scrapers at a time (each a descriptor: the guard keeps some free for
     * them, guard.h); slow ones are cut off after 10 s. Errors go through the daemon's
     * log at a rate limit instead of libmicrohttpd's unlimited stderr. */
    m->http = MHD_start_daemon(flags, 0, NULL, NULL, answer, m, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                               m, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                               16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
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
    pthread_mutex_unlock(&m->lock);
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
void tsd_metrics_stop(tsd_metrics **m_p) {
    *m_p = NULL;
}

#endif
