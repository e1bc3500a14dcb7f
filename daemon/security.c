/* security.c - CURVE on tsmined's sockets: key files, the allow-list, the ZAP handler
 * thread and the handshake counters (security.h). */
#include "security.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "curve_key.h"
#include "log.h"

/* A stable option of libzmq >= 4.3 that its header still lists under the draft API. */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN   "tsmine"
#define MAX_MONITORS 8
/* Files of the allow-list directory skipped (not regular) that are named in the log. */
#define SKIPPED_NAMED 5
#define MONITOR_EVENTS                                                                             \
    (ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |                        \
     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

struct tsd_security {
    void *zctx;
    char secret_txt[TSM_CURVE_KEY_TXT + 1];
    char dir[512];
    pthread_mutex_t lock; /* guards allow */
    zcertstore_t *allow;
    void *zap;                     /* REP bound to ZAP_ENDPOINT */
    void *pipe_main, *pipe_thread; /* PAIR: main -> thread "stop" */
    void *monitors[MAX_MONITORS];  /* PAIR readers of the socket monitors */
    char monitor_of[MAX_MONITORS][32];
    size_t n_monitors;
    pthread_t thread;
    int started;
    _Atomic uint64_t handshakes, rejected[TSD_AUTH_REASONS], keys;
    tsd_ratelimit limit[TSD_AUTH_REASONS]; /* the thread's */
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

/* Adds the public key of one file to store unless it is there already. Returns 0, a
 * TSM_CURVE_KEY_* code of the reader (ENOTREG: not a regular file), or -1. */
static int add_key_file(zcertstore_t *store, const char *path, size_t *count, char *err,
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
    if (zcertstore_lookup(store, k.public_txt))
        return 0; /* the same key under two names */
    uint8_t pub[32], sec[32] = {0};
    zmq_z85_decode(pub, k.public_txt);
    zcert_t *cert = zcert_new_from(pub, sec);
    if (!cert) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    zcertstore_insert(store, &cert);
    (*count)++;
    return 0;
}

/* Reads every key file of dir into a new store (*out, *count keys). Files are read in
 * name order, so the error names the same file every time. What is not a regular file
 * (a FIFO, a socket, a device: opening one could block) is skipped, with a warning
 * naming the first SKIPPED_NAMED; subdirectories are skipped silently. */
static int read_allowlist(const char *dir, zcertstore_t **out, size_t *count, char *err,
                          size_t errlen) {
    struct dirent **names = NULL;
    int n = scandir(dir, &names, visible, alphasort);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read the directory: %s", dir, strerror(errno));
        return -1;
    }
    zcertstore_t *store = zcertstore_new(NULL);
    int rc = store ? 0 : -1;
    if (!store)
        snprintf(err, errlen, "%s: out of memory", dir);
    *count = 0;
    size_t skipped = 0;
    for (int i = 0; i < n; i++) {
        char path[4096], why[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        int r = rc == 0 && !(stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                    ? add_key_file(store, path, count, why, sizeof why)
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
        zcertstore_destroy(&store);
    *out = store;
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
            ok = zcertstore_lookup(s->allow, key) != NULL;
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
    snprintf(s->monitor_of[s->n_monitors], sizeof s->monitor_of[0], "%s", what);
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
    zcertstore_t *next;
    size_t count;
    char err[1024];
    if (read_allowlist(s->dir, &next, &count, err, sizeof err) != 0) {
        snprintf(msg, msglen, "security.curve.authorized_keys: %s", err);
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    zcertstore_t *old = s->allow;
    s->allow = next;
    pthread_mutex_unlock(&s->lock);
    zcertstore_destroy(&old);
    uint64_t was = atomic_exchange(&s->keys, count);
    snprintf(msg, msglen, "allow-list: %zu client keys (was %llu)", count, (unsigned long long)was);
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
    zcertstore_destroy(&s->allow);
    pthread_mutex_destroy(&s->lock);
    memset(s->secret_txt, 0, sizeof s->secret_txt);
    free(s);
    *s_p = NULL;
}
