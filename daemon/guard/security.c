/* SPDX-License-Identifier: Apache-2.0 */
/* security.c - CURVE on tsmined's sockets: key files, the allow-list, the ZAP handler
 * thread and the handshake counters (security.h). */
#include "daemon/guard/security.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include "daemon/core/log.h"
#include "lib/curve_key.h"

/* A stable option of libzmq >= 4.3 that its header still lists under the draft API. */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN   "tsmine"
#define MAX_MONITORS 8
#define MAX_LISTEN   64 /* listening addresses of the monitored sockets */
/* Descriptors cut since the last revoking reload (cut_sender says why they are kept). */
#define MAX_CUT 65536
/* Files of the allow-list directory skipped (not regular) that are named in the log. */
#define SKIPPED_NAMED 5
#define MONITOR_EVENTS                                                                             \
    (ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |                        \
     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_LISTENING)

/* One key of the allow-list. */
typedef struct {
    int has_streams; /* its file names the streams it may write (stream_owners) */
    size_t len;      /* bytes of streams */
    char streams[];  /* the patterns, each NUL-terminated, then "" */
} allow_entry;

/* A bound endpoint of a monitored socket, as the kernel names it (getsockname of the
 * listener that ZMQ_EVENT_LISTENING reported), and that socket's ZMQ_TYPE. */
typedef struct {
    struct sockaddr_storage addr;
    socklen_t len;
    int type;
} listen_addr;

struct tsd_security {
    void *zctx;
    char secret_txt[TSM_CURVE_KEY_TXT + 1];
    char dir[512];
    pthread_mutex_t lock; /* guards allow and listen */
    zhashx_t *allow;      /* Z85 public key -> allow_entry; replaced whole by a reload */
    listen_addr listen[MAX_LISTEN];
    size_t n_listen;
    void *zap;                     /* REP bound to ZAP_ENDPOINT */
    void *pipe_main, *pipe_thread; /* PAIR: main -> thread "stop" */
    void *monitors[MAX_MONITORS];  /* PAIR readers of the socket monitors */
    char monitor_of[MAX_MONITORS][32];
    int type_of[MAX_MONITORS]; /* ZMQ_TYPE of the socket each monitor watches */
    size_t n_monitors;
    pthread_t thread;
    int started;
    _Atomic uint64_t handshakes, rejected[TSD_AUTH_REASONS], keys, revoked, cut;
    tsd_ratelimit limit[TSD_AUTH_REASONS]; /* the thread's */
    /* the main thread's */
    int stream_owners; /* security.curve.stream_owners */
    int *cut_fds;      /* descriptors cut since the last reload that removed keys */
    size_t n_cut_fds;  /* (cut_fd) */
    tsd_ratelimit revoke_limit;
};

const char *tsd_auth_reason_name(int reason) {
    static const char *const names[TSD_AUTH_REASONS] = {"key", "protocol", "other"};
    return reason >= 0 && reason < TSD_AUTH_REASONS ? names[reason] : NULL;
}

/* ---- the allow-list ---- */

/* scandir filter: entries that may be key files (not ".", "..", or hidden ones). */
static int visible(const struct dirent *e) {
    return e->d_name[0] != '.';
}

static void free_entry(void **item) {
    free(*item);
    *item = NULL;
}

/* Adds the key of one file to table unless it is there already (then its streams
 * must agree: one key, one set of rights). Returns 0, a TSM_CURVE_KEY_* code of the
 * reader (ENOTREG: not a regular file), or -1; err says why. */
static int add_key_file(zhashx_t *table, const char *path, size_t *count, char *err,
                        size_t errlen) {
    size_t n = strlen(path);
    if (n >= 7 && strcmp(path + n - 7, "_secret") == 0) {
        snprintf(err, errlen,
                 "%.900s: a secret key file in the allow-list directory (it holds public keys "
                 "only: NAME.key; keep NAME.key_secret with the client)",
                 path);
        return -1;
    }
    tsm_curve_key k;
    int rc = tsm_curve_key_read(path, 0, &k, err, errlen);
    if (rc != 0)
        return rc;
    size_t len = 1; /* the patterns and the final "" */
    while (k.streams[len - 1])
        len += strlen(k.streams + len - 1) + 1;
    const allow_entry *had = zhashx_lookup(table, k.public_txt);
    if (had) { /* the same key under two names */
        if (had->has_streams == k.has_streams && had->len == len &&
            memcmp(had->streams, k.streams, len) == 0)
            return 0;
        snprintf(err, errlen,
                 "%.900s: the same public key as another file of the directory, with other "
                 "streams",
                 path);
        return -1;
    }
    allow_entry *e = malloc(sizeof *e + len);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    e->has_streams = k.has_streams;
    e->len = len;
    memcpy(e->streams, k.streams, len);
    zhashx_insert(table, k.public_txt, e);
    (*count)++;
    return 0;
}

/* Reads every key file of dir into a new table (*out, *count keys). Files are read in
 * name order, so the error names the same file every time. What is not a regular file
 * (a FIFO, a socket, a device: opening one could block) is skipped, with a warning
 * naming the first SKIPPED_NAMED; subdirectories are skipped silently. */
static int read_allowlist(const char *dir, zhashx_t **out, size_t *count, char *err,
                          size_t errlen) {
    struct dirent **names = NULL;
    *out = NULL;
    int n = scandir(dir, &names, visible, alphasort);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read the directory: %s", dir, strerror(errno));
        return -1;
    }
    zhashx_t *table = zhashx_new();
    int rc = table ? 0 : -1;
    if (!table)
        snprintf(err, errlen, "%s: out of memory", dir);
    else
        zhashx_set_destructor(table, free_entry);
    *count = 0;
    size_t skipped = 0;
    for (int i = 0; i < n; i++) {
        char path[4096], why[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        int r = rc == 0 && !(stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                    ? add_key_file(table, path, count, why, sizeof why)
                    : 0;
        if (r == TSM_CURVE_KEY_ENOTREG) {
            if (skipped++ < SKIPPED_NAMED)
                tsd_log(TSD_LOG_WARNING, "curve: allow-list: skipping %s", why);
        } else if (r != 0) {
            snprintf(err, errlen, "%s", why);
            rc = -1;
        }
        free(names[i]);
    }
    free(names);
    if (skipped > SKIPPED_NAMED)
        tsd_log(TSD_LOG_WARNING,
                "curve: allow-list: %zu more entries of %s skipped (not regular files)",
                skipped - SKIPPED_NAMED, dir);
    if (rc == 0 && *count == 0) {
        snprintf(err, errlen,
                 "%s: no key files (an empty allow-list would refuse every client; put "
                 "the clients' NAME.key files there)",
                 dir);
        rc = -1;
    }
    if (rc != 0)
        zhashx_destroy(&table);
    *out = table;
    return rc;
}

/* ---- the ZAP handler (RFC 27) ---- */

/* Sends the frames of a ZAP reply. */
static void zap_reply(void *zap, const zmq_msg_t *id, const char *status, const char *text,
                      const char *user) {
    zmq_send(zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(zap, id ? zmq_msg_data((zmq_msg_t *)id) : "", id ? zmq_msg_size((zmq_msg_t *)id) : 0,
             ZMQ_SNDMORE);
    zmq_send(zap, status, 3, ZMQ_SNDMORE);
    zmq_send(zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(zap, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(zap, "", 0, 0); /* metadata */
}

static int frame_is(zmq_msg_t *m, const char *s) {
    return zmq_msg_size(m) == strlen(s) && memcmp(zmq_msg_data(m), s, strlen(s)) == 0;
}

/* Logs one refused handshake at the reason's rate. */
static void log_refusal(tsd_security *s, int reason, const char *fmt, const char *a,
                        const char *b) {
    uint64_t suppressed;
    if (!tsd_ratelimit_allow(&s->limit[reason], tsd_now_ns(), &suppressed))
        return;
    char line[512], more[64] = "";
    snprintf(line, sizeof line, fmt, a, b);
    if (suppressed)
        snprintf(more, sizeof more, " (%llu similar not logged)", (unsigned long long)suppressed);
    tsd_log(TSD_LOG_WARNING, "curve: %s%s", line, more);
}

/* Answers one ZAP request, if one is waiting: version, request id, domain, address,
 * identity, mechanism, credentials (the client's 32-byte public key for CURVE). Only
 * CURVE requests of our domain whose key is in the allow-list get 200. */
static int serve_zap(tsd_security *s) {
    enum { VERSION, ID, DOMAIN, ADDRESS, IDENTITY, MECHANISM, KEY, FRAMES };
    zmq_msg_t f[FRAMES];
    size_t n = 0;
    for (size_t i = 0; i < FRAMES; i++)
        zmq_msg_init(&f[i]);
    int more = 1;
    while (more) { /* frames beyond the 7th (not in RFC 27) are read and dropped */
        zmq_msg_t *dst = &f[n < FRAMES ? n : FRAMES - 1];
        if (zmq_msg_recv(dst, s->zap, n == 0 ? ZMQ_DONTWAIT : 0) < 0)
            break;
        n++;
        more = zmq_msg_more(dst);
    }
    int got = n > 0;
    if (got) {
        char key[TSM_CURVE_KEY_TXT + 1] = "", addr[64] = "";
        int ok = n == FRAMES && frame_is(&f[VERSION], "1.0") && frame_is(&f[DOMAIN], ZAP_DOMAIN) &&
                 frame_is(&f[MECHANISM], "CURVE") && zmq_msg_size(&f[KEY]) == 32;
        if (ok) {
            zmq_z85_encode(key, zmq_msg_data(&f[KEY]), 32);
            snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[ADDRESS]),
                     (const char *)zmq_msg_data(&f[ADDRESS]));
            pthread_mutex_lock(&s->lock);
            ok = zhashx_lookup(s->allow, key) != NULL;
            pthread_mutex_unlock(&s->lock);
        }
        if (ok) {
            zap_reply(s->zap, &f[ID], "200", "OK", key);
        } else {
            zap_reply(s->zap, n > ID ? &f[ID] : NULL, "400", "not allowed", "");
            atomic_fetch_add_explicit(&s->rejected[TSD_AUTH_KEY], 1, memory_order_relaxed);
            if (key[0])
                log_refusal(s, TSD_AUTH_KEY, "refused client key %s from %s: not in the allow-list",
                            key, addr);
            else
                log_refusal(s, TSD_AUTH_KEY, "refused a malformed ZAP request%s%s", "", "");
        }
    }
    for (size_t i = 0; i < FRAMES; i++)
        zmq_msg_close(&f[i]);
    return got;
}

/* ---- connections: which socket accepted one, and cutting it ---- */

/* Records the address a monitored socket listens on (ZMQ_EVENT_LISTENING gives the
 * listener's descriptor, the kernel names its address), so that accepted_by can tell
 * that socket's connections from every other descriptor. The handler thread's. */
static void note_listener(tsd_security *s, size_t i, int fd) {
    listen_addr a = {.len = sizeof a.addr, .type = s->type_of[i]};
    if (getsockname(fd, (struct sockaddr *)&a.addr, &a.len) != 0)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->n_listen < MAX_LISTEN)
        s->listen[s->n_listen++] = a;
    pthread_mutex_unlock(&s->lock);
}

/* 1 when local (a connection's own address) is listener l's: the same family and
 * port, and the same host unless l listens on every address; for ipc, the same path. */
static int same_local(const listen_addr *l, const struct sockaddr_storage *local, socklen_t len) {
    if (l->addr.ss_family != local->ss_family)
        return 0;
    if (local->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)&l->addr, *b = (const void *)local;
        return a->sin_port == b->sin_port && (a->sin_addr.s_addr == htonl(INADDR_ANY) ||
                                              a->sin_addr.s_addr == b->sin_addr.s_addr);
    }
    if (local->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)&l->addr, *b = (const void *)local;
        return a->sin6_port == b->sin6_port && (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr) ||
                                                IN6_ARE_ADDR_EQUAL(&a->sin6_addr, &b->sin6_addr));
    }
    return local->ss_family == AF_UNIX && l->len == len && memcmp(&l->addr, local, len) == 0;
}

/* The ZMQ_TYPE of the monitored socket that accepted the connection on fd (its local
 * address is one that socket listens on, and it has a peer: a listener has none), or
 * -1 when fd is anything else: a file, the metrics server's connections, a connection
 * tsmined opened (ingest.subscribe). The peer's numeric host goes to host (ipc: "").
 * Under s->lock. Two system calls per listening address at most. */
static int accepted_by(const tsd_security *s, int fd, char *host, size_t hostlen) {
    struct sockaddr_storage local, peer;
    socklen_t len = sizeof local, plen = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&local, &len) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
        return -1;
    for (size_t i = 0; i < s->n_listen; i++) {
        if (!same_local(&s->listen[i], &local, len))
            continue;
        host[0] = '\0';
        if (peer.ss_family != AF_UNIX)
            getnameinfo((struct sockaddr *)&peer, plen, host, hostlen, NULL, 0, NI_NUMERICHOST);
        return s->listen[i].type;
    }
    return -1;
}

/* Ends the connection on fd at once: no linger (what is still unsent is discarded and
 * the peer gets a reset), both directions shut; libzmq's I/O thread sees it fail and
 * closes it as if the network had. Only the descriptor's state changes, never a
 * ZeroMQ socket's, so no thread but its own touches a socket. */
static void cut(int fd) {
    struct linger now = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
    shutdown(fd, SHUT_RDWR);
    tsd_log(TSD_LOG_DEBUG, "curve: connection on descriptor %d cut", fd);
}

/* Cuts the connection that a message of a revoked key came on (from->fd, libzmq's
 * ZMQ_SRCFD), at most once per descriptor between two revoking reloads, and only
 * while it is still a connection that one of our sockets accepted from the peer host
 * the message names (Peer-Address). Why once: a revoked key cannot connect again (ZAP
 * refuses it), so once its connection on fd is cut, a later one on the same descriptor
 * number belongs to someone else, while the revoked key's messages may still wait in
 * the socket's queue. What this cannot rule out (daemon/README.md, hostile peers): the
 * revoked connection closed by itself before its queued message is read, and a newer
 * connection from the same host took its descriptor number: that one is cut instead,
 * and reconnects. Connections tsmined opened (ingest.subscribe) are never cut: their
 * messages are refused. Main thread. Returns 1 when cut. */
static int cut_sender(tsd_security *s, const tsd_sender *from) {
    if (!from || from->fd < 0)
        return 0;
    for (size_t i = 0; i < s->n_cut_fds; i++)
        if (s->cut_fds[i] == from->fd)
            return 0;
    char host[NI_MAXHOST];
    pthread_mutex_lock(&s->lock);
    int type = accepted_by(s, from->fd, host, sizeof host);
    pthread_mutex_unlock(&s->lock);
    if (type < 0 || (host[0] && from->address && strcmp(host, from->address) != 0))
        return 0;
    if (s->n_cut_fds == MAX_CUT)
        return 0; /* the list is full: the messages are still refused */
    if (s->n_cut_fds % 64 == 0) {
        int *more = realloc(s->cut_fds, (s->n_cut_fds + 64) * sizeof *more);
        if (!more)
            return 0;
        s->cut_fds = more;
    }
    s->cut_fds[s->n_cut_fds++] = from->fd;
    cut(from->fd);
    atomic_fetch_add_explicit(&s->cut, 1, memory_order_relaxed);
    return 1;
}

/* Cuts every connection that a PUB socket accepted: at a reload that removed keys, the
 * removed subscribers must stop receiving alerts, and a PUB socket hands its
 * subscribers' messages (subscriptions) to no one who could tell which connection is
 * whose. The allowed subscribers reconnect by themselves (libzmq's reconnect
 * interval, 100 ms by default) and pass ZAP again; what they miss meanwhile shows as
 * gaps in their streams' alert seq. Walks /proc/self/fd (else every descriptor below
 * the soft RLIMIT_NOFILE, at most 2^20). Main thread. Returns how many were cut. */
static size_t cut_subscribers(tsd_security *s) {
    size_t n = 0;
    char host[NI_MAXHOST];
    DIR *d = opendir("/proc/self/fd");
    struct rlimit rl = {0, 0};
    int max = d || getrlimit(RLIMIT_NOFILE, &rl) != 0 ? 0
              : rl.rlim_cur > (1u << 20)              ? 1 << 20
                                                      : (int)rl.rlim_cur;
    for (int next = 0;;) {
        int fd = -1;
        if (d) {
            struct dirent *e = readdir(d);
            if (!e)
                break;
            if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == dirfd(d))
                continue;
            fd = atoi(e->d_name);
        } else if (next < max) {
            fd = next++;
        } else {
            break;
        }
        pthread_mutex_lock(&s->lock);
        int type = accepted_by(s, fd, host, sizeof host);
        pthread_mutex_unlock(&s->lock);
        if (type == ZMQ_PUB || type == ZMQ_XPUB) {
            cut(fd);
            n++;
        }
    }
    if (d)
        closedir(d);
    atomic_fetch_add_explicit(&s->cut, n, memory_order_relaxed);
    return n;
}

/* 1 when stream_id matches one of e's patterns. O(patterns) fnmatch calls. */
static int owns(const allow_entry *e, const char *stream_id) {
    for (const char *p = e->streams; e->has_streams && *p; p += strlen(p) + 1)
        if (fnmatch(p, stream_id, 0) == 0)
            return 1;
    return 0;
}

tsd_sender tsd_security_sender(const tsd_security *s, zmq_msg_t *msg) {
    tsd_sender from = {NULL, -1, NULL};
    if (s) {
        from.key = zmq_msg_gets(msg, "User-Id");
        from.fd = zmq_msg_get(msg, ZMQ_SRCFD);
        from.address = zmq_msg_gets(msg, "Peer-Address");
    }
    return from;
}

int tsd_security_admit(void *ctx, const tsd_sender *from, const char *stream_id) {
    tsd_security *s = ctx;
    if (stream_id && !s->stream_owners)
        return TSS_OK;
    pthread_mutex_lock(&s->lock);
    const allow_entry *e = from && from->key ? zhashx_lookup(s->allow, from->key) : NULL;
    const int allowed = e != NULL, owner = e && stream_id && owns(e, stream_id);
    pthread_mutex_unlock(&s->lock);
    if (allowed)
        return !stream_id || owner ? TSS_OK : TSD_REASON_NOT_OWNER;
    atomic_fetch_add_explicit(&s->revoked, 1, memory_order_relaxed);
    const int was_cut = cut_sender(s, from);
    uint64_t suppressed;
    if (tsd_ratelimit_allow(&s->revoke_limit, tsd_now_ns(), &suppressed))
        tsd_log(TSD_LOG_WARNING,
                "curve: refused a message from key %s at %s: not in the allow-list in force "
                "(revoked by a reload)%s (%llu similar not logged)",
                from && from->key ? from->key : "(none)",
                from && from->address ? from->address : "?",
                was_cut ? "; its connection is cut" : "", (unsigned long long)suppressed);
    return TSD_REASON_REVOKED;
}

void tsd_security_set_stream_owners(tsd_security *s, int on) {
    if (on && !s->stream_owners) {
        size_t none = 0;
        pthread_mutex_lock(&s->lock);
        for (allow_entry *e = zhashx_first(s->allow); e; e = zhashx_next(s->allow))
            none += !e->has_streams;
        pthread_mutex_unlock(&s->lock);
        tsd_log(none ? TSD_LOG_WARNING : TSD_LOG_INFO,
                "curve: stream owners on: each client key writes only the streams its key file "
                "names (metadata streams = \"...\"); %zu keys name none and write nothing",
                none);
    } else if (!on && s->stream_owners) {
        tsd_log(TSD_LOG_INFO, "curve: stream owners off: every allowed key writes every stream");
    }
    s->stream_owners = on;
}

/* ---- socket monitors ---- */

/* What a ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL value means, in a few words. */
static const char *protocol_error_name(uint32_t v) {
    if (v == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        return "not a CURVE client (security mechanism mismatch)";
    if (v == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)
        return "CURVE cryptographic error (wrong server key?)";
    if (v >= ZMQ_PROTOCOL_ERROR_ZAP_UNSPECIFIED && v <= ZMQ_PROTOCOL_ERROR_ZAP_INVALID_METADATA)
        return "ZAP handler error";
    if (v >= ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_UNSPECIFIED &&
        v <= ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_METADATA)
        return "malformed handshake command";
    return "unexpected handshake";
}

/* Reads the events waiting on monitor i (two frames each: 16-bit event and 32-bit
 * value, then the endpoint) and counts the handshake outcomes. Returns how many. */
static int read_events(tsd_security *s, size_t i) {
    int got = 0;
    for (;; got++) {
        zmq_msg_t head, addr;
        zmq_msg_init(&head);
        zmq_msg_init(&addr);
        if (zmq_msg_recv(&head, s->monitors[i], ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&head);
            zmq_msg_close(&addr);
            return got;
        }
        if (zmq_msg_more(&head))
            zmq_msg_recv(&addr, s->monitors[i], 0);
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&head) >= 6) {
            memcpy(&event, zmq_msg_data(&head), 2);
            memcpy(&value, (const char *)zmq_msg_data(&head) + 2, 4);
        }
        char why[96];
        switch (event) {
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
            atomic_fetch_add_explicit(&s->handshakes, 1, memory_order_relaxed);
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
            atomic_fetch_add_explicit(&s->rejected[TSD_AUTH_PROTOCOL], 1, memory_order_relaxed);
            snprintf(why, sizeof why, "%s, 0x%x", protocol_error_name(value), (unsigned)value);
            log_refusal(s, TSD_AUTH_PROTOCOL, "%s: refused a handshake: %s", s->monitor_of[i], why);
            break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            atomic_fetch_add_explicit(&s->rejected[TSD_AUTH_OTHER], 1, memory_order_relaxed);
            log_refusal(s, TSD_AUTH_OTHER, "%s: a handshake failed: %s", s->monitor_of[i],
                        strerror((int)value));
            break;
        case ZMQ_EVENT_LISTENING: note_listener(s, i, (int)value); break;
        default: break; /* FAILED_AUTH: counted and logged with the key by serve_zap */
        }
        zmq_msg_close(&head);
        zmq_msg_close(&addr);
    }
}

/* The handler thread: ZAP requests and monitor events until the main thread says stop
 * (or the context ends). */
static void *handler(void *arg) {
    tsd_security *s = arg;
    zmq_pollitem_t items[2 + MAX_MONITORS] = {
        {.socket = s->pipe_thread, .events = ZMQ_POLLIN},
        {.socket = s->zap, .events = ZMQ_POLLIN},
    };
    for (size_t i = 0; i < s->n_monitors; i++)
        items[2 + i] = (zmq_pollitem_t){.socket = s->monitors[i], .events = ZMQ_POLLIN};
    int n = 2 + (int)s->n_monitors;
    for (;;) {
        if (zmq_poll(items, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            if (errno != ETERM)
                tsd_log(TSD_LOG_ERR,
                        "curve: ZAP handler: zmq_poll: %s; handshakes are now "
                        "refused",
                        zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN)
            break;
        if (items[1].revents & ZMQ_POLLIN)
            while (serve_zap(s)) {
            }
        for (size_t i = 0; i + 2 < (size_t)n; i++) /* the monitors polled at start */
            if (items[2 + i].revents & ZMQ_POLLIN)
                read_events(s, i);
    }
    return NULL;
}

/* ---- life cycle ---- */

/* A PAIR socket with no linger, bound or connected to endpoint; NULL with err. */
static void *pair(void *zctx, const char *endpoint, int bind, char *err, size_t errlen) {
    void *p = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    if (p && zmq_setsockopt(p, ZMQ_LINGER, &zero, sizeof zero) == 0 &&
        (bind ? zmq_bind(p, endpoint) : zmq_connect(p, endpoint)) == 0)
        return p;
    snprintf(err, errlen, "curve: %s: %s", endpoint, zmq_strerror(errno));
    if (p)
        zmq_close(p);
    return NULL;
}

int tsd_security_open(tsd_security **out, void *zctx, const char *secret_key_file,
                      const char *authorized_keys, uint32_t log_rate, char *err, size_t errlen) {
    *out = NULL;
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "security.curve: this libzmq was built without CURVE support");
        return -1;
    }
    tsd_security *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "curve: out of memory");
        return -1;
    }
    s->zctx = zctx;
    pthread_mutex_init(&s->lock, NULL);
    for (int r = 0; r < TSD_AUTH_REASONS; r++)
        tsd_ratelimit_init(&s->limit[r], log_rate);
    tsd_ratelimit_init(&s->revoke_limit, log_rate);
    snprintf(s->dir, sizeof s->dir, "%s", authorized_keys);
    tsm_curve_key server;
    size_t count = 0;
    char where[96];
    char why[1024];
    if (tsm_curve_key_read(secret_key_file, 1, &server, why, sizeof why) != 0) {
        snprintf(err, errlen, "security.curve.secret_key_file: %s", why);
        goto fail;
    }
    if (read_allowlist(s->dir, &s->allow, &count, why, sizeof why) != 0) {
        snprintf(err, errlen, "security.curve.authorized_keys: %s", why);
        goto fail;
    }
    memcpy(s->secret_txt, server.secret_txt, sizeof s->secret_txt);
    atomic_store(&s->keys, count);
    s->zap = zmq_socket(zctx, ZMQ_REP);
    int zero = 0;
    if (!s->zap || zmq_setsockopt(s->zap, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_bind(s->zap, ZAP_ENDPOINT) != 0) {
        snprintf(err, errlen, "curve: ZAP handler: cannot bind %s: %s", ZAP_ENDPOINT,
                 zmq_strerror(errno));
        goto fail;
    }
    snprintf(where, sizeof where, "inproc://tsmine-security-%p-stop", (void *)s);
    if (!(s->pipe_thread = pair(zctx, where, 1, err, errlen)) ||
        !(s->pipe_main = pair(zctx, where, 0, err, errlen)))
        goto fail;
    tsd_log(TSD_LOG_INFO, "curve: on; server public key %s; %zu client keys allowed (%s)",
            server.public_txt, count, s->dir);
    *out = s;
    return 0;
fail:
    tsd_security_close(&s);
    return -1;
}

int tsd_security_apply(tsd_security *s, void *sock, const char *what, char *err, size_t errlen) {
    int one = 1;
    if (s->started) { /* the handler thread reads the monitors: they are fixed by now */
        snprintf(err, errlen, "%s: curve: sockets are secured before the ZAP handler starts", what);
        return -1;
    }
    if (s->n_monitors == MAX_MONITORS) {
        snprintf(err, errlen, "%s: curve: more than %d sockets", what, MAX_MONITORS);
        return -1;
    }
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, s->secret_txt, strlen(s->secret_txt) + 1) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) != 0) {
        snprintf(err, errlen, "%s: curve: %s", what, zmq_strerror(errno));
        return -1;
    }
    /* Fail closed: without this, a CURVE server whose context has no ZAP handler
     * admits every client that knows the server's public key. */
    if (zmq_setsockopt(sock, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one) != 0) {
        snprintf(err, errlen,
                 "%s: curve: this libzmq cannot enforce ZAP (ZMQ_ZAP_ENFORCE_DOMAIN: %s); "
                 "refusing to run CURVE without it",
                 what, zmq_strerror(errno));
        return -1;
    }
    char ep[96];
    snprintf(ep, sizeof ep, TSD_SECURITY_MONITOR "%zu", s->n_monitors);
    if (zmq_socket_monitor(sock, ep, MONITOR_EVENTS) != 0) {
        snprintf(err, errlen, "%s: curve: zmq_socket_monitor: %s", what, zmq_strerror(errno));
        return -1;
    }
    void *reader = pair(s->zctx, ep, 0, err, errlen);
    if (!reader)
        return -1;
    int type = -1;
    size_t tlen = sizeof type;
    if (zmq_getsockopt(sock, ZMQ_TYPE, &type, &tlen) != 0)
        type = -1;
    snprintf(s->monitor_of[s->n_monitors], sizeof s->monitor_of[0], "%s", what);
    s->type_of[s->n_monitors] = type;
    s->monitors[s->n_monitors++] = reader;
    return 0;
}

int tsd_security_start(tsd_security *s, char *err, size_t errlen) {
    /* Signals go to the main thread (its zmq_poll returns EINTR): block them here. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, handler, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "curve: cannot start the ZAP handler: %s", strerror(rc));
        return -1;
    }
    s->started = 1;
    return 0;
}

int tsd_security_reload(tsd_security *s, char *msg, size_t msglen) {
    zhashx_t *next;
    size_t count;
    char err[1024];
    if (read_allowlist(s->dir, &next, &count, err, sizeof err) != 0) {
        snprintf(msg, msglen, "security.curve.authorized_keys: %s", err);
        return -1;
    }
    /* From the swap on, ZAP refuses the removed keys and tsd_security_admit their
     * messages. The count of removed keys is taken under the lock too: a lookup moves a
     * zhashx's cache, and the handler thread looks keys up. O(keys). */
    pthread_mutex_lock(&s->lock);
    zhashx_t *old = s->allow;
    s->allow = next;
    size_t removed = 0;
    for (void *e = zhashx_first(old); e; e = zhashx_next(old))
        removed += zhashx_lookup(next, zhashx_cursor(old)) == NULL;
    pthread_mutex_unlock(&s->lock);
    zhashx_destroy(&old);
    uint64_t was = atomic_exchange(&s->keys, count);
    size_t n = snprintf(msg, msglen, "allow-list: %zu client keys (was %llu)", count,
                        (unsigned long long)was);
    if (removed) {
        s->n_cut_fds = 0; /* a new revocation: every descriptor may be cut once again */
        size_t subs = cut_subscribers(s);
        if (n < msglen)
            snprintf(msg + n, msglen - n,
                     "; %zu removed: their messages are refused and their connections cut; %zu "
                     "alert subscriber connections cut (the allowed ones reconnect)",
                     removed, subs);
    }
    return 0;
}

void tsd_security_counters_get(const tsd_security *cs, tsd_security_counters *out) {
    memset(out, 0, sizeof *out);
    tsd_security *s = (tsd_security *)cs; /* atomic loads of C11 take non-const pointers */
    if (!s)
        return;
    out->enabled = 1;
    out->handshakes = atomic_load_explicit(&s->handshakes, memory_order_relaxed);
    for (int r = 0; r < TSD_AUTH_REASONS; r++)
        out->rejected[r] = atomic_load_explicit(&s->rejected[r], memory_order_relaxed);
    out->keys = atomic_load_explicit(&s->keys, memory_order_relaxed);
    out->revoked = atomic_load_explicit(&s->revoked, memory_order_relaxed);
    out->cut = atomic_load_explicit(&s->cut, memory_order_relaxed);
}

void tsd_security_close(tsd_security **s_p) {
    tsd_security *s = *s_p;
    if (!s)
        return;
    if (s->started) {
        zmq_send(s->pipe_main, "stop", 4, 0);
        pthread_join(s->thread, NULL);
    }
    for (size_t i = 0; i < s->n_monitors; i++)
        zmq_close(s->monitors[i]);
    void *socks[] = {s->zap, s->pipe_main, s->pipe_thread};
    for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
        if (socks[i])
            zmq_close(socks[i]);
    zhashx_destroy(&s->allow);
    free(s->cut_fds);
    pthread_mutex_destroy(&s->lock);
    memset(s->secret_txt, 0, sizeof s->secret_txt);
    free(s);
    *s_p = NULL;
}
