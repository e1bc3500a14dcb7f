/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_alerts.c - `tsmine alerts`: subscribe to tsmined's alerts (SUB) and print each
 * as one line, flushed at once: JSON (DESIGN 5.2, 6), or for a person on a terminal a
 * readable line (alert_text.h; --format, display.h). */
#include "cli.h"
#include "commands.h"
#include "companion.h"
#include "display.h"
#include "lib/alert_text.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sysexits.h>
#include <zmq.h>

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

/* Prints alert a as one line: JSON, or readable through text (when not NULL). */
static void print_alert(const Tsmine__V1__Alert *a, tsm_alert_text *text) {
    if (!text) {
        client_print_alert(stdout, a);
        return;
    }
    char line[2048];
    size_t n = tsm_alert_text_line(text, a, line, sizeof line);
    fwrite(line, 1, n < sizeof line ? n : sizeof line - 1, stdout);
    fputc('\n', stdout);
}

/* Receives one alert (topic frame, then the Alert) and prints it (print_alert).
 * Returns 1 when an alert was printed, 0 when the message was not one (reported and
 * skipped), -1 when receiving or writing failed (reported). */
static int receive_one(void *sock, const char *endpoint, tsm_alert_text *text) {
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int more = 0, got = -1;
    size_t len = sizeof more;
    if (zmq_msg_recv(&topic, sock, 0) < 0) {
        if (zmq_errno() != EINTR)
            cli_error("alerts: %s: receiving: %s", endpoint, zmq_strerror(zmq_errno()));
        goto out;
    }
    zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &len);
    got = 0;
    if (!more) {
        cli_error("alerts: %s: a one-frame message (%zu bytes), not topic + Alert: skipped",
                  endpoint, zmq_msg_size(&topic));
        goto out;
    }
    if (zmq_msg_recv(&body, sock, 0) < 0) {
        got = -1;
        goto out;
    }
    for (;;) { /* drop any further frames of the same message */
        zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &len);
        if (!more)
            break;
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        zmq_msg_recv(&extra, sock, 0);
        zmq_msg_close(&extra);
    }
    Tsmine__V1__Alert *a =
        tsmine__v1__alert__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
    if (!a) {
        cli_error("alerts: %s: a message that does not decode as an Alert (%zu bytes): skipped",
                  endpoint, zmq_msg_size(&body));
        goto out;
    }
    print_alert(a, text);
    tsmine__v1__alert__free_unpacked(a, NULL);
    got = fflush(stdout) == 0 ? 1 : -1;
    if (got < 0)
        cli_error("alerts: writing the output: %s", strerror(errno));
out:
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return got;
}

static int run(const client_args *a) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    void *zctx = zmq_ctx_new();
    void *sock =
        zctx ? client_secure_socket(zctx, ZMQ_SUB, a->endpoint, 0, 0, &a->curve, "alerts") : NULL;
    if (!sock) {
        if (zctx)
            zmq_ctx_term(zctx);
        return EX_UNAVAILABLE;
    }
    tsm_alert_text *text = NULL;
    if (display_options()->format == DISPLAY_TEXT &&
        !(text = tsm_alert_text_new(display_options()->local))) {
        cli_error("alerts: out of memory");
        zmq_close(sock);
        zmq_ctx_term(zctx);
        return EX_SOFTWARE;
    }
    const char *prefix = a->stream ? a->stream : "";
    zmq_setsockopt(sock, ZMQ_SUBSCRIBE, prefix, strlen(prefix));

    uint64_t printed = 0;
    int rc = 0;
    while (!stop_flag && (a->count == 0 || printed < a->count)) {
        zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};
        int ready = zmq_poll(&item, 1, a->timeout_ms ? a->timeout_ms : -1);
        if (ready < 0) {
            if (zmq_errno() == EINTR)
                continue;
            cli_error("alerts: %s: %s", a->endpoint, zmq_strerror(zmq_errno()));
            rc = EX_UNAVAILABLE;
            break;
        }
        if (ready == 0) { /* no alert for timeout_ms */
            if (a->count) {
                cli_error("alerts: %s: %llu of %llu alerts after %ld ms without one%s", a->endpoint,
                          (unsigned long long)printed, (unsigned long long)a->count, a->timeout_ms,
                          client_curve_hint(&a->curve));
                rc = EX_TEMPFAIL;
            }
            break;
        }
        int got = receive_one(sock, a->endpoint, text);
        if (got < 0 && !stop_flag) {
            rc = EX_IOERR;
            break;
        }
        printed += got > 0;
    }
    if (a->verbose)
        cli_error("alerts: %llu alerts", (unsigned long long)printed);
    tsm_alert_text_destroy(&text);
    zmq_close(sock);
    zmq_ctx_term(zctx);
    return rc;
}

const client_command cmd_alerts = {
    .name = "alerts",
    .synopsis = "[--endpoint E] [--stream PREFIX] [--count N] [--timeout-ms T] [--format "
                "text|json] [--local] [--curve-key K --server-key S]",
    .summary = "print tsmined's alerts as they arrive (readable, or JSON lines)",
    .description =
        "Subscribes to tsmined's alert socket and prints each alert as one line, flushed at\n"
        "once. On a terminal (standard output is a tty) the line is for a person:\n"
        "  2023-11-14T22:18:20.000Z  site/pump-7  ANOMALY       score 0.9991  event opens at\n"
        "    #300..#323 (m 24), unlike anything before (nearest #120, distance 4.1)\n"
        "the time of its first sample (ISO 8601, UTC unless --local), the stream, the kind,\n"
        "the score and what happened, sample numbers as #N; an event's extent shows its\n"
        "length in samples and, once the stream's sample period is known from two of its\n"
        "alerts, in time. Otherwise (a pipe, a file), or with --format json, each alert is\n"
        "one JSON line with the fields of tsmine.v1.Alert, as scripts read it:\n"
        "  {\"alert_id\":7,\"stream_id\":\"s1\",\"kind\":\"ANOMALY\",\"start_seq\":I,\n"
        "   \"start_timestamp_ns\":T,\"length\":M,\"distance\":D,\"neighbor_seq\":J,\n"
        "   \"threshold\":R,\"score\":C,\"event_start_seq\":A,\"event_end_seq\":B,\n"
        "   \"tail\":\"FAR\",\"view\":\"magnitude\",\"shape_score\":C1,\"magnitude_score\":C2,\n"
        "   \"level_score\":C3,\"magnitude_distance\":D2,\"magnitude_neighbor_seq\":J2,\n"
        "   \"level\":L,\"detected_seq\":Q,\"detected_at_ns\":T2,\"seq\":S}\n"
        "kind is ANOMALY (an event opened), ANOMALY_END (it closed: its extent [A, B) and its\n"
        "peak subsequence), DISCORD, MOTIF, GAP, RESET or LEFT_DISCORD; event_start_seq and\n"
        "event_end_seq come with ANOMALY and ANOMALY_END only, tail (FAR: unusually far from\n"
        "its nearest earlier neighbour, NEAR: unusually near) with the scored kinds, and so\n"
        "do the views: view is the one whose score is score (magnitude; shape for a DISCORD\n"
        "or a numeric range), then each view's score in [0, 1], the plain Euclidean\n"
        "distance to the nearest earlier subsequence at J2 and how far the values lie\n"
        "outside the window's range (in its widths); a DISCORD has the shape view only.\n"
        "The text form ends a scored alert with them: \"; view magnitude (shape 0.4102,\n"
        "magnitude 0.9991, level 0.0000)\".\n"
        "detected_seq is the sample whose processing produced the alert. A distance,\n"
        "threshold or score that is not a number is null. seq numbers each stream's alerts\n"
        "1, 2, 3, ...: a jump forward is alerts this subscriber lost (its queue at the\n"
        "daemon was full, or the daemon could not send them). Runs until interrupted, N\n"
        "alerts were printed, or no alert came for T ms. Exit status: 0 (also on\n"
        "SIGINT/SIGTERM), 64 usage, 69 socket error, 74 output error, 75 when --count N was\n"
        "not reached before --timeout-ms.",
    .endpoint = CLIENT_ALERTS_DEFAULT,
    .timeout_ms = 0,
    .options = CLIENT_OPT_STREAM_PREFIX | CLIENT_OPT_COUNT,
    .run = run,
};
