/* SPDX-License-Identifier: Apache-2.0 */
/* publisher.c - a minimal tsmined sensor in C (libzmq, protobuf-c): sends the stream
 * publisher.py sends, a noisy sine with an anomaly planted at [2500, 2550), to the
 * daemon's ingest socket (PUSH), then asks its control socket (REQ) whether every
 * sample was accepted. docs/protocol.md explains each step.
 *
 *     tsmine-example-publisher [--ingest E] [--control E] [--stream ID]
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <zmq.h>

#include "tsmine.pb-c.h" /* protoc-c --c_out=. tsmine.proto */

enum { N = 4000, PERIOD = 50, BATCH = 256, ANOMALY_AT = 2500, ANOMALY_END = 2550 };
#define PERIOD_NS 10000000LL /* 100 samples a second */

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The samples of publisher.py, to the bit: a sine plus noise from a 31-bit LCG. */
static void series(double *x) {
    uint64_t state = 1;
    for (int k = 0; k < N; k++) {
        state = (1103515245 * state + 12345) % 2147483648u;
        double noise = (double)(state >> 15) / 65536.0 - 0.5;
        double amp = k >= ANOMALY_AT && k < ANOMALY_END ? 3.0 : 0.25;
        x[k] = sin(2 * M_PI * k / PERIOD) + amp * noise;
    }
}

/* The daemon's next expected sequence number of stream id and its epoch (a STREAM
 * request on a fresh REQ socket: one whose request went unanswered cannot send
 * again). 0, or -1 when it does not answer within 1 s or knows no such stream. */
static int stream_state(void *zctx, const char *endpoint, const char *id, uint64_t *next_seq,
                        uint64_t *epoch) {
    Tsmine__V1__ControlRequest req = TSMINE__V1__CONTROL_REQUEST__INIT;
    req.schema_version = 1;
    req.command = TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM;
    req.stream_id = (char *)id;
    uint8_t buf[65536];
    size_t len = tsmine__v1__control_request__pack(&req, buf); /* ids are <= 255 bytes */
    void *s = zmq_socket(zctx, ZMQ_REQ);
    int linger = 0, rc = -1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
    int got = zmq_connect(s, endpoint) == 0 && zmq_send(s, buf, len, 0) == (int)len &&
                      zmq_poll(&item, 1, 1000) == 1
                  ? zmq_recv(s, buf, sizeof buf, 0)
                  : -1;
    Tsmine__V1__ControlReply *r = got >= 0 && got <= (int)sizeof buf
                                      ? tsmine__v1__control_reply__unpack(NULL, got, buf)
                                      : NULL;
    if (r && r->ok && r->n_streams == 1) {
        *next_seq = r->streams[0]->next_seq, *epoch = r->streams[0]->epoch;
        rc = 0;
    }
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    zmq_close(s);
    return rc;
}

int main(int argc, char **argv) {
    const char *ingest = "tcp://127.0.0.1:5555", *control = "tcp://127.0.0.1:5557";
    const char *id = "example/sine";
    static const struct option opts[] = {
        {"ingest", 1, NULL, 'i'}, {"control", 1, NULL, 'c'}, {"stream", 1, NULL, 's'}, {0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (o == '?')
            return 64;
        *(o == 'i' ? &ingest : o == 'c' ? &control : &id) = optarg;
    }
    static double x[N];
    series(x);
    void *zctx = zmq_ctx_new(), *push = zmq_socket(zctx, ZMQ_PUSH);
    int timeout = 10000; /* send blocks while the daemon's queue is full: 10 s at most; */
    zmq_setsockopt(push, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(push, ZMQ_LINGER, &timeout, sizeof timeout); /* close waits as long */
    zmq_connect(push, ingest); /* the daemon binds; ZeroMQ reconnects by itself */

    const uint64_t epoch = (uint64_t)now_ns();   /* this run: a later one starts over (RESET) */
    const int64_t t0 = now_ns() - N * PERIOD_NS; /* the last sample's timestamp is now */
    int rc = 0;
    for (int first = 0; first < N && rc == 0; first += BATCH) {
        Tsmine__V1__SampleBatch b = TSMINE__V1__SAMPLE_BATCH__INIT;
        b.schema_version = 1;
        b.stream_id = (char *)id;
        b.epoch = epoch;
        b.first_seq = (uint64_t)first;
        b.first_timestamp_ns = t0 + first * PERIOD_NS;
        b.period_ns = PERIOD_NS;
        b.n_values = N - first < BATCH ? N - first : BATCH;
        b.values = x + first;
        uint8_t buf[BATCH * 8 + 512]; /* values, an id of <= 255 bytes, the rest */
        size_t len = tsmine__v1__sample_batch__pack(&b, buf);
        if (zmq_send(push, buf, len, 0) != (int)len) {
            fprintf(stderr, "publisher: %s: %s\n", ingest, zmq_strerror(zmq_errno()));
            rc = 69;
        }
    }
    if (rc == 0)
        printf("sent %d samples of %s in %d messages; anomaly planted at [%d, %d)\n", N, id,
               (N + BATCH - 1) / BATCH, ANOMALY_AT, ANOMALY_END);
    /* PUSH has no acknowledgement: the control socket says what the daemon accepted. */
    uint64_t next = 0, seen_epoch = 0;
    for (int tries = 0; rc == 0; tries++) {
        if (stream_state(zctx, control, id, &next, &seen_epoch) == 0 && seen_epoch == epoch &&
            next == N) {
            printf("daemon: %s accepted up to sequence number %d\n", id, N - 1);
            break;
        }
        if (tries == 300) /* about 30 s */
            rc = 1, fprintf(stderr, "publisher: the daemon did not confirm every sample\n");
        else
            nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    zmq_close(push);
    zmq_ctx_term(zctx);
    return rc;
}
