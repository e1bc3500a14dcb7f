/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_replay.c - `tsmine replay`: publish a series file as one stream to tsmined's
 * ingest socket (PUSH), batched and optionally paced (DESIGN 6). */
#include "cli.h"
#include "client.h"
#include "commands.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

/* Sleeps until `at` seconds on the monotonic clock (cli_now's clock). */
static void sleep_until(double at) {
    struct timespec ts = {.tv_sec = (time_t)at, .tv_nsec = (long)((at - floor(at)) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The end of the batch that starts at i: up to `batch` samples, stopping before a
 * non-finite one unless they are sent as they are. */
static size_t batch_end(const series *s, size_t i, const client_args *a) {
    size_t j = i;
    while (j < s->n && j - i < a->batch &&
           (a->nonfinite == CLIENT_NONFINITE_SEND || isfinite(s->v[j])))
        j++;
    return j;
}

/* Sends every batch of s; returns the exit status. Messages that libzmq still holds at
 * the end are delivered by the linger of the socket (zmq_ctx_term waits for them). */
static int send_all(const client_args *a, const series *s, void *sock) {
    int64_t period = a->period_ns  ? a->period_ns
                     : a->rate > 0 ? (int64_t)(1e9 / a->rate)
                                   : 1000000000;
    int64_t t0 = client_realtime_ns();
    double start = cli_now();
    uint8_t *buf = NULL;
    size_t cap = 0, messages = 0, samples = 0, skipped = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0;) {
        if (a->nonfinite == CLIENT_NONFINITE_GAP && !isfinite(s->v[i])) {
            i++, skipped++;
            continue;
        }
        size_t j = batch_end(s, i, a);
        if (a->rate > 0) /* a batch leaves when its last sample is due */
            sleep_until(start + (double)(j - 1) / a->rate);
        size_t len = client_pack_batch(a->stream, a->first_seq + i, t0 + (int64_t)i * period,
                                       period, s->v + i, j - i, &buf, &cap);
        if (len == 0) {
            cli_error("replay: out of memory for a message of %zu samples", j - i);
            rc = EX_SOFTWARE;
        } else if (zmq_send(sock, buf, len, 0) < 0) {
            if (zmq_errno() == EAGAIN)
                cli_error("replay: %s: no daemon took a message within %ld ms (is tsmined "
                          "running and listening there?%s)",
                          a->endpoint, a->timeout_ms, client_curve_hint(&a->curve));
            else
                cli_error("replay: %s: sending: %s", a->endpoint, zmq_strerror(zmq_errno()));
            rc = EX_UNAVAILABLE;
        } else {
            messages++, samples += j - i;
        }
        i = j;
    }
    free(buf);
    if (a->verbose)
        cli_error("replay: %s: %zu samples in %zu messages (%zu non-finite left out) in %.3f s",
                  a->stream, samples, messages, skipped, cli_now() - start);
    return rc;
}

static int run(const client_args *a) {
    char err[512];
    series s = {0};
    int rc = cli_input_status(series_read(a->file, a->input_format, &s, err, sizeof err), err);
    if (rc != 0)
        return rc;
    rc = EX_UNAVAILABLE;
    void *zctx = zmq_ctx_new();
    /* The linger makes zmq_ctx_term wait (up to the timeout) until every queued message
     * is handed to the daemon; SNDHWM (libzmq's default, 1000 messages) makes sends
     * block while the daemon lags: that is the backpressure. */
    int linger = a->timeout_ms ? (int)a->timeout_ms : -1;
    /* IMMEDIATE: queue only to a connected daemon, so that with none the first send
     * times out instead of filling a queue nobody reads. */
    void *sock = zctx ? client_secure_socket(zctx, ZMQ_PUSH, a->endpoint, CLIENT_IMMEDIATE, linger,
                                             &a->curve, "replay")
                      : NULL;
    if (sock) {
        zmq_setsockopt(sock, ZMQ_SNDTIMEO, &linger, sizeof linger);
        rc = send_all(a, &s, sock);
        zmq_close(sock);
    }
    double t_end = cli_now();
    if (zctx)
        zmq_ctx_term(zctx);
    /* libzmq does not say whether the linger expired with messages still queued; a
     * term that lasted the whole linger is the sign that it did. */
    if (rc == 0 && linger > 0 && cli_now() - t_end >= 1e-3 * linger) {
        cli_error("replay: %s: the daemon did not take the last messages within %d ms", a->endpoint,
                  linger);
        rc = EX_UNAVAILABLE;
    }
    series_free(&s);
    return rc;
}

const client_command cmd_replay = {
    .name = "replay",
    .synopsis = "--stream ID [--endpoint E] [--rate HZ] [--batch N] [--curve-key K --server-key "
                "S] [OPTIONS] FILE",
    .summary = "publish a series file as a stream to tsmined",
    .description =
        "Reads FILE (.csv/.txt: the last column of each row, a header row skipped; .npy;\n"
        ".f64) and pushes it to tsmined's ingest socket as stream ID, N samples per\n"
        "SampleBatch message. Sample k of the file has sequence number S + k and timestamp\n"
        "(start time) + k * P. Without --rate it sends as fast as the daemon takes them\n"
        "(sends block while the daemon lags); with --rate a message leaves when its last\n"
        "sample is due.\n\n"
        "Missing values (empty, nan, inf) are left out by default: their sequence numbers\n"
        "are never sent, so the daemon sees a gap, publishes a GAP alert and restarts the\n"
        "stream's window after it (nothing is compared across missing data). With\n"
        "--nonfinite send they are sent as they are, and the daemon rejects every message\n"
        "that holds one (counted under NONFINITE in `tsmine status`).\n\n"
        "Exits 0 when every message was handed to the daemon, 69 when no daemon took one\n"
        "within --timeout-ms (also the longest it waits at the end for the last ones),\n"
        "64 usage, 65 bad input data, 66 cannot open FILE.",
    .endpoint = CLIENT_INGEST_DEFAULT,
    .timeout_ms = 30000,
    .options = CLIENT_OPT_STREAM_ID | CLIENT_OPT_REPLAY,
    .run = run,
};
