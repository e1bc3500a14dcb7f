/* SPDX-License-Identifier: Apache-2.0 */
/* control.h - the control socket (a ROUTER serving REQ clients): one ControlRequest in,
 * one ControlReply out.
 *   STATUS       daemon counters and every stream's StreamState
 *   STREAM       one stream's StreamState (stream_id)
 *   RECALIBRATE  tss_engine_recalibrate(stream_id as a prefix; "" = all)
 *   RELOAD       the SIGHUP path (tsd_daemon_reload); message says what changed
 * Anything malformed gets ok = false with an error, never a crash, and the socket
 * stays usable: every request, even an unreadable one, gets exactly one reply. */
#ifndef TSD_CONTROL_H
#define TSD_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"

/* Answers one request of len bytes: *reply (malloc'ed, caller frees) of *replylen
 * bytes. Returns 0, or -1 when even the reply could not be built (out of memory).
 * Cost: STATUS is O(streams). */
int tsd_control_handle(tsd_daemon *d, const void *req, size_t len, uint8_t **reply,
                       size_t *replylen);

/* Serves the requests waiting on the control socket (at most a few per call, so the
 * ingest path is not starved); non-blocking. */
void tsd_control_serve(tsd_daemon *d);

#endif
