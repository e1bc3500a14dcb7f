/* SPDX-License-Identifier: Apache-2.0 */
/* alert_publisher.h - the thread that hands alerts to the sinks (sink.h; alerts.h, threaded
 * mode), so that the main loop only numbers and queues them.
 *
 * Bounded queues of numbered alerts (rings of bytes: an alert takes about 80 bytes
 * plus its stream id) between one producer (the main thread) and the thread: push
 * never blocks (it refuses when the queue is full: the caller counts a drop); the
 * thread takes what is queued, sends it outside the lock and frees the slots. Two
 * lanes: LEFT_DISCORD and GAP alerts of a stream with nothing in the bulk lane go
 * ahead of the bulk lane (DISCORD and MOTIF, which come in bursts from the passes),
 * so the low-latency alert never waits behind another stream's burst; each stream's
 * alerts still leave in the order they were queued (alert_publisher.c says why). Across
 * streams the order, and so the order of alert_id, may differ from the queue's. Only
 * the thread offers alerts to the sinks while it runs. */
#ifndef TSD_ALERT_PUBLISHER_H
#define TSD_ALERT_PUBLISHER_H

#include <stddef.h>

#include "daemon/sink/sink.h"

typedef struct tsd_publisher tsd_publisher;

/* Starts the thread with a queue of capacity bytes; each alert then goes to the nsinks
 * sinks (copied, at most TSD_SINKS_MAX; tsd_sinks_offer). 0, or -1 with a message in
 * err. */
int tsd_publisher_start(tsd_publisher **out, const tsd_sink *sinks, size_t nsinks, size_t capacity,
                        char *err, size_t errlen);
/* Queues copies of r[0..n) in order under one lock, waking the thread at most once;
 * returns how many were queued; the others found the queue full and are added to
 * refused[kind slot] (tsd_alert_slot). O(n). */
size_t tsd_publisher_push(tsd_publisher *p, const tsd_alert_rec *r, size_t n,
                          uint64_t refused[TSS_ALERT_KINDS]);
/* TEST ONLY: hold = 1 stops the thread from taking more alerts (those it is sending
 * still leave; pushes still queue), 0 lets it go on; stop ends a hold. */
void tsd_publisher_hold(tsd_publisher *p, int hold);
/* What the thread has counted so far, and what its queue holds (queued), by kind: one
 * consistent copy (an alert moves from queued to published or dropped under the lock). */
void tsd_publisher_counts(tsd_publisher *p, tsd_alert_sends *out);
/* Sends everything queued, joins the thread, returns its final counts in *out and
 * frees it; *p becomes NULL. */
void tsd_publisher_stop(tsd_publisher **p, tsd_alert_sends *out);

#endif
