/* SPDX-License-Identifier: Apache-2.0 */
/* subscriber.c - tsmined's alerts in C (libzmq, protobuf-c): prints each alert as it
 * arrives, one line each as subscriber.py does, and says when a stream's alert numbers
 * (seq) show that alerts were missed. docs/protocol.md explains each step.
 *
 *     tsmine-example-subscriber [--alerts E] [--count N] [PREFIX]
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "tsmine.pb-c.h" /* protoc-c --c_out=. tsmine.proto */

static volatile sig_atomic_t stop; /* SIGINT, SIGTERM */
static void on_signal(int sig) {
    stop = sig;
}

/* The PUB slow joiner: the daemon sends us only what it publishes after our
 * subscription reached it. The subscription leaves right after the ZeroMQ handshake,
 * so wait for the handshake (a socket monitor event), then a moment for it to cross. */
static int connect_and_wait(void *zctx, void *sub, const char *endpoint, int timeout_ms) {
    zmq_socket_monitor(sub, "inproc://subscriber-monitor", ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
    void *mon = zmq_socket(zctx, ZMQ_PAIR);
    zmq_connect(mon, "inproc://subscriber-monitor");
    zmq_pollitem_t item = {mon, 0, ZMQ_POLLIN, 0};
    int ok = zmq_connect(sub, endpoint) == 0 && zmq_poll(&item, 1, timeout_ms) == 1;
    zmq_socket_monitor(sub, NULL, 0);
    zmq_close(mon);
    if (ok)
        zmq_poll(NULL, 0, 100);
    return ok;
}

/* Prints one alert as a line (subscriber.py prints the same). */
static void print_alert(const Tsmine__V1__Alert *a) {
    const ProtobufCEnumValue *kind =
        protobuf_c_enum_descriptor_get_value(&tsmine__v1__alert_kind__descriptor, a->kind);
    char score[32] = "-";
    if (!isnan(a->score))
        snprintf(score, sizeof score, "%.6f", a->score);
    printf("%s %s seq=%llu start=%llu length=%u distance=%.6g neighbor=%llu score=%s",
           kind ? kind->name : "UNKNOWN", a->stream_id, (unsigned long long)a->seq,
           (unsigned long long)a->start_seq, a->length, a->distance,
           (unsigned long long)a->neighbor_seq, score);
    if (a->kind == TSMINE__V1__ALERT_KIND__ANOMALY ||
        a->kind == TSMINE__V1__ALERT_KIND__ANOMALY_END)
        printf(" event=[%llu,%llu)", (unsigned long long)a->event_start_seq,
               (unsigned long long)a->event_end_seq);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *endpoint = "tcp://127.0.0.1:5556";
    long count = 0;
    static const struct option opts[] = {{"alerts", 1, NULL, 'a'}, {"count", 1, NULL, 'n'}, {0}};
    for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (o == '?')
            return 64;
        if (o == 'a')
            endpoint = optarg;
        else
            count = atol(optarg);
    }
    const char *prefix = optind < argc ? argv[optind] : ""; /* a byte prefix of stream ids */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    void *zctx = zmq_ctx_new(), *sub = zmq_socket(zctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, prefix, strlen(prefix));
    if (!connect_and_wait(zctx, sub, endpoint, 10000)) {
        fprintf(stderr, "subscriber: no handshake with %s within 10 s\n", endpoint);
        zmq_close(sub);
        zmq_ctx_term(zctx);
        return 69;
    }
    fprintf(stderr, "subscribed to '%s' on %s\n", prefix, endpoint);

    struct {
        char id[256];
        uint64_t seq;
    } last[64]; /* the last seq of up to 64 streams */
    int n_last = 0;
    for (long received = 0; !stop && (count == 0 || received < count);) {
        uint8_t topic[256], body[65536]; /* an Alert is a few hundred bytes */
        int more = 0, t = zmq_recv(sub, topic, sizeof topic, 0), len = -1;
        size_t more_len = sizeof more;
        zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &more_len);
        if (t >= 0 && more) /* topic (the stream id), then the Alert */
            len = zmq_recv(sub, body, sizeof body, 0);
        Tsmine__V1__Alert *a = len >= 0 && len <= (int)sizeof body
                                   ? tsmine__v1__alert__unpack(NULL, (size_t)len, body)
                                   : NULL;
        if (!a) /* interrupted by a signal, or not an alert */
            continue;
        int i = 0; /* seq numbers each stream's alerts 1, 2, 3, ... */
        while (i < n_last && strcmp(last[i].id, a->stream_id) != 0)
            i++;
        uint64_t prev = i < n_last ? last[i].seq : 0;
        if (a->seq != prev + 1)
            fprintf(stderr, "# %s: seq %llu after %llu: %s\n", a->stream_id,
                    (unsigned long long)a->seq, (unsigned long long)prev,
                    a->seq > prev ? "alerts missed" : "numbering restarted");
        if (i < 64) {
            snprintf(last[i].id, sizeof last[i].id, "%s", a->stream_id);
            last[i].seq = a->seq;
            n_last += i == n_last;
        }
        print_alert(a);
        tsmine__v1__alert__free_unpacked(a, NULL);
        received++;
    }
    zmq_close(sub);
    zmq_ctx_term(zctx);
    return 0;
}
