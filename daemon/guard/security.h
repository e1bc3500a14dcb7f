/* SPDX-License-Identifier: Apache-2.0 */
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
 * directory; the ZAP reply's User-Id is the key, so libzmq tags every message of the
 * connection with it). Why not CZMQ's zauth: it serves only CZMQ's own context (zsys_init,
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
 * Revocation (issue 17 item 8): ZAP runs only at a handshake, so a key removed from the
 * allow-list at a reload would keep its connections. So every message read from an
 * ingest or control socket is checked against the allow-list in force
 * (tsd_security_admit, by its User-Id): a removed key's messages, those already queued
 * included, are refused and counted, and the connection it came on is cut; and at a
 * reload that removes keys every alert subscriber's connection is cut (a PUB socket
 * cannot tell its subscribers apart), the allowed ones reconnect and pass ZAP again.
 * With stream_owners on, a batch is admitted only when its stream id matches a
 * pattern of its key's file (lib/curve_key.h, metadata streams).
 *
 * Threads: open/apply/start/reload/close, admit, set_stream_owners and counters_get
 * are called from the main thread; the handler thread touches only its sockets, the
 * allow-list and the listening addresses (under a mutex) and the counters (atomics). */
#ifndef TSD_SECURITY_H
#define TSD_SECURITY_H

#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "daemon/source/decode.h" /* tsd_sender, the reasons admit returns */

/* Reasons of refused handshakes (status counters curve_rejected_NAME). */
enum { TSD_AUTH_KEY, TSD_AUTH_PROTOCOL, TSD_AUTH_OTHER, TSD_AUTH_REASONS };

/* "key", "protocol", "other"; NULL out of range. */
const char *tsd_auth_reason_name(int reason);

typedef struct {
    int enabled;
    uint64_t handshakes;                 /* CURVE handshakes completed (allowed clients) */
    uint64_t rejected[TSD_AUTH_REASONS]; /* refused handshakes, by reason */
    uint64_t keys;                       /* public keys in the allow-list in force */
    uint64_t revoked; /* messages refused: their key left the allow-list at a reload */
    uint64_t cut;     /* connections cut: of revoked keys, and subscribers at a reload */
} tsd_security_counters;

typedef struct tsd_security tsd_security;

/* Reads the server's secret key file (NAME.key_secret) and the allow-list directory,
 * and binds the ZAP handler's socket in zctx (requests wait there until
 * tsd_security_start). Every regular file of the directory whose name does not start
 * with "." must be a public key file (lib/curve_key.h); subdirectories are ignored, and so
 * is what is not a regular file (a FIFO, a socket, a device: logged, never opened in a
 * way that blocks); a "*_secret" file, a malformed one, one key in two files with
 * different streams, an unreadable or empty directory are errors.
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
 * valid; otherwise keeps the one in force. When the new list lacks keys of the old
 * one, every connection of the PUB sockets is cut (see above; the removed keys' other
 * connections are cut when their next message is refused). msg says which (the
 * counts, the keys removed, the connections cut). Returns 0 or -1. The secret key and
 * the directory's path change only at a restart. Cost: the directory's files, and
 * with keys removed a walk of the process's descriptors. */
int tsd_security_reload(tsd_security *s, char *msg, size_t msglen);

/* The sender of a message read from a secured socket (key, descriptor, host), or
 * {NULL, -1, NULL} when s is NULL (CURVE off). */
tsd_sender tsd_security_sender(const tsd_security *s, zmq_msg_t *msg);

/* The ingest admit hook (decode.h; ctx: the tsd_security) and the control socket's
 * check. stream_id NULL: TSS_OK when from's key is in the allow-list in force, else
 * TSD_REASON_REVOKED: counted (revoked), logged at the rate limit, and the connection
 * cut (once per descriptor, when it is still one our sockets accepted from that host).
 * With a stream id: TSS_OK unless stream_owners is on and no pattern of the key's
 * file matches it (TSD_REASON_NOT_OWNER; a key file without streams matches none).
 * O(1) hash lookup under the mutex, plus O(patterns) fnmatch calls. */
int tsd_security_admit(void *ctx, const tsd_sender *from, const char *stream_id);

/* security.curve.stream_owners, at start and on reload: whether batches are checked
 * against their key's streams. Logs the change. */
void tsd_security_set_stream_owners(tsd_security *s, int on);

/* The counters; all zero (enabled 0) when s is NULL (CURVE off). */
void tsd_security_counters_get(const tsd_security *s, tsd_security_counters *out);

/* Stops the thread and closes the module's sockets (before zmq_ctx_term of the
 * context; the sockets it applied to should be closed first). *s_p = NULL. */
void tsd_security_close(tsd_security **s_p);

#endif
