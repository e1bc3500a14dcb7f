/* sockets.h - tsmined's ZeroMQ sockets, created and bound once at start:
 *   ingest  PULL bound to every ingest.endpoints entry (ZMQ_RCVHWM, ZMQ_MAXMSGSIZE)
 *   sub     SUB connected to every ingest.subscribe entry, all topics (or NULL)
 *   pub     PUB bound to alerts.endpoint (ZMQ_SNDHWM per subscriber; plain PUB: a
 *           full subscriber queue loses that subscriber's alerts only, see alerts.h)
 *   control ROUTER bound to control.endpoint, serving REQ clients (small ZMQ_MAXMSGSIZE)
 * Every socket has a short linger except pub, which gets a bounded one so the last
 * alerts leave at exit. With security.curve set, every one of them is a CURVE server
 * that admits only the clients of the allow-list (security.h). */
#ifndef TSD_SOCKETS_H
#define TSD_SOCKETS_H

#include <stddef.h>

#include "config.h"
#include "security.h"

/* Largest control request accepted (ControlRequest is a command and a stream id). */
#define TSD_CONTROL_MAX_MSG 65536

typedef struct {
    void *zctx;
    void *ingest, *sub, *pub, *control;
    tsd_security *security; /* NULL when CURVE is off */
} tsd_sockets;

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
