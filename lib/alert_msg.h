/* SPDX-License-Identifier: Apache-2.0 */
/* alert_msg.h - the engine's alert (stream/engine.h tss_alert) as a tsmine.v1.Alert:
 * what tsmined publishes (daemon/sink/alerts.c) and what `tsmine detect` prints, filled in
 * one place so that a field the engine gains reaches both. */
#ifndef TSMINE_ALERT_MSG_H
#define TSMINE_ALERT_MSG_H

#include "engine.h"
#include "tsmine.pb-c.h"

/* Fills the fields of msg that come from the engine's alert a: its kind, subsequence,
 * distances, scores, event extent, tail, per-stream seq and views (the views only when
 * a->view is not TSS_VIEW_NONE: else they stay as msg has them, 0 after
 * TSMINE__V1__ALERT__INIT, and cost nothing on the wire). Leaves what the sender adds
 * to msg as it is: schema_version, alert_id, stream_id and detected_at_ns. O(1). */
void tsm_alert_msg_fill(Tsmine__V1__Alert *msg, const tss_alert *a);

#endif
