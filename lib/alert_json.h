/* SPDX-License-Identifier: Apache-2.0 */
/* alert_json.h - an Alert as one JSON object with its proto field names (`kind` as
 * its name, `view` as its lowercase name, non-finite numbers as null; the event extent
 * only for ANOMALY and ANOMALY_END, `tail` only when set, the views only when `view`
 * is): what `tsmine alerts` and `tsmine detect`
 * print and what tsmined publishes on its MQTT alert topics (DESIGN 6; issue 20), in
 * one place so that the forms cannot drift apart. */
#ifndef TSMINE_ALERT_JSON_H
#define TSMINE_ALERT_JSON_H

#include <stddef.h>

#include "tsmine.pb-c.h"

/* The longest text tsm_alert_json writes for a stream id of at most 255 bytes (each
 * byte escaped as \u00XX at worst), its NUL included. */
#define TSM_ALERT_JSON_MAX (6 * 255 + 960)

/* The name of an alert kind as the proto spells it ("DISCORD"), or "UNKNOWN". */
const char *tsm_alert_kind_name(int kind);

/* The name of a detection view (tsmine.v1.View, engine.h tss_view) as the JSON forms
 * write it: "shape", "magnitude", "level"; NULL for VIEW_UNSPECIFIED (the alert carries
 * no views), "unknown" for a value this tsmine does not know. */
const char *tsm_alert_view_name(int view);

/* Writes the alert into buf (size len, NUL-terminated when len > 0; no newline).
 * Returns the length the whole text needs, as snprintf does. O(length of the id). */
size_t tsm_alert_json(char *buf, size_t len, const Tsmine__V1__Alert *a);

#endif
