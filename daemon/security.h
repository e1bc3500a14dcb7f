/* security.h - optional CURVE authentication of tsmined's sockets, failing closed
 * (issue 5 item 1; config keys security.curve.*).
 *
 * When on, every socket of the daemon (ingest PULL and SUB, alerts PUB, control ROUTER)
 * is a CURVE server with the daemon's secret key, ZMQ_ZAP_DOMAIN "tsmine" and
 * ZMQ_ZAP_ENFORCE_DOMAIN=1: libzmq then asks the ZAP handler (RFC 27) on
 * inproc://zeromq.zap.01 of the same context about every client key, and refuses the
 * connection when no handler is there (without ENFORCE_DOMAIN it would admit any
 * CURVE client). The handler is a thread of this module that answers 200 only for
 * public keys in the allow-list (a zcertstore filled from the authorized_keys
 * directory). Why not CZMQ's zauth: it serves only CZMQ's own context (zsys_init,
 * which also installs its own SIGINT/SIGTERM handlers), and its allow-list is a
 * directory it re-scans by itself at handshakes: changes would apply unvalidated and
 * without SIGHUP, malformed files would be skipped silently. Here the allow-list
 * changes only on reload, and only to a complete valid one.
 *
 * The same thread reads a ZeroMQ socket monitor of each socket and counts failed
 * handshakes by reason (key: ZAP refused the key; protocol: a plain (NULL) client, a
 * bogus ZMTP greeting or CURVE command; other: a handshake cut short, or no ZAP
 * handler), each logged at log_rate lines per second. A refused client reconnects by
 * itself, so one client counts once per attempt. A peer that does not even send the
 * ZMTP signature (random bytes) is dropped by libzmq 4.3 without a handshake event: it
 * gets nothing through but is not counted.
 *
 * Threads: open/apply/start/reload/close and counters_get are called from the main
 * thread; the handler thread touches only its sockets, the allow-list (under a mutex)
 * and the counters (atomics). */
#ifndef TSD_SECURITY_H
#define TSD_SECURITY_H

#include <stddef.h>
#include <stdint.h>

/* Reasons of refused handshakes (status counters curve_rejected_NAME). */
enum { TSD_AUTH_KEY, TSD_AUTH_PROTOCOL, TSD_AUTH_OTHER, TSD_AUTH_REASONS };

/* "key", "protocol", "other"; NULL out of range. */
const char *tsd_auth_reason_name(int reason);

typedef struct {
    int enabled;
    uint64_t handshakes;                 /* CURVE handshakes completed (allowed clients) */
    uint64_t rejected[TSD_AUTH_REASONS]; /* refused handshakes, by reason */
    uint64_t keys;                       /* public keys in the allow-list in force */
} tsd_security_counters;

typedef struct tsd_security tsd_security;

/* Reads the server's secret key file (NAME.key_secret) and the allow-list directory,
 * and binds the ZAP handler's socket in zctx (requests wait there until
 * tsd_security_start). Every regular file of the directory whose name does not start
 * with "." must be a public key file (curve_key.h); subdirectories are ignored, and so
 * is what is not a regular file (a FIFO, a socket, a device: logged, never opened in a
 * way that blocks); a "*_secret" file, a malformed one, an unreadable or empty
 * directory are errors.
 * Returns 0, or -1 with "FILE[:LINE]: reason" in err. */
int tsd_security_open(tsd_security **out, void *zctx, const char *secret_key_file,
                      const char *authorized_keys, uint32_t log_rate, char *err, size_t errlen);

/* Makes sock (of zctx, not yet bound or connected) a CURVE server under the ZAP
 * handler, and monitors its handshakes; what names it in logs ("ingest"). The monitor
 * of the n-th socket applied (from 0) is TSD_SECURITY_MONITOR "n" in sock's context.
 * libzmq's I/O thread blocks while a monitor has no reader: every socket must be of
 * zctx (tests that apply to a socket of another context read it themselves). Only
 * before tsd_security_start: the handler thread polls the monitors known then. */
#define TSD_SECURITY_MONITOR "inproc://tsmine-security-monitor-"
int tsd_security_apply(tsd_security *s, void *sock, const char *what, char *err, size_t errlen);

/* Starts the handler thread (after every socket is applied). */
int tsd_security_start(tsd_security *s, char *err, size_t errlen);

/* SIGHUP / RELOAD: reads the allow-list directory again and swaps it in when it is
 * valid; otherwise keeps the one in force. msg says which (and the counts). Returns 0
 * or -1. The secret key and the directory's path change only at a restart. */
int tsd_security_reload(tsd_security *s, char *msg, size_t msglen);

/* The counters; all zero (enabled 0) when s is NULL (CURVE off). */
void tsd_security_counters_get(const tsd_security *s, tsd_security_counters *out);

/* Stops the thread and closes the module's sockets (before zmq_ctx_term of the
 * context; the sockets it applied to should be closed first). *s_p = NULL. */
void tsd_security_close(tsd_security **s_p);

#endif
