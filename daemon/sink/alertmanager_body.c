/* SPDX-License-Identifier: Apache-2.0 */
/* alertmanager_body.c - the JSON of Alertmanager's POST /api/v2/alerts for anomaly
 * events (alertmanager.h, tsd_am_body). Pure: no I/O, no clock. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/core/text_buf.h"
#include "daemon/sink/alertmanager.h"
#include "lib/alert_json.h" /* tsm_alert_view_name */

/* s as a JSON string: quotes, backslashes and control characters escaped; bytes of
 * 0x80 and more (never in a stream id, decode.c valid_id) as U+FFFD so that the body
 * stays valid UTF-8 whatever the caller gives. */
static void jstring(tsd_text *t, const char *s) {
    tsd_text_put(t, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            tsd_text_put(t, "\\%c", *p);
        else if (*p < 0x20)
            tsd_text_put(t, "\\u%04x", *p);
        else if (*p >= 0x80)
            tsd_text_put(t, "\\ufffd");
        else
            tsd_text_put(t, "%c", *p);
    }
    tsd_text_put(t, "\"");
}

/* A time as RFC 3339 in UTC with milliseconds ("2026-11-27T21:03:04.123Z"). */
static void jtime(tsd_text *t, int64_t ns) {
    const time_t s = (time_t)(ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000);
    const long ms = (long)((ns - (int64_t)s * 1000000000) / 1000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    tsd_text_put(t, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/* A number as an annotation (annotations are strings): %.9g, "NaN" for NaN. */
static void jnumber(tsd_text *t, const char *key, double v) {
    if (isnan(v))
        tsd_text_put(t, ",\"%s\":\"NaN\"", key);
    else
        tsd_text_put(t, ",\"%s\":\"%.9g\"", key, v);
}

/* The detection views as annotations (never labels: the alert's identity stays the
 * stream's), for an alert that carries them: the view behind the score, each view's
 * score, the magnitude view's distance and neighbour, the level view's value. */
static void views(tsd_text *t, const tss_alert *a) {
    const char *view = tsm_alert_view_name(a->view);
    if (!view)
        return;
    tsd_text_put(t, ",\"view\":\"%s\"", view);
    jnumber(t, "shape_score", a->shape_score);
    jnumber(t, "magnitude_score", a->magnitude_score);
    jnumber(t, "level_score", a->level_score);
    jnumber(t, "magnitude_distance", a->magnitude);
    if (!isnan(a->magnitude))
        tsd_text_put(t, ",\"magnitude_neighbor_seq\":\"%llu\"",
                     (unsigned long long)a->magnitude_neighbor_seq);
    jnumber(t, "level", a->level);
}

/* One event's alert object. The labels are the alert's identity, the same firing and
 * resolved; the annotations describe the ANOMALY while open, the event's peak and
 * extent once closed (the ANOMALY_END carries them), only the summary for an event
 * resumed from a checkpoint (its ANOMALY's details are not kept there) or closed by
 * tsd_am_reconcile. */
static void one(tsd_text *t, const tsd_am_event *e, const tsd_am_ident *id,
                int64_t firing_ends_ns) {
    const tsd_alert_rec *a = e->end ? e->end : e->open;
    tsd_text_put(t, "{\"labels\":{\"alertname\":\"TsmineAnomaly\",\"stream\":");
    jstring(t, e->open->stream_id);
    tsd_text_put(t, ",\"kind\":\"anomaly\",\"daemon\":");
    jstring(t, id->daemon);
    tsd_text_put(t, "},\"annotations\":{\"summary\":");
    char summary[TSS_MAX_ID + 160];
    /* length 0: made by the sender, with no details (tsd_am_resume, tsd_am_reconcile) */
    const int bare = a->alert.length == 0;
    if (bare && !e->end)
        snprintf(summary, sizeof summary, "anomaly on %s: open when tsmined restarted",
                 e->open->stream_id);
    else if (bare)
        snprintf(summary, sizeof summary,
                 "anomaly on %s: closed without its end (the stream was removed, or its "
                 "ANOMALY_END lost)",
                 e->open->stream_id);
    else if (e->end)
        snprintf(summary, sizeof summary,
                 "anomaly on %s ended: samples %llu to %llu, peak score %.4f at %llu",
                 e->open->stream_id, (unsigned long long)a->alert.event_start_seq,
                 (unsigned long long)a->alert.event_end_seq, a->alert.score,
                 (unsigned long long)a->alert.start_seq);
    else
        snprintf(summary, sizeof summary, "anomaly on %s: score %.4f, %u samples from %llu",
                 e->open->stream_id, a->alert.score, a->alert.length,
                 (unsigned long long)a->alert.start_seq);
    jstring(t, summary);
    if (!bare) {
        jnumber(t, "distance", a->alert.distance);
        jnumber(t, "score", a->alert.score);
        jnumber(t, "threshold", a->alert.threshold);
        tsd_text_put(t, ",\"start_seq\":\"%llu\",\"length\":\"%u\"",
                     (unsigned long long)a->alert.start_seq, a->alert.length);
        if (a->alert.start_timestamp_ns > 0) {
            tsd_text_put(t, ",\"start_time\":");
            jtime(t, a->alert.start_timestamp_ns);
        }
        tsd_text_put(t, ",\"event_start_seq\":\"%llu\"",
                     (unsigned long long)a->alert.event_start_seq);
        if (e->end)
            tsd_text_put(t, ",\"event_end_seq\":\"%llu\"",
                         (unsigned long long)a->alert.event_end_seq);
        views(t, &a->alert);
    }
    tsd_text_put(t, "},\"startsAt\":");
    jtime(t, e->open->detected_at_ns);
    tsd_text_put(t, ",\"endsAt\":");
    int64_t ends = e->end ? e->end->detected_at_ns : firing_ends_ns;
    jtime(t, ends > e->open->detected_at_ns ? ends : e->open->detected_at_ns);
    if (id->generator_url && *id->generator_url) {
        tsd_text_put(t, ",\"generatorURL\":");
        jstring(t, id->generator_url);
    }
    tsd_text_put(t, "}");
}

size_t tsd_am_body(char *buf, size_t len, const tsd_am_event *ev, size_t n, const tsd_am_ident *id,
                   int64_t firing_ends_ns) {
    tsd_text t = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    tsd_text_put(&t, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            tsd_text_put(&t, ",");
        one(&t, &ev[i], id, firing_ends_ns);
    }
    tsd_text_put(&t, "]");
    return t.used;
}

size_t tsd_am_counter_rows(const tsd_am_counters *a, tsd_counter out[8]) {
    const tsd_counter rows[] = {
        TSD_COUNTER("alertmanager_sent", "tsmine_alertmanager_alerts_sent_total", "counter",
                    "Firing alerts Alertmanager accepted, once per URL (re-sends included).",
                    a->sent),
        TSD_COUNTER("alertmanager_resolved", "tsmine_alertmanager_alerts_resolved_total", "counter",
                    "Resolved alerts Alertmanager accepted, once per URL.", a->resolved),
        TSD_COUNTER(
            "alertmanager_failures", "tsmine_alertmanager_send_failures_total", "counter",
            "Requests to Alertmanager that failed (no connection, timeout, HTTP 5xx or 429); "
            "their alerts are retried with backoff.",
            a->failures),
        TSD_COUNTER("alertmanager_rejected", "tsmine_alertmanager_alerts_rejected_total", "counter",
                    "Alerts Alertmanager refused with HTTP 4xx (not 429): dropped for that URL.",
                    a->rejected),
        TSD_COUNTER("alertmanager_queue_drops", "tsmine_alertmanager_queue_drops_total", "counter",
                    "Anomaly events lost before the sender: its queue or event table was full.",
                    a->queue_drops),
        TSD_COUNTER(
            "alertmanager_orphaned", "tsmine_alertmanager_orphaned_alerts_total", "counter",
            "Open alerts resolved because the engine no longer had their event (the stream was "
            "removed, or the ANOMALY_END was lost).",
            a->orphaned),
        TSD_COUNTER("alertmanager_open", "tsmine_alertmanager_open_alerts", "gauge",
                    "Anomaly events open now, re-sent every resend_interval.", a->open),
        {"alertmanager_last_success_time", "tsmine_alertmanager_last_success_timestamp_seconds",
         "gauge", "When a request to Alertmanager last succeeded (0: never).",
         (uint64_t)a->last_success_s, a->last_success_s, 1},
    };
    memcpy(out, rows, sizeof rows);
    return sizeof rows / sizeof rows[0];
}
