/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_status.c - `tsmine status`: ask tsmined's control socket (REQ) for its counters
 * and every stream's state, print them as one JSON object (DESIGN 6). */
#include "cli.h"
#include "client.h"
#include "commands.h"
#include "emit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
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
            print_reply(stdout, r);
            rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
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
    .synopsis = "[--endpoint E] [--timeout-ms T] [--curve-key K --server-key S]",
    .summary = "print tsmined's counters without the streams (cheap at any number of streams)",
    .description = "As `tsmine status`, without \"streams\" (its \"streams\" object is empty):\n"
                   "what a monitor polls. Exit status as status's.",
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .run = run_counters,
};

const client_command cmd_status = {
    .name = "status",
    .synopsis = "[--endpoint E] [--stream ID] [--timeout-ms T] [--curve-key K --server-key S]",
    .summary = "print tsmined's counters and stream states as one JSON object",
    .description =
        "Asks tsmined's control socket for its status and prints one JSON object:\n"
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
        "period: the period it came from, 0 for none), calibrated whether the stream\n"
        "scores (warm window, long enough score history), range the distance that scores\n"
        "the threshold now (null until calibrated), events the ANOMALY events opened and\n"
        "last_score the score of the last subsequence. With --stream, only that stream.\n"
        "Exit status: 0, 64 usage, 65 the daemon refused the request (e.g. unknown stream),\n"
        "69 no reply within --timeout-ms, 74 output error, 76 a reply that does not decode.",
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .options = CLIENT_OPT_STREAM_ONE,
    .run = run,
};
