/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_replay.c - `tsmine replay`: publish a series file as one stream to tsmined's
 * ingest socket (PUSH), batched and optionally paced (DESIGN 6), losing nothing across
 * a restart of the daemon (docs/protocol.md, "Across daemon restarts").
 *
 * A PUSH has no acknowledgement: what a daemon had not processed when it stopped (in
 * its queues, on the wire, in ours) goes with its connection. So the replay makes one
 * connection per run of the daemon (libzmq never makes it again by itself:
 * CLIENT_ONCE), watches it with a socket monitor, and when it drops, connects anew,
 * asks the new daemon's control socket for the stream's next_seq (STREAM) and sends
 * the file again from that sample. Nothing reaches a new daemon before it answered,
 * so it never gets a batch past its next_seq (a GAP) nor one before (a duplicate). At
 * the end the replay waits until the daemon's next_seq has the last batch, so that a
 * restart during the last messages is caught as well.
 *
 * Sample k keeps one timestamp for the whole replay, however often it is sent: the
 * file's own (--timestamps file, the default with a timestamp column), the same shifted
 * to start at the replay's start (now), or start + k * period (period). All are fixed
 * before the first message, so a batch sent again after a restart carries exactly the
 * timestamps it had the first time. */
#include "cli.h"
#include "commands.h"
#include "companion.h"
#include "lib/alert_text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

/* What the link functions return when the connection dropped (the daemon went away). */
#define LINK_LOST (-2)

/* The monitor events of a connection: up, and down for good (CLIENT_ONCE). */
#define LINK_UP ZMQ_EVENT_HANDSHAKE_SUCCEEDED
#define LINK_DOWN                                                                                  \
    (ZMQ_EVENT_CLOSED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |            \
     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

/* The pause before connecting again where nobody listens (libzmq's ZMQ_RECONNECT_IVL). */
#define RECONNECT_S 0.1

/* How often the end of a replay asks whether the daemon has the last batch. */
#define CONFIRM_POLL_MS 20

/* One replay: the file, the connection to the daemon's current run, and what the
 * daemon should have of the stream. Sample k of the file is sequence number
 * first_seq + k. */
typedef struct {
    const client_args *a;
    const series *s;
    void *zctx;
    void *push, *monitor; /* the connection; NULL between two runs of the daemon */
    const char *control;  /* where to ask for the stream's next_seq; NULL: no resuming */
    int64_t *ts;          /* sample k's timestamp: ts[k] (file, now), whatever is resent */
    int64_t t0, period;   /* without ts: t0 + k * period */
    double start;         /* cli_now() at the start, for --rate */
    uint8_t *buf;         /* the message being sent */
    size_t cap;
    size_t at;          /* the next sample to send */
    size_t want;        /* the daemon's next_seq - first_seq once it took every batch sent
                         * that it should accept (0: none yet) */
    uint64_t rejected0; /* the stream's rejected count when this connection began */
    uint64_t refusals;  /* batches sent since that it refuses (NaN, --nonfinite send) */
    int settled;        /* the daemon has every batch: nothing left to deliver */
    size_t messages, samples, restarts, again;
} replay;

/* Sleeps until `at` seconds on the monotonic clock (cli_now's clock). */
static void sleep_until(double at) {
    struct timespec ts = {.tv_sec = (time_t)at, .tv_nsec = (long)((at - floor(at)) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Milliseconds left until `end` (cli_now's clock), for zmq_poll: -1 (for ever) with
 * --timeout-ms 0. */
static long left_ms(const client_args *a, double end) {
    if (a->timeout_ms == 0)
        return -1;
    double ms = 1e3 * (end - cli_now());
    return ms > 0 ? (long)ms + 1 : 0;
}

static int past(const client_args *a, double end) {
    return a->timeout_ms != 0 && cli_now() >= end;
}

static double deadline(const client_args *a) {
    return cli_now() + 1e-3 * (double)a->timeout_ms;
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

static int all_finite(const double *v, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return 0;
    return 1;
}

/* The name series_io gives FILE in its messages. */
static const char *file_name(const client_args *a) {
    return strcmp(a->file, "-") == 0 ? "<stdin>" : a->file;
}

/* A timestamp field for a message: what a terminal would act on as \xNN, cut at 64. */
static const char *shown(char buf[static 72], const char *t) {
    tsm_term_safe(buf, 72, t);
    return buf;
}

/* The timestamps of --timestamps file or now, into a new array *out of one per sample:
 * each row's, read by series_parse_time. A row without one (a blank row, a missing
 * value: sent only with --nonfinite send) takes the one before it (at the start, the
 * first after it). They must increase from row to row: a repeat or a step back is
 * refused, naming the row, unless --backwards hold, which sends such a row with the
 * timestamp before it (*held counts them). With now they are shifted so that the first
 * is t0. Returns 0 or an exit status after printing why. O(n). */
static int file_times(const client_args *a, const series *s, int64_t t0, int64_t **out,
                      size_t *held) {
    const char *name = file_name(a);
    int64_t *ts = malloc(s->n * sizeof *ts);
    if (!ts) {
        cli_error("replay: out of memory for the timestamps of %zu samples", s->n);
        return EX_SOFTWARE;
    }
    size_t last = SIZE_MAX; /* the last row with a timestamp */
    int rc = 0;
    char q[72], q0[72];
    *held = 0;
    for (size_t k = 0; k < s->n && rc == 0; k++) {
        const char *t = series_time(s, (int64_t)k);
        size_t line = series_time_line(s, (int64_t)k);
        if (!*t && !isfinite(s->v[k]))
            continue;
        if (!*t) {
            cli_error("replay: %s:%zu: a value without a timestamp (--timestamps period numbers "
                      "the samples instead)",
                      name, line);
            rc = EX_DATAERR;
        } else if (series_parse_time(t, &ts[k]) != 0) {
            cli_error("replay: %s:%zu: '%s' is not a timestamp (YYYY-MM-DD HH:MM:SS, ISO 8601, or "
                      "seconds since the epoch; --timestamps period numbers the samples instead)",
                      name, line, shown(q, t));
            rc = EX_DATAERR;
        } else if (last != SIZE_MAX && ts[k] <= ts[last]) {
            if (a->hold_backwards) {
                ts[k] = ts[last];
                ++*held;
            } else {
                cli_error("replay: %s:%zu: timestamp '%s' %s '%s' of line %zu: the file's "
                          "timestamps must increase (--backwards hold sends such a row with the "
                          "timestamp before it; --timestamps period numbers the samples instead)",
                          name, line, shown(q, t), ts[k] == ts[last] ? "repeats" : "is before",
                          shown(q0, series_time(s, (int64_t)last)),
                          series_time_line(s, (int64_t)last));
                rc = EX_DATAERR;
            }
        }
        last = rc == 0 && *t ? k : last;
    }
    if (rc == 0 && last == SIZE_MAX) { /* only missing values, none with a timestamp */
        cli_error("replay: %s: no row has a timestamp", name);
        rc = EX_DATAERR;
    }
    if (rc) {
        free(ts);
        return rc;
    }
    /* the rows without one: the timestamp before them, or at the start the first one */
    size_t first = 0;
    while (!*series_time(s, (int64_t)first))
        first++;
    int64_t fill = ts[first];
    for (size_t k = 0; k < s->n; k++) {
        if (*series_time(s, (int64_t)k))
            fill = ts[k];
        ts[k] = fill;
    }
    if (a->timestamps == CLIENT_TIMESTAMPS_NOW) {
        const int64_t from = ts[0];
        for (size_t k = 0; k < s->n; k++)
            if (__builtin_sub_overflow(ts[k], from, &ts[k]) ||
                __builtin_add_overflow(t0, ts[k], &ts[k])) {
                cli_error("replay: %s: from now, the file's timestamps would go past 2262", name);
                free(ts);
                return EX_DATAERR;
            }
    }
    *out = ts;
    return 0;
}

/* Closes the connection. What it still queues is dropped, unless linger_ms (the end of
 * a replay that cannot ask the daemon what it has): a resumed replay sends it again. */
static void link_close(replay *r, int linger_ms) {
    if (r->push) {
        zmq_setsockopt(r->push, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
        zmq_socket_monitor(r->push, NULL, 0);
        zmq_close(r->push);
    }
    if (r->monitor)
        zmq_close(r->monitor);
    r->push = r->monitor = NULL;
}

/* Connects to the ingest socket and waits until a daemon completed the handshake,
 * connecting again every RECONNECT_S while nobody listens, for at most --timeout-ms
 * (again: the daemon went away). Returns 0, or EX_UNAVAILABLE after printing why. */
static int link_up(replay *r, int again) {
    const client_args *a = r->a;
    double end = deadline(a);
    for (;;) {
        r->push =
            client_monitored_socket(r->zctx, ZMQ_PUSH, a->endpoint, CLIENT_IMMEDIATE | CLIENT_ONCE,
                                    0, &a->curve, "replay", LINK_UP | LINK_DOWN, &r->monitor);
        if (!r->push)
            return EX_UNAVAILABLE;
        int ev = 0;
        while (!(ev & (LINK_UP | LINK_DOWN)) && !past(a, end))
            ev = client_monitor_event(r->monitor, left_ms(a, end));
        if (ev == LINK_UP)
            return 0;
        link_close(r, 0);
        if (past(a, end)) {
            if (again)
                cli_error("replay: %s: the daemon went away and none came back within %ld ms",
                          a->endpoint, a->timeout_ms);
            else
                cli_error("replay: %s: no daemon took a message within %ld ms (is tsmined "
                          "running and listening there?%s)",
                          a->endpoint, a->timeout_ms, client_curve_hint(&a->curve));
            return EX_UNAVAILABLE;
        }
        sleep_until(cli_now() + RECONNECT_S);
    }
}

/* Sends the len bytes of r->buf, waiting while the daemon lags (the socket's SNDHWM
 * is full: the backpressure) for at most --timeout-ms. Returns 0, LINK_LOST when the
 * connection dropped first (the message is not sent), or an exit status after printing
 * why. */
static int link_send(replay *r, size_t len) {
    const client_args *a = r->a;
    double end = deadline(a);
    for (;;) {
        zmq_pollitem_t it[2] = {{.socket = r->monitor, .events = ZMQ_POLLIN},
                                {.socket = r->push, .events = ZMQ_POLLOUT}};
        int n = zmq_poll(it, 2, left_ms(a, end));
        if (n < 0 && zmq_errno() != EINTR) {
            cli_error("replay: %s: %s", a->endpoint, zmq_strerror(zmq_errno()));
            return EX_SOFTWARE;
        }
        if (n > 0 && (it[0].revents & ZMQ_POLLIN)) { /* the monitor first: never send late */
            if (client_monitor_event(r->monitor, 0) & LINK_DOWN)
                return LINK_LOST;
            continue;
        }
        if (n > 0 && (it[1].revents & ZMQ_POLLOUT)) {
            if (zmq_send(r->push, r->buf, len, ZMQ_DONTWAIT) >= 0)
                return 0;
            if (zmq_errno() != EAGAIN && zmq_errno() != EINTR) {
                cli_error("replay: %s: sending: %s", a->endpoint, zmq_strerror(zmq_errno()));
                return EX_UNAVAILABLE;
            }
            continue;
        }
        if (past(a, end)) {
            cli_error("replay: %s: no daemon took a message within %ld ms (is tsmined running "
                      "and listening there?%s)",
                      a->endpoint, a->timeout_ms, client_curve_hint(&a->curve));
            return EX_UNAVAILABLE;
        }
    }
}

/* The stream as the daemon has it. */
typedef struct {
    int known; /* 0: the daemon has no such stream */
    uint64_t next_seq, rejected;
} stream_view;

/* Asks the control socket for the stream (STREAM). Returns 0, LINK_LOST when the
 * ingest connection dropped meanwhile (the daemon is going away: its answer would not
 * hold), or an exit status after printing why. */
static int ask_stream(replay *r, stream_view *v) {
    const client_args *a = r->a;
    for (;;) {
        int rc;
        Tsmine__V1__ControlReply *rep =
            client_control_watch(r->zctx, r->control, TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM,
                                 a->stream, a->timeout_ms, &a->curve, "replay", r->monitor, &rc);
        if (!rep && rc == 0) { /* the monitor spoke first */
            if (client_monitor_event(r->monitor, 0) & LINK_DOWN)
                return LINK_LOST;
            continue;
        }
        if (!rep)
            return rc;
        rc = 0;
        *v = (stream_view){0};
        if (rep->ok && rep->n_streams == 1) {
            v->known = 1;
            v->next_seq = rep->streams[0]->next_seq;
            v->rejected = rep->streams[0]->rejected;
        } else if (rep->ok || strncmp(rep->error, "unknown stream", 14) != 0) {
            cli_error("replay: %s: STREAM %s: %s", r->control, a->stream,
                      rep->ok ? "a reply without the stream" : rep->error);
            rc = EX_PROTOCOL;
        }
        tsmine__v1__control_reply__free_unpacked(rep, NULL);
        return rc;
    }
}

/* As a connection begins, asks where the daemon has the stream: the baseline of its
 * refusals and, after a restart, the sample to go on from, its next_seq (from the
 * first sample when it has none of the stream). Returns ask_stream's status. */
static int begin(replay *r, int restart) {
    const client_args *a = r->a;
    stream_view v;
    int rc = ask_stream(r, &v);
    if (rc)
        return rc;
    r->rejected0 = v.rejected;
    r->refusals = 0;
    if (!restart)
        return 0;
    size_t to = 0;
    if (v.known && v.next_seq > a->first_seq)
        to = v.next_seq - a->first_seq >= r->s->n ? r->s->n : (size_t)(v.next_seq - a->first_seq);
    if (a->verbose)
        cli_error("replay: %s: the daemon restarted; it has the stream up to %" PRIu64
                  ": sending from there (%zu samples again)",
                  a->stream, a->first_seq + to, r->at > to ? r->at - to : 0);
    r->again += r->at > to ? r->at - to : 0;
    r->at = r->want = to;
    return 0;
}

/* After the connection dropped: connects to the daemon that comes back and goes on
 * from its next_seq; without a control socket to ask, from where the replay was (what
 * the daemon lost is a gap). Returns 0 or an exit status after printing why. */
static int resync(replay *r) {
    const client_args *a = r->a;
    for (;;) {
        link_close(r, 0);
        int rc = link_up(r, 1);
        if (rc)
            return rc;
        r->restarts++;
        if (!r->control) {
            if (a->resume < 0 && r->restarts == 1)
                cli_error("replay: %s: the daemon went away; without --control the replay cannot "
                          "ask it where to resume, so what it lost of %s is a gap",
                          a->endpoint, a->stream);
            return 0;
        }
        rc = begin(r, 1);
        if (rc != LINK_LOST)
            return rc;
    }
}

/* Waits until the daemon's next_seq has every batch sent that it should accept
 * (r->settled), asking every CONFIRM_POLL_MS; stops waiting, successfully, when it
 * refused more batches of the stream than expected (next_seq then never gets there:
 * `tsmine status` says why; the socket's linger delivers the rest, as without a
 * control socket). Returns 0, LINK_LOST, or an exit status after --timeout-ms without
 * progress. */
static int confirm(replay *r) {
    const client_args *a = r->a;
    const uint64_t want = a->first_seq + r->want;
    double end = deadline(a);
    stream_view last = {0};
    for (;;) {
        stream_view v;
        int rc = ask_stream(r, &v);
        if (rc)
            return rc;
        if (r->want == 0 || (v.known && v.next_seq >= want)) {
            r->settled = 1;
            return 0;
        }
        if (v.known && v.rejected > r->rejected0 + r->refusals) {
            if (a->verbose)
                cli_error("replay: %s: the daemon refused %" PRIu64 " batches of the stream "
                          "(`tsmine status` says why); it has it up to %" PRIu64 " of %" PRIu64,
                          a->stream, v.rejected - r->rejected0, v.next_seq, want);
            return 0;
        }
        if (v.known != last.known || v.next_seq != last.next_seq) /* progress */
            end = deadline(a);
        last = v;
        if (past(a, end)) {
            if (v.known)
                cli_error("replay: %s: the daemon has the stream up to %" PRIu64 " of %" PRIu64
                          ", and no further within %ld ms",
                          a->stream, v.next_seq, want, a->timeout_ms);
            else
                cli_error("replay: %s: the daemon has not created the stream within %ld ms "
                          "(`tsmine status` says what it refused)",
                          a->stream, a->timeout_ms);
            return EX_UNAVAILABLE;
        }
        if (client_monitor_event(r->monitor, CONFIRM_POLL_MS) & LINK_DOWN)
            return LINK_LOST;
    }
}

/* Packs the batch [i, j) into r->buf: with timestamps of the file, as a first one and
 * a period where they are evenly spaced in it (the smaller message, whose first one a
 * GAP before it counts back from), else one per sample; else t0 + k * period. Returns
 * the packed size, 0 when out of memory. */
static size_t pack(replay *r, size_t i, size_t j) {
    const client_args *a = r->a;
    const uint64_t seq = a->first_seq + i;
    const double *v = r->s->v + i;
    const size_t n = j - i;
    if (!r->ts)
        return client_pack_batch(a->stream, seq, NULL, r->t0 + (int64_t)i * r->period, r->period, v,
                                 n, &r->buf, &r->cap);
    const int64_t *t = r->ts + i;
    int64_t step = 0, d; /* the ts are non-decreasing: a step is >= 0 unless it overflows */
    int even = !(n > 1 ? __builtin_sub_overflow(t[1], t[0], &step)
                       : i > 0 && __builtin_sub_overflow(t[0], t[-1], &step));
    for (size_t k = 2; k < n && even; k++)
        even = !__builtin_sub_overflow(t[k], t[k - 1], &d) && d == step;
    return client_pack_batch(a->stream, seq, even ? NULL : t, t[0], step, v, n, &r->buf, &r->cap);
}

/* Sends every batch of the file from r->at, going on after each restart of the daemon,
 * then (with a control socket) waits until the daemon has them. Returns the exit
 * status. */
static int send_all(replay *r) {
    const client_args *a = r->a;
    const series *s = r->s;
    for (;;) {
        while (r->at < s->n) {
            size_t i = r->at;
            if (a->nonfinite == CLIENT_NONFINITE_GAP && !isfinite(s->v[i])) {
                r->at++;
                continue;
            }
            size_t j = batch_end(s, i, a);
            if (a->rate > 0) /* a batch leaves when its last sample is due */
                sleep_until(r->start + (double)(j - 1) / a->rate);
            size_t len = pack(r, i, j);
            if (len == 0) {
                cli_error("replay: out of memory for a message of %zu samples", j - i);
                return EX_SOFTWARE;
            }
            int rc = link_send(r, len);
            if (rc == LINK_LOST)
                rc = resync(r); /* r->at: where to go on */
            else if (rc == 0) {
                r->messages++, r->samples += j - i;
                if (all_finite(s->v + i, j - i))
                    r->want = j;
                else
                    r->refusals++;
                r->at = j;
            }
            if (rc)
                return rc;
        }
        if (!r->control)
            return 0;
        int rc = confirm(r);
        if (rc == LINK_LOST)
            rc = resync(r);
        else
            return rc;
        if (rc)
            return rc;
    }
}

/* The control socket to ask after a restart: --control, else the daemon's default one
 * when --endpoint is its default ingest socket; NULL with --no-resume or when unknown. */
static const char *control_of(const client_args *a) {
    if (a->resume == 0)
        return NULL;
    if (a->control)
        return a->control;
    return strcmp(a->endpoint, CLIENT_INGEST_DEFAULT) == 0 ? CLIENT_CONTROL_DEFAULT : NULL;
}

static int run(const client_args *a) {
    replay r = {.a = a, .control = control_of(a)};
    if (a->resume == 1 && !r.control) {
        cli_error("replay: --resume asks the daemon's control socket where to go on: give "
                  "--control E with --endpoint");
        return EX_USAGE;
    }
    const int from_file =
        a->timestamps == CLIENT_TIMESTAMPS_FILE || a->timestamps == CLIENT_TIMESTAMPS_NOW;
    if (from_file && a->period_ns) {
        cli_error("replay: --period-ns goes with --timestamps period (with --timestamps %s the "
                  "file's timestamps keep their own spacing)",
                  a->timestamps == CLIENT_TIMESTAMPS_FILE ? "file" : "now");
        return EX_USAGE;
    }
    char err[512];
    series s = {0};
    int rc = cli_input_status(series_read(a->file, a->input_format, &s, err, sizeof err), err);
    if (rc != 0)
        return rc;
    r.s = &s;
    r.period = a->period_ns ? a->period_ns : a->rate > 0 ? (int64_t)(1e9 / a->rate) : 1000000000;
    r.t0 = client_realtime_ns();
    size_t held = 0;
    if (from_file && !s.time_at) {
        cli_error("replay: --timestamps %s: %s has no timestamp column (one named timestamp, "
                  "time, date or datetime, or a first column that is not numbers)",
                  a->timestamps == CLIENT_TIMESTAMPS_FILE ? "file" : "now", file_name(a));
        rc = EX_USAGE;
    } else if (from_file ||
               (a->timestamps == CLIENT_TIMESTAMPS_DEFAULT && s.time_at && !a->period_ns)) {
        rc = file_times(a, &s, r.t0, &r.ts, &held);
    }
    if (rc != 0) {
        series_free(&s);
        return rc;
    }
    if (a->verbose) {
        char t0[40], t1[40];
        tsm_time_text(t0, sizeof t0, r.ts ? r.ts[0] : r.t0, 0);
        tsm_time_text(t1, sizeof t1, r.ts ? r.ts[s.n - 1] : r.t0 + (int64_t)(s.n - 1) * r.period,
                      0);
        cli_error("replay: %s: timestamps %s to %s (%s)", a->stream, t0, t1,
                  !r.ts                                    ? "the replay's start + k * period"
                  : a->timestamps == CLIENT_TIMESTAMPS_NOW ? "the file's, from now"
                                                           : "the file's");
        if (held)
            cli_error("replay: %s: rows sent with the timestamp before theirs, which was not "
                      "after it (--backwards hold): %zu",
                      file_name(a), held);
    }
    r.start = cli_now();
    r.zctx = zmq_ctx_new();
    rc = r.zctx ? link_up(&r, 0) : EX_UNAVAILABLE;
    if (rc == 0 && r.control) {
        rc = begin(&r, 0);
        if (rc == LINK_LOST)
            rc = resync(&r);
        else if (rc != 0 && !a->control && a->resume < 0) { /* the default one: not there */
            cli_error("replay: resuming after a daemon restart is off (give --control E)");
            r.control = NULL;
            rc = 0;
        }
    }
    if (rc == 0)
        rc = send_all(&r);
    /* Unless the daemon said it has every batch (or the replay failed), the linger makes
     * zmq_ctx_term wait (up to the timeout) until every queued message is handed to it. */
    int linger = rc || r.settled ? 0 : a->timeout_ms ? (int)a->timeout_ms : -1;
    link_close(&r, linger);
    double t_end = cli_now();
    if (r.zctx)
        zmq_ctx_term(r.zctx);
    /* libzmq does not say whether the linger expired with messages still queued; a
     * term that lasted the whole linger is the sign that it did. */
    if (rc == 0 && linger > 0 && cli_now() - t_end >= 1e-3 * linger) {
        cli_error("replay: %s: the daemon did not take the last messages within %d ms", a->endpoint,
                  linger);
        rc = EX_UNAVAILABLE;
    }
    if (a->verbose) {
        size_t skipped = 0;
        for (size_t k = 0; a->nonfinite == CLIENT_NONFINITE_GAP && k < s.n; k++)
            skipped += !isfinite(s.v[k]);
        cli_error("replay: %s: %zu samples in %zu messages (%zu non-finite left out) in %.3f s; "
                  "%zu restarts of the daemon, %zu samples sent again",
                  a->stream, r.samples, r.messages, skipped, cli_now() - r.start, r.restarts,
                  r.again);
    }
    free(r.buf);
    free(r.ts);
    series_free(&s);
    return rc;
}

const client_command cmd_replay = {
    .name = "replay",
    .synopsis = "--stream ID [--endpoint E] [--control E] [--rate HZ] [--batch N] [--curve-key "
                "K --server-key S] [OPTIONS] FILE",
    .summary = "publish a series file as a stream to tsmined",
    .description =
        "Reads FILE (.csv/.txt: the last column of each row, a header row skipped; .npy;\n"
        ".f64) and pushes it to tsmined's ingest socket as stream ID, N samples per\n"
        "SampleBatch message. Sample k of the file has sequence number S + k. Without\n"
        "--rate it sends as fast as the daemon takes them (sends block while the daemon\n"
        "lags); with --rate a message leaves when its last sample is due: --rate paces the\n"
        "sending, not the timestamps.\n\n"
        "Timestamps (--timestamps): when FILE has a timestamp column (named timestamp,\n"
        "time, date or datetime, or a first column that is not numbers), each sample is\n"
        "sent with its row's (file, the default), so that alerts carry the data's dates;\n"
        "with now, at the file's spacing from the replay's start; with period (the default\n"
        "without a timestamp column, or when --period-ns is given), sample k at the\n"
        "replay's start + k * P. A row's timestamp is YYYY-MM-DD HH:MM:SS (NAB), ISO 8601\n"
        "(a 'T', decimals, Z or an offset; UTC without one) or seconds since the epoch.\n"
        "They must increase: a row whose timestamp repeats or goes back is refused, naming\n"
        "its line, before anything is sent (with --backwards hold it is sent with the\n"
        "timestamp before it). A batch is sent with a first timestamp and a period where\n"
        "the file is evenly spaced, with one timestamp per sample elsewhere; a batch sent\n"
        "again after a restart of the daemon carries the same timestamps.\n\n"
        "Missing values (empty, nan, inf) are left out by default: their sequence numbers\n"
        "are never sent, so the daemon sees a gap, publishes a GAP alert and restarts the\n"
        "stream's window after it (nothing is compared across missing data). With\n"
        "--nonfinite send they are sent as they are, and the daemon rejects every message\n"
        "that holds one (counted under NONFINITE in `tsmine status`).\n\n"
        "A restart of the daemon loses nothing (--resume, the default): when the\n"
        "connection drops, the replay connects again, asks the new daemon's control socket\n"
        "(--control; by default tcp://127.0.0.1:5557 when --endpoint is left at its\n"
        "default, else none) for the stream's next_seq, and sends the file again from that\n"
        "sample: each sample is accepted once, without a GAP. It then also waits at the\n"
        "end until the daemon has the last batch. With --no-resume, or no control socket,\n"
        "it goes on where it was and the daemon reports what it lost as a GAP.\n\n"
        "Exits 0 when the daemon has every batch (with a control socket; without one, when\n"
        "every message was handed to the daemon), 69 when no daemon took one, did not come\n"
        "back after a restart or took no more of the stream within --timeout-ms (also the\n"
        "longest it waits at the end), 64 usage, 65 bad input data (a timestamp that is\n"
        "not one, repeats or goes back included), 66 cannot open FILE.",
    .endpoint = CLIENT_INGEST_DEFAULT,
    .timeout_ms = 30000,
    .options = CLIENT_OPT_STREAM_ID | CLIENT_OPT_REPLAY,
    .run = run,
};
