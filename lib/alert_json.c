/* SPDX-License-Identifier: Apache-2.0 */
/* alert_json.c - an Alert as one JSON object (alert_json.h). */
#include "lib/alert_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "lib/emit.h" /* emit_double, emit_json_char */
#include "lib/textbuf.h"

const char *tsm_alert_kind_name(int kind) {
    switch (kind) {
    case TSMINE__V1__ALERT_KIND__DISCORD: return "DISCORD";
    case TSMINE__V1__ALERT_KIND__LEFT_DISCORD: return "LEFT_DISCORD";
    case TSMINE__V1__ALERT_KIND__MOTIF: return "MOTIF";
    case TSMINE__V1__ALERT_KIND__GAP: return "GAP";
    case TSMINE__V1__ALERT_KIND__ANOMALY: return "ANOMALY";
    case TSMINE__V1__ALERT_KIND__ANOMALY_END: return "ANOMALY_END";
    case TSMINE__V1__ALERT_KIND__RESET: return "RESET";
    }
    return "UNKNOWN";
}

const char *tsm_alert_view_name(int view) {
    switch (view) {
    case TSMINE__V1__VIEW__VIEW_UNSPECIFIED: return NULL;
    case TSMINE__V1__VIEW__SHAPE: return "shape";
    case TSMINE__V1__VIEW__MAGNITUDE: return "magnitude";
    case TSMINE__V1__VIEW__LEVEL: return "level";
    }
    return "unknown";
}

/* A JSON number, or null when x is not finite. */
static void number(tsm_text *t, double x) {
    char num[40];
    if (isfinite(x)) {
        emit_double(num, sizeof num, x);
        tsm_text_put(t, "%s", num);
    } else {
        tsm_text_put(t, "null");
    }
}

/* A JSON string: quotes and backslashes escaped, control bytes as \u00XX. */
static void string(tsm_text *t, const char *s) {
    char e[8];
    tsm_text_put(t, "\"");
    for (; *s; s++) {
        emit_json_char(e, (unsigned char)*s);
        tsm_text_put(t, "%s", e);
    }
    tsm_text_put(t, "\"");
}

size_t tsm_alert_json(char *buf, size_t len, const Tsmine__V1__Alert *a) {
    tsm_text t = tsm_text_of(buf, len);
    tsm_text_put(&t, "{\"alert_id\":%" PRIu64 ",\"stream_id\":", a->alert_id);
    string(&t, a->stream_id ? a->stream_id : "");
    tsm_text_put(&t,
                 ",\"kind\":\"%s\",\"start_seq\":%" PRIu64 ",\"start_timestamp_ns\":%" PRId64
                 ",\"length\":%" PRIu32 ",\"distance\":",
                 tsm_alert_kind_name(a->kind), a->start_seq, a->start_timestamp_ns, a->length);
    number(&t, a->distance);
    tsm_text_put(&t, ",\"neighbor_seq\":%" PRIu64 ",\"threshold\":", a->neighbor_seq);
    number(&t, a->threshold);
    tsm_text_put(&t, ",\"score\":");
    number(&t, a->score);
    if (a->kind == TSMINE__V1__ALERT_KIND__ANOMALY ||
        a->kind == TSMINE__V1__ALERT_KIND__ANOMALY_END)
        tsm_text_put(&t, ",\"event_start_seq\":%" PRIu64 ",\"event_end_seq\":%" PRIu64,
                     a->event_start_seq, a->event_end_seq);
    if (a->tail == TSMINE__V1__TAIL__FAR || a->tail == TSMINE__V1__TAIL__NEAR)
        tsm_text_put(&t, ",\"tail\":\"%s\"", a->tail == TSMINE__V1__TAIL__FAR ? "FAR" : "NEAR");
    const char *view = tsm_alert_view_name(a->view);
    if (view) { /* the scored kinds: each view's score, the magnitude and level views' values */
        tsm_text_put(&t, ",\"view\":\"%s\",\"shape_score\":", view);
        number(&t, a->shape_score);
        tsm_text_put(&t, ",\"magnitude_score\":");
        number(&t, a->magnitude_score);
        tsm_text_put(&t, ",\"level_score\":");
        number(&t, a->level_score);
        tsm_text_put(&t, ",\"magnitude_distance\":");
        number(&t, a->magnitude_distance);
        /* no magnitude distance: no neighbour either (DISCORD) */
        if (isfinite(a->magnitude_distance))
            tsm_text_put(&t, ",\"magnitude_neighbor_seq\":%" PRIu64, a->magnitude_neighbor_seq);
        else
            tsm_text_put(&t, ",\"magnitude_neighbor_seq\":null");
        tsm_text_put(&t, ",\"level\":");
        number(&t, a->level);
    }
    tsm_text_put(
        &t, ",\"detected_seq\":%" PRIu64 ",\"detected_at_ns\":%" PRId64 ",\"seq\":%" PRIu64 "}",
        a->detected_seq, a->detected_at_ns, a->seq);
    return t.n;
}
