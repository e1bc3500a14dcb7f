/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_status.c - `tsmine status`: ask tsmined's control socket (REQ) for its counters
 * and every stream's state, print them as one JSON object (DESIGN 6), or for a person
 * on a terminal as a table of the streams and the daemon's health (--format,
 * display.h). */
#include "cli.h"
#include "commands.h"
#include "companion.h"
#include "display.h"
#include "lib/alert_text.h"
#include "lib/emit.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

/* Prints ,"key":{"NAME":N,...} for a list of counters. */
static void print_counters(FILE *out, const char *key, Tsmine__V1__Counter **c, size_t n) {
    fprintf(out, ",\"%s\":{", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        emit_json_string(out, c[i]->name);
        fprintf(out, ":%" PRIu64, c[i]->value);
    }
    fputc('}', out);
}

static void print_stream(FILE *out, const Tsmine__V1__StreamState *s) {
    emit_json_string(out, s->stream_id);
    fprintf(out,
            ":{\"samples\":%" PRIu64 ",\"alerts\":%" PRIu64 ",\"next_seq\":%" PRIu64
            ",\"window_fill\":%" PRIu64 ",\"window\":%" PRIu32 ",\"subsequence\":%" PRIu32
            ",\"hop\":%" PRIu32 ",\"range\":",
            s->samples, s->alerts, s->next_seq, s->window_fill, s->window, s->subsequence, s->hop);
    client_print_double(out, s->range);
    fprintf(out,
            ",\"subsequence_auto\":%s,\"period\":%" PRIu32 ",\"warmup\":%" PRIu32 ",\"threshold\":",
            s->subsequence_auto ? "true" : "false", s->period, s->warmup);
    client_print_double(out, s->threshold);
    fprintf(out, ",\"calibrated\":%s,\"event_open\":%s,\"events\":%" PRIu64 ",\"last_score\":",
            s->calibrated ? "true" : "false", s->event_open ? "true" : "false", s->events);
    client_print_double(out, s->last_score);
    fprintf(out, ",\"gaps\":%" PRIu64 ",\"rejected\":%" PRIu64 ",\"epoch\":%" PRIu64 ",\"idle_s\":",
            s->gaps, s->rejected, s->epoch);
    client_print_double(out, s->idle_seconds);
    fputc('}', out);
}

/* The reply as one JSON object on one line. */
static void print_reply(FILE *out, const Tsmine__V1__ControlReply *r) {
    fputs("{\"streams\":{", out);
    for (size_t i = 0; i < r->n_streams; i++) {
        if (i)
            fputc(',', out);
        print_stream(out, r->streams[i]);
    }
    fputc('}', out);
    print_counters(out, "rejected", r->rejected, r->n_rejected);
    print_counters(out, "alerts_by_kind", r->alerts_by_kind, r->n_alerts_by_kind);
    print_counters(out, "counters", r->counters, r->n_counters);
    fputs(",\"backend\":", out);
    emit_json_string(out, r->backend);
    fputs(",\"version\":", out);
    emit_json_string(out, r->version);
    if (r->message && *r->message) {
        fputs(",\"message\":", out);
        emit_json_string(out, r->message);
    }
    fputs("}\n", out);
}

/* ---- The text form ------------------------------------------------------------- */

/* Counter `name` of the list c[0..n) into *v; 0 when the daemon has none of that name. */
static int find(Tsmine__V1__Counter **c, size_t n, const char *name, uint64_t *v) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i]->name, name) == 0) {
            *v = c[i]->value;
            return 1;
        }
    return 0;
}

/* A daemon-wide counter of the reply, 0 when absent. */
static uint64_t counter(const Tsmine__V1__ControlReply *r, const char *name) {
    uint64_t v = 0;
    find(r->counters, r->n_counters, name, &v);
    return v;
}

/* A byte count as "16.7 MiB". */
static void bytes_text(char *buf, size_t len, uint64_t b) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* The streams most alerts first (then most samples, then by id). */
static int by_alerts(const void *pa, const void *pb) {
    const Tsmine__V1__StreamState *a = *(Tsmine__V1__StreamState *const *)pa,
                                  *b = *(Tsmine__V1__StreamState *const *)pb;
    if (a->alerts != b->alerts)
        return a->alerts > b->alerts ? -1 : 1;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    return strcmp(a->stream_id, b->stream_id);
}

/* The table of streams: one row each, most alerts first, the first `top` (0: all),
 * then a line that counts the rest. O(n log n). */
static int print_streams(FILE *out, const Tsmine__V1__ControlReply *r, size_t top) {
    size_t n = r->n_streams, shown = top && top < n ? top : n;
    Tsmine__V1__StreamState **s = malloc((n ? n : 1) * sizeof *s);
    if (!s) {
        cli_error("status: out of memory");
        return EX_SOFTWARE;
    }
    memcpy(s, r->streams, n * sizeof *s);
    qsort(s, n, sizeof *s, by_alerts);
    char id[4 * 255 + 1], idle[48];
    int w = 6; /* "STREAM" */
    for (size_t i = 0; i < shown; i++) {
        tsm_term_safe(id, sizeof id, s[i]->stream_id);
        int c = tsm_text_columns(id);
        w = c > w ? c : w;
    }
    if (shown)
        fprintf(out, "%-*s  %10s  %7s  %-5s  %5s  %-10s  %10s  %s\n", w, "STREAM", "SAMPLES",
                "ALERTS", "EVENT", "M", "CALIBRATED", "LAST SCORE", "IDLE");
    for (size_t i = 0; i < shown; i++) {
        const Tsmine__V1__StreamState *t = s[i];
        char m[16], score[16];
        tsm_term_safe(id, sizeof id, t->stream_id);
        snprintf(m, sizeof m, t->subsequence ? "%" PRIu32 : "-", t->subsequence);
        snprintf(score, sizeof score, isfinite(t->last_score) ? "%.4f" : "-", t->last_score);
        tsm_duration_text(idle, sizeof idle, t->idle_seconds);
        fprintf(out, "%s%*s  %10" PRIu64 "  %7" PRIu64 "  %-5s  %5s  %-10s  %10s  %s\n", id,
                w - tsm_text_columns(id), "", t->samples, t->alerts, t->event_open ? "open" : "-",
                m, t->calibrated ? "yes" : "no", score, idle);
    }
    if (shown < n) {
        uint64_t alerts = 0;
        for (size_t i = shown; i < n; i++)
            alerts += s[i]->alerts;
        fprintf(out, "... and %zu more streams with %" PRIu64 " alerts (--top 0 lists all)\n",
                n - shown, alerts);
    }
    free(s);
    return 0;
}

/* "a 5, b 3" of the non-zero counters of a list, or "none". */
static void nonzero(FILE *out, Tsmine__V1__Counter **c, size_t n) {
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i]->value)
            fprintf(out, "%s%s %" PRIu64, any++ ? ", " : "", c[i]->name, c[i]->value);
    fputs(any ? "" : "none", out);
}

/* The health lines: one function each, in the order printed (a new line is a row). */
typedef void (*health_fn)(FILE *out, const Tsmine__V1__ControlReply *r);

static void health_samples(FILE *out, const Tsmine__V1__ControlReply *r) {
    uint64_t n = counter(r, "samples"), up = counter(r, "uptime_seconds");
    fprintf(out, "%" PRIu64 " accepted", n);
    if (up)
        fprintf(out, ", %.0f/s on average since the start", (double)n / (double)up);
    fprintf(out, "; %" PRIu64 " waiting to be processed", counter(r, "pending_samples"));
}

static void health_alerts(FILE *out, const Tsmine__V1__ControlReply *r) {
    fprintf(out, "%" PRIu64 " published", counter(r, "alerts_published"));
    int any = 0;
    for (size_t i = 0; i < r->n_alerts_by_kind; i++)
        if (r->alerts_by_kind[i]->value)
            fprintf(out, "%s%s %" PRIu64, any++ ? ", " : " (", r->alerts_by_kind[i]->name,
                    r->alerts_by_kind[i]->value);
    fputs(any ? ")" : "", out);
}

static void health_rejected(FILE *out, const Tsmine__V1__ControlReply *r) {
    nonzero(out, r->rejected, r->n_rejected);
}

static void health_drops(FILE *out, const Tsmine__V1__ControlReply *r) {
    static const struct {
        const char *counter, *what;
    } drops[] = {
        {"alert_drops", "alerts (a subscriber too slow)"},
        {"samples_dropped", "samples (deleted streams)"},
        {"checkpoint_streams_dropped", "streams left out of a checkpoint"},
        {"alertmanager_queue_drops", "Alertmanager alerts"},
        {"mqtt_alert_drops", "MQTT alerts"},
        {"control_reply_drops", "control replies"},
        {"log_lines_dropped", "log lines"},
    };
    int any = 0;
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
        uint64_t v = counter(r, drops[i].counter);
        if (v)
            fprintf(out, "%s%" PRIu64 " %s", any++ ? ", " : "", v, drops[i].what);
    }
    fputs(any ? "" : "none", out);
}

static void health_memory(FILE *out, const Tsmine__V1__ControlReply *r) {
    char res[32], budget[32];
    bytes_text(res, sizeof res, counter(r, "resident_bytes"));
    bytes_text(budget, sizeof budget, counter(r, "memory_budget_bytes"));
    fprintf(out, "%s resident of a %s budget", res, budget);
    if (counter(r, "memory_pressure"))
        fputs(", UNDER PRESSURE now", out);
    if (counter(r, "memory_pressure_episodes"))
        fprintf(out, " (%" PRIu64 " times under pressure)", counter(r, "memory_pressure_episodes"));
}

static void health_checkpoints(FILE *out, const Tsmine__V1__ControlReply *r) {
    uint64_t n = counter(r, "checkpoints"), failed = counter(r, "checkpoint_failures"), last;
    if (n == 0)
        fputs("none written yet", out);
    else
        fprintf(out, "%" PRIu64 " written", n);
    if (failed)
        fprintf(out, ", %" PRIu64 " FAILED", failed);
    if (n && find(r->counters, r->n_counters, "checkpoint_last_success_time", &last) && last) {
        char age[48];
        tsm_duration_text(age, sizeof age, (double)time(NULL) - (double)last);
        fprintf(out, "; the last %s ago", age);
    } else if (n) {
        fputs("; this daemon does not say when the last was", out);
    }
}

static const struct {
    const char *label;
    health_fn print;
} health[] = {
    {"samples", health_samples}, {"alerts", health_alerts}, {"rejected", health_rejected},
    {"drops", health_drops},     {"memory", health_memory}, {"checkpoints", health_checkpoints},
};

/* The reply as text: the streams' table (streams), then the daemon's health (health:
 * a STREAM reply has no counters). */
static int print_text(FILE *out, const Tsmine__V1__ControlReply *r, int streams, int health_too,
                      size_t top) {
    int rc = streams ? print_streams(out, r, top) : 0;
    if (rc != 0 || !health_too)
        return rc;
    if (streams)
        fputc('\n', out);
    char up[48];
    tsm_duration_text(up, sizeof up, (double)counter(r, "uptime_seconds"));
    fprintf(out, "tsmined %s, %s backend, up %s, %" PRIu64 " streams\n", r->version, r->backend, up,
            counter(r, "streams"));
    for (size_t i = 0; i < sizeof health / sizeof health[0]; i++) {
        fprintf(out, "  %-12s ", health[i].label);
        health[i].print(out, r);
        fputc('\n', out);
    }
    if (r->message && *r->message)
        fprintf(out, "%s\n", r->message);
    return rc;
}

/* STATUS, or STREAM with --stream; counters_only: COUNTERS. */
static int ask(const client_args *a, int counters_only) {
    if (a->stream && strlen(a->stream) > 255) {
        cli_error("status: --stream: a stream id has at most 255 bytes");
        return EX_USAGE;
    }
    int rc = EX_UNAVAILABLE;
    void *zctx = zmq_ctx_new();
    if (zctx) {
        int cmd = counters_only ? TSMINE__V1__CONTROL_REQUEST__COMMAND__COUNTERS
                  : a->stream   ? TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM
                                : TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS;
        Tsmine__V1__ControlReply *r = client_control(zctx, a->endpoint, cmd, a->stream,
                                                     a->timeout_ms, &a->curve, "status", &rc);
        if (r && !r->ok) {
            cli_error("status: the daemon refused: %s", *r->error ? r->error : "no reason given");
            rc = EX_DATAERR;
        } else if (r) {
            const display_opts *d = display_options();
            rc = d->format == DISPLAY_TEXT
                     ? print_text(stdout, r, !counters_only, !a->stream, d->top)
                     : (print_reply(stdout, r), 0);
            rc = fflush(stdout) == 0 ? rc : EX_IOERR;
        }
        if (r)
            tsmine__v1__control_reply__free_unpacked(r, NULL);
        zmq_ctx_term(zctx);
    }
    return rc;
}

static int run(const client_args *a) {
    return ask(a, 0);
}

static int run_counters(const client_args *a) {
    return ask(a, 1);
}

const client_command cmd_counters = {
    .name = "counters",
    .synopsis =
        "[--endpoint E] [--timeout-ms T] [--format text|json] [--curve-key K --server-key S]",
    .summary = "print tsmined's counters without the streams (cheap at any number of streams)",
    .description =
        "As `tsmine status`, without \"streams\" (its \"streams\" object is empty; on a\n"
        "terminal, the health lines without the table): what a monitor polls. Exit\n"
        "status as status's.",
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .run = run_counters,
};

const client_command cmd_status = {
    .name = "status",
    .synopsis = "[--endpoint E] [--stream ID] [--timeout-ms T] [--format text|json] [--top N] "
                "[--curve-key K --server-key S]",
    .summary = "print tsmined's stream states and health (a table, or one JSON object)",
    .description =
        "Asks tsmined's control socket for its status. On a terminal (standard output is a\n"
        "tty) it prints a table for a person, one row per stream, most alerts first (the\n"
        "first --top N, then a count of the rest): SAMPLES accepted, ALERTS published, EVENT\n"
        "open or not, M (the subsequence length; - while it waits for the warm-up),\n"
        "CALIBRATED, LAST SCORE and IDLE (since its last batch); then the daemon's health:\n"
        "samples accepted and per second on average since the start, alerts by kind,\n"
        "messages rejected by reason, what was dropped, memory, checkpoints. Otherwise (a\n"
        "pipe, a file), or with --format json, it prints one JSON object, as scripts read it:\n"
        "  {\"streams\":{\"ID\":{\"samples\":N,\"alerts\":N,\"next_seq\":S,\"window_fill\":F,\n"
        "   \"window\":W,\"subsequence\":M,\"hop\":H,\"range\":R,\"subsequence_auto\":true,\n"
        "   \"period\":P,\"warmup\":U,\"threshold\":T,\"calibrated\":true,\"event_open\":false,\n"
        "   "
        "\"events\":E,\"last_score\":S,\"gaps\":G,\"rejected\":B,\"epoch\":P,\"idle_s\":I},...},\n"
        "   \"rejected\":{\"REASON\":N,...},\n"
        "   \"alerts_by_kind\":{\"DISCORD\":N,...},\"counters\":{...},\"backend\":\"cpu\",\n"
        "   \"version\":\"...\"}\n"
        "samples counts the samples accepted into the stream, rejected (per stream) the\n"
        "batches refused, and the top-level rejected the messages refused by reason.\n"
        "subsequence is the m in force (0 while an automatic m waits for the warm-up;\n"
        "period: the period it came from, 0 for none), calibrated whether events can\n"
        "open (warm window, a magnitude history of 250 values), range the shape distance\n"
        "that scores the threshold now (what passes a DISCORD; null while warming up),\n"
        "events the ANOMALY events opened and last_score the score the events follow of\n"
        "the last subsequence. With --stream, only that stream\n"
        "(and, as text, no health lines). Exit status: 0, 64 usage, 65 the daemon refused\n"
        "the request (e.g. unknown stream), 69 no reply within --timeout-ms, 74 output\n"
        "error, 76 a reply that does not decode.",
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .options = CLIENT_OPT_STREAM_ONE,
    .run = run,
};
