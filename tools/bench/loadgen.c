/* SPDX-License-Identifier: Apache-2.0 */
/* loadgen.c - `tsmine-loadgen`: the end-to-end benchmark of a running tsmined (issue
 * 4, "Figures"). It publishes S random-walk streams with planted anomalies through
 * several PUSH sockets (one per thread), as fast as the daemon takes them or at a
 * given total rate, subscribes to the alerts, and prints one JSON line:
 *
 *   {"bench":"daemon_ingest","streams":S,"samples":N,"seconds":T,"samples_per_s":X,
 *    "anomalies":A,"detected":D,"false_events":F,"latency_kind":"ANOMALY","p50_ms":..,
 *    "p99_ms":..,"max_ms":..,...}
 *
 * Throughput ("samples_per_s"): every sample sent divided by the time from the first
 * send until the daemon has PROCESSED all of them (its processed_samples counter grew
 * by the number sent: end to end through ZeroMQ, protobuf decode, staging, the online
 * scoring and the windowed passes). "accepted_per_s" is the same up to the moment the
 * daemon had accepted them all (received and staged, not yet processed).
 * Where the time goes ("time_split"): the daemon's main-thread busy time over the run
 * (STATUS counter ns_busy, from before the first send to the end) split by phase (the
 * ns_<phase> counters: receive, decode, stage, online, passes, publish, other), each as
 * a share of it; "busy_share" is busy time over wall time. "daemon_counters",
 * "daemon_rejected" and "daemon_alerts_by_kind" are the daemon's STATUS counters as this
 * run changed them (levels such as streams or pending_samples as they are at the end),
 * so the second run of tools/bench/daemon-bench does not carry the first one's counts;
 * "alerts" are those this subscriber received, by kind, to compare with
 * "daemon_alerts_by_kind" and the alerts_published_KIND, alert_drops_KIND counters.
 * Detection and latency: a planted anomaly (m samples of a period-5 sine of amplitude 10 in place
 * of the walk: no smooth walk resembles it) is detected when an ANOMALY alert (DESIGN 5.3: the
 * operator-facing kind, one per event) has a subsequence that overlaps it ("detected" of
 * "anomalies"); an ANOMALY that overlaps none is a false event ("false_events"). The latency of a
 * detected anomaly is that of the first such ANOMALY, measured from the send of the message
 * holding its subsequence's last sample to the alert's arrival here (one process, one monotonic
 * clock). (Before issue 16 it was the first LEFT_DISCORD's; "left_discords_unmatched" still
 * counts the LEFT_DISCORD alerts, opt-in now, that overlap no anomaly.) "daemon_p50_ms" and
 * "daemon_p99_ms" are the
 * daemon's part of it: from the same send to the alert's detected_at_ns, when the daemon's engine
 * handed it over (both CLOCK_REALTIME of this host); the rest is the publisher's queue, ZeroMQ and
 * this subscriber. The subscriber has a ZeroMQ context (an I/O thread) of its own, so that the
 * senders' traffic does not delay the alerts it reads. The daemon's parameters (window, m, hop,
 * range) come from its own configuration: this program only publishes, and needs m and the window
 * only to plant anomalies where a warm window can see them. */
#include "lib/client.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

#ifndef TSMINE_VERSION
#define TSMINE_VERSION "unknown"
#endif

typedef struct {
    const char *ingest, *alerts, *control, *prefix;
    size_t streams, samples, batch, m, window, hop, every;
    int threads;
    double rate; /* total samples per second; 0 = as fast as possible */
    uint64_t seed;
    long drain_ms; /* the longest to wait for the daemon to count everything */
} lg_opts;

/* Shared state of one run. sent_ns is written by the senders and read by the
 * subscriber (atomics: the alert arrives after the send, through the daemon). */
typedef struct {
    lg_opts o;
    size_t nbatches;          /* per stream */
    size_t nanom;             /* anomalies per stream */
    _Atomic int64_t *sent_ns; /* [stream][batch]: monotonic ns when it was handed to ZeroMQ */
    int64_t *sent_rt_ns;      /* the same moment by CLOCK_REALTIME (ordered by sent_ns) */
    unsigned char *matched;   /* [stream][anomaly]: its latency was taken (subscriber only) */
    double *lat_ms;           /* latencies, in arrival order (subscriber only) */
    double *daemon_ms;        /* their daemon parts (subscriber only) */
    size_t nlat, unmatched, false_events, alerts,
        alerts_by_kind[TSMINE__V1__ALERT_KIND__ANOMALY_END + 1];
    void *zctx, *sub_zctx; /* the senders' and control's; the subscriber's */
    atomic_int stop;
    int failed;
} lg_run;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A standard normal deviate (Box-Muller; one of the pair is enough here). */
static double gauss(uint64_t *s) {
    double u = ((double)(splitmix(s) >> 11) + 0.5) * 0x1p-53;
    double v = (double)(splitmix(s) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* Start of anomaly k of stream s: after one and a half windows (by then a stream's score
 * history is full: warm-up 300 and 1000 scores for W = 1024, the default bench), then every
 * `every` samples, staggered by stream so that the anomalies of different streams do not
 * all fall in one tick. */
static size_t anomaly_at(const lg_opts *o, size_t s, size_t k) {
    return o->window + o->window / 2 + k * o->every + (s * 131) % (o->every / 2);
}

/* One sender thread: streams t, t + T, t + 2T ...; one batch of each per round. */
typedef struct {
    lg_run *run;
    int t;
} lg_sender;

static void *sender(void *arg) {
    lg_sender *me = arg;
    lg_run *r = me->run;
    const lg_opts *o = &r->o;
    void *sock = client_socket(r->zctx, ZMQ_PUSH, o->ingest, CLIENT_IMMEDIATE, -1, "loadgen");
    size_t mine = (o->streams - (size_t)me->t + (size_t)o->threads - 1) / (size_t)o->threads;
    double *x = calloc(mine, sizeof *x), *base = calloc(mine, sizeof *base);
    uint64_t *rng = calloc(mine, sizeof *rng);
    double *v = malloc(o->batch * sizeof *v);
    uint8_t *buf = NULL;
    size_t cap = 0;
    if (!sock || !x || !base || !rng || !v) {
        r->failed = 1;
        goto out;
    }
    int timeout = (int)o->drain_ms;
    zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    for (size_t q = 0; q < mine; q++)
        rng[q] = o->seed ^ (0x1234567ull * ((size_t)me->t + q * (size_t)o->threads + 1));
    char id[300];
    double share = o->rate / o->threads;                     /* this thread's samples per second */
    int64_t start = mono_ns(), t0_ns = client_realtime_ns(); /* timestamps: 1 ms apart */
    size_t sent = 0;
    for (size_t b = 0; b < r->nbatches && !r->stop; b++) {
        for (size_t q = 0; q < mine && !r->stop; q++) {
            size_t s = (size_t)me->t + q * (size_t)o->threads;
            size_t first = b * o->batch,
                   n = o->samples - first < o->batch ? o->samples - first : o->batch;
            size_t k = 0, a;
            for (size_t i = 0; i < n; i++) { /* the walk, with noise over each anomaly */
                size_t pos = first + i;
                x[q] += gauss(&rng[q]);
                while (k < r->nanom && anomaly_at(o, s, k) + o->m <= pos)
                    k++;
                a = k < r->nanom ? anomaly_at(o, s, k) : SIZE_MAX;
                if (pos == a)
                    base[q] = x[q];
                v[i] = pos >= a && pos < a + o->m
                           ? base[q] + 10 * sin(0.4 * M_PI * (double)(pos - a))
                           : x[q];
            }
            snprintf(id, sizeof id, "%s%zu", o->prefix, s);
            size_t len = client_pack_batch(id, first, NULL, t0_ns + (int64_t)first * 1000000,
                                           1000000, v, n, &buf, &cap);
            if (share > 0) { /* pace: this message leaves when its samples are due */
                int64_t due = start + (int64_t)(1e9 * (double)(sent + n) / share);
                struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
                }
            }
            r->sent_rt_ns[s * r->nbatches + b] = client_realtime_ns();
            atomic_store_explicit(&r->sent_ns[s * r->nbatches + b], mono_ns(),
                                  memory_order_release);
            if (len == 0 || zmq_send(sock, buf, len, 0) < 0) {
                fprintf(stderr, "tsmine-loadgen: %s: sending: %s\n", o->ingest,
                        len ? zmq_strerror(zmq_errno()) : "out of memory");
                r->failed = 1;
                r->stop = 1;
            }
            sent += n;
        }
    }
out:
    free(x), free(base), free(rng), free(v), free(buf);
    if (sock)
        zmq_close(sock);
    return NULL;
}

/* Counts an alert; takes the latency of an ANOMALY alert when it is the first to overlap one
 * of the planted anomalies of its stream, and counts ANOMALY and LEFT_DISCORD alerts that
 * overlap none. O(anomalies per stream). */
static void take_alert(lg_run *r, const Tsmine__V1__Alert *al, int64_t now) {
    const lg_opts *o = &r->o;
    r->alerts++;
    if (al->kind >= 0 && al->kind <= TSMINE__V1__ALERT_KIND__ANOMALY_END)
        r->alerts_by_kind[al->kind]++;
    const int anomaly = al->kind == TSMINE__V1__ALERT_KIND__ANOMALY;
    if (!anomaly && al->kind != TSMINE__V1__ALERT_KIND__LEFT_DISCORD)
        return;
    size_t plen = strlen(o->prefix);
    char *end;
    size_t s = strtoull(al->stream_id + plen, &end, 10);
    uint64_t last = al->start_seq + al->length - 1; /* the sample that completed it */
    size_t b = last / o->batch;
    if (strncmp(al->stream_id, o->prefix, plen) || *end || s >= o->streams || b >= r->nbatches)
        return;
    for (size_t k = 0; k < r->nanom; k++) {
        size_t a = anomaly_at(o, s, k);
        if (al->start_seq < a + o->m && al->start_seq + al->length > a) {
            if (anomaly && !r->matched[s * r->nanom + k]) {
                r->matched[s * r->nanom + k] = 1;
                int64_t t =
                    atomic_load_explicit(&r->sent_ns[s * r->nbatches + b], memory_order_acquire);
                r->daemon_ms[r->nlat] =
                    1e-6 * (double)(al->detected_at_ns - r->sent_rt_ns[s * r->nbatches + b]);
                r->lat_ms[r->nlat++] = 1e-6 * (double)(now - t);
            }
            return;
        }
    }
    if (anomaly)
        r->false_events++;
    else
        r->unmatched++;
}

/* A bump allocator for unpacking one alert at a time (protobuf-c's ProtobufCAllocator):
 * the subscriber must keep up with the daemon's alert rate (~400,000/s on the GPU
 * bench), so that the latency it measures is the daemon's, not its own queue's; a
 * malloc and free per field was a good part of its time. */
typedef struct {
    size_t used;
    _Alignas(16) unsigned char mem[4096]; /* an Alert takes its struct and its id */
} lg_arena;

static void *arena_alloc(void *data, size_t size) {
    lg_arena *a = data;
    size = (size + 15) & ~(size_t)15;
    if (size > sizeof a->mem - a->used)
        return NULL; /* unpack then fails: the alert is not counted */
    void *p = a->mem + a->used;
    a->used += size;
    return p;
}

static void arena_free(void *data, void *p) {
    (void)data, (void)p; /* all of it goes at once, before the next alert */
}

/* Receives one alert without waiting and takes it; 0, or -1 when none is queued. */
static int receive_alert(lg_run *r, void *sock, lg_arena *arena) {
    ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free, .allocator_data = arena};
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int more = 0, rc = -1;
    size_t ml = sizeof more;
    if (zmq_msg_recv(&topic, sock, ZMQ_DONTWAIT) >= 0) {
        rc = 0;
        if (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ml) == 0 && more &&
            zmq_msg_recv(&body, sock, 0) >= 0) {
            int64_t now = mono_ns();
            arena->used = 0;
            Tsmine__V1__Alert *al =
                tsmine__v1__alert__unpack(&alloc, zmq_msg_size(&body), zmq_msg_data(&body));
            if (al)
                take_alert(r, al, now);
        }
    }
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return rc;
}

/* The subscriber thread: every alert of the prefix until stop, all that are queued
 * after each poll. */
static void *subscriber(void *arg) {
    lg_run *r = arg;
    void *sock = client_socket(r->sub_zctx, ZMQ_SUB, r->o.alerts, 0, 0, "loadgen");
    lg_arena arena;
    if (!sock) {
        r->failed = 1;
        return NULL;
    }
    int hwm = 0;
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_SUBSCRIBE, r->o.prefix, strlen(r->o.prefix));
    while (!r->stop) {
        zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 50) <= 0)
            continue;
        for (int k = 0; k < 65536 && receive_alert(r, sock, &arena) == 0; k++)
            ;
    }
    zmq_close(sock);
    return NULL;
}

/* The daemon's counters (COUNTERS: no stream list, whose cost grows with the streams
 * and, polled every 5 ms, would load the daemon it measures), or NULL (reported). */
static Tsmine__V1__ControlReply *status(lg_run *r) {
    int rc;
    return client_control(r->zctx, r->o.control, TSMINE__V1__CONTROL_REQUEST__COMMAND__COUNTERS,
                          NULL, 5000, NULL, "loadgen", &rc);
}

/* A daemon counter by name (0 when absent: an older daemon). */
static uint64_t counter_of(const Tsmine__V1__ControlReply *rep, const char *name) {
    for (size_t i = 0; i < rep->n_counters; i++)
        if (strcmp(rep->counters[i]->name, name) == 0)
            return rep->counters[i]->value;
    return 0;
}

/* Samples the daemon accepted (all streams: the run is its only sender). */
static int64_t accepted(const lg_run *r, const Tsmine__V1__ControlReply *rep) {
    (void)r;
    return (int64_t)counter_of(rep, "samples");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n-1] (nearest rank), NAN when empty. */
static double quantile(const double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}

/* Whether a STATUS counter is a level (streams, pending samples, ...) rather than a
 * count that only grows. */
static int is_gauge(const char *name) {
    static const char *const gauges[] = {"streams",
                                         "ring_samples",
                                         "ring_bytes",
                                         "pending_samples",
                                         "pending_passes",
                                         "alerts_queued",
                                         "curve_authorized_keys",
                                         "uptime_seconds"};
    for (size_t i = 0; i < sizeof gauges / sizeof *gauges; i++)
        if (strncmp(name, gauges[i], strlen(gauges[i])) == 0)
            return 1;
    return 0;
}

/* Prints ,"key":{"NAME":value,...}: each counter of b (n of them) as this run changed it
 * since a (a's counters: na), so that a second run on the same daemon does not carry
 * the first one's counts (issue 17 item 11: the fixed-rate run showed the flat-out
 * run's alert drops); levels (is_gauge) as they are in b. */
static void print_counters(const char *key, Tsmine__V1__Counter **a, size_t na,
                           Tsmine__V1__Counter **b, size_t n) {
    printf(",\"%s\":{", key);
    for (size_t i = 0; i < n; i++) {
        uint64_t before = 0;
        for (size_t j = 0; j < na && !is_gauge(b[i]->name); j++)
            if (strcmp(a[j]->name, b[i]->name) == 0)
                before = a[j]->value;
        printf("%s\"%s\":%" PRIu64, i ? "," : "", b[i]->name, b[i]->value - before);
    }
    printf("}");
}

/* Prints ,"key":{"NAME":share,...}: for every counter named PREFIX NAME (but skip), the
 * growth from a to b, in seconds, over `over` seconds. */
static void print_shares(const char *key, const char *prefix, const char *skip,
                         const Tsmine__V1__ControlReply *a, const Tsmine__V1__ControlReply *b,
                         double over) {
    const size_t plen = strlen(prefix);
    printf(",\"%s\":{", key);
    int first = 1;
    for (size_t i = 0; i < b->n_counters; i++) {
        const char *name = b->counters[i]->name;
        if (strncmp(name, prefix, plen) != 0 || strcmp(name, skip) == 0)
            continue;
        double t = 1e-9 * (double)(b->counters[i]->value - counter_of(a, name));
        printf("%s\"%s\":", first ? "" : ",", name + plen);
        client_print_double(stdout, over > 0 ? t / over : NAN);
        first = 0;
    }
    printf("}");
}

/* Prints ,"time_split":{"PHASE":share,...} of the daemon's busy time between two
 * STATUS replies (every ns_PHASE counter but ns_busy), then busy_s and busy_share
 * (busy over the wall time `seconds`), and the same share of the wall time for each of
 * the daemon's other threads (thread_ns_NAME counters: "threads_busy":{NAME:share}). */
static void print_split(const Tsmine__V1__ControlReply *a, const Tsmine__V1__ControlReply *b,
                        double seconds) {
    double busy = 1e-9 * (double)(counter_of(b, "ns_busy") - counter_of(a, "ns_busy"));
    print_shares("time_split", "ns_", "ns_busy", a, b, busy);
    printf(",\"busy_s\":%.3f,\"busy_share\":", busy);
    client_print_double(stdout, seconds > 0 ? busy / seconds : NAN);
    print_shares("threads_busy", "thread_ns_", "", a, b, seconds);
}

/* Prints the JSON result line; a and b are the daemon's STATUS before the first send
 * and once everything was processed; seconds and seconds_accepted the wall times from
 * the first send until it had processed / accepted every sample. */
static void report(lg_run *r, double seconds, double seconds_accepted, int64_t got,
                   const Tsmine__V1__ControlReply *a, const Tsmine__V1__ControlReply *b) {
    const lg_opts *o = &r->o;
    size_t total = o->streams * o->samples;
    qsort(r->lat_ms, r->nlat, sizeof *r->lat_ms, cmp_double);
    qsort(r->daemon_ms, r->nlat, sizeof *r->daemon_ms, cmp_double);
    printf("{\"bench\":\"daemon_ingest\",\"streams\":%zu,\"window\":%zu,\"m\":%zu,\"hop\":",
           o->streams, o->window, o->m);
    client_print_double(stdout, o->hop ? (double)o->hop : NAN);
    printf(",\"samples\":%zu,\"counted\":%" PRId64 ",\"batch\":%zu,\"threads\":%d,\"rate\":", total,
           got, o->batch, o->threads);
    client_print_double(stdout, o->rate > 0 ? o->rate : NAN);
    printf(",\"seconds\":%.6f,\"samples_per_s\":%.0f,\"accepted_per_s\":%.0f,\"anomalies\":%zu,"
           "\"detected\":%zu,\"false_events\":%zu,\"latency_kind\":\"ANOMALY\",\"p50_ms\":",
           seconds, (double)total / seconds, (double)total / seconds_accepted,
           o->streams * r->nanom, r->nlat, r->false_events);
    client_print_double(stdout, quantile(r->lat_ms, r->nlat, 0.5));
    printf(",\"p99_ms\":");
    client_print_double(stdout, quantile(r->lat_ms, r->nlat, 0.99));
    printf(",\"max_ms\":");
    client_print_double(stdout, quantile(r->lat_ms, r->nlat, 1.0));
    printf(",\"daemon_p50_ms\":");
    client_print_double(stdout, quantile(r->daemon_ms, r->nlat, 0.5));
    printf(",\"daemon_p99_ms\":");
    client_print_double(stdout, quantile(r->daemon_ms, r->nlat, 0.99));
    const size_t *k = r->alerts_by_kind;
    printf(",\"left_discords_unmatched\":%zu,\"alerts\":{\"DISCORD\":%zu,\"LEFT_DISCORD\":%zu,"
           "\"MOTIF\":%zu,\"GAP\":%zu,\"ANOMALY\":%zu,\"ANOMALY_END\":%zu}",
           r->unmatched, k[TSMINE__V1__ALERT_KIND__DISCORD],
           k[TSMINE__V1__ALERT_KIND__LEFT_DISCORD], k[TSMINE__V1__ALERT_KIND__MOTIF],
           k[TSMINE__V1__ALERT_KIND__GAP], k[TSMINE__V1__ALERT_KIND__ANOMALY],
           k[TSMINE__V1__ALERT_KIND__ANOMALY_END]);
    /* where the daemon's time went, as it counts it */
    printf(",\"backend\":\"%s\"", b->backend);
    print_split(a, b, seconds);
    print_counters("daemon_counters", a->counters, a->n_counters, b->counters, b->n_counters);
    print_counters("daemon_rejected", a->rejected, a->n_rejected, b->rejected, b->n_rejected);
    print_counters("daemon_alerts_by_kind", a->alerts_by_kind, a->n_alerts_by_kind,
                   b->alerts_by_kind, b->n_alerts_by_kind);
    printf("}\n");
    fflush(stdout);
}

/* Polls the daemon's COUNTERS every 5 ms from now until it has accepted `want` samples
 * into this run's streams and processed `want` more than in `base` (or the drain
 * deadline passes). Sets *t_acc and *t_proc (monotonic ns) when each happened, *got to
 * the samples accepted; returns the last reply (NULL when the daemon did not answer). */
static Tsmine__V1__ControlReply *wait_processed(lg_run *r, const Tsmine__V1__ControlReply *base,
                                                int64_t want, int64_t *t_acc, int64_t *t_proc,
                                                int64_t *got) {
    int64_t deadline = mono_ns() + (int64_t)r->o.drain_ms * 1000000;
    uint64_t p0 = counter_of(base, "processed_samples");
    int64_t a0 = accepted(r, base);
    Tsmine__V1__ControlReply *rep = NULL;
    *t_acc = *t_proc = 0;
    while (!r->failed) {
        if (rep)
            tsmine__v1__control_reply__free_unpacked(rep, NULL);
        if (!(rep = status(r)))
            return NULL;
        int64_t now = mono_ns();
        *got = accepted(r, rep) - a0;
        if (*got >= want && !*t_acc)
            *t_acc = now;
        if (*t_acc && counter_of(rep, "processed_samples") - p0 >= (uint64_t)want) {
            *t_proc = now;
            break;
        }
        if (now >= deadline)
            break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return rep;
}

/* Runs the benchmark; returns the exit status. */
static int bench(lg_opts *o) {
    lg_run r = {.o = *o};
    r.nbatches = (o->samples + o->batch - 1) / o->batch;
    while (anomaly_at(o, o->streams ? o->streams - 1 : 0, r.nanom) + o->m <= o->samples &&
           anomaly_at(o, 0, r.nanom) + o->m <= o->samples)
        r.nanom++;
    r.sent_ns = calloc(o->streams * r.nbatches, sizeof *r.sent_ns);
    r.sent_rt_ns = calloc(o->streams * r.nbatches, sizeof *r.sent_rt_ns);
    r.matched = calloc(o->streams * r.nanom + 1, 1);
    r.lat_ms = calloc(o->streams * r.nanom + 1, sizeof *r.lat_ms);
    r.daemon_ms = calloc(o->streams * r.nanom + 1, sizeof *r.daemon_ms);
    r.zctx = zmq_ctx_new();
    r.sub_zctx = zmq_ctx_new();
    if (!r.sent_ns || !r.sent_rt_ns || !r.matched || !r.lat_ms || !r.daemon_ms || !r.zctx ||
        !r.sub_zctx) {
        fprintf(stderr, "tsmine-loadgen: out of memory\n");
        return EX_SOFTWARE;
    }
    int rc = 0;
    Tsmine__V1__ControlReply *base = status(&r), *last = NULL;
    if (!base) {
        rc = EX_UNAVAILABLE;
        goto out;
    }
    pthread_t sub, *snd = calloc((size_t)o->threads, sizeof *snd);
    lg_sender *args = calloc((size_t)o->threads, sizeof *args);
    pthread_create(&sub, NULL, subscriber, &r);
    struct timespec join = {0, 300000000}; /* the subscription reaches the PUB socket */
    nanosleep(&join, NULL);
    int64_t t0 = mono_ns();
    for (int t = 0; t < o->threads; t++) {
        args[t] = (lg_sender){&r, t};
        pthread_create(&snd[t], NULL, sender, &args[t]);
    }
    for (int t = 0; t < o->threads; t++)
        pthread_join(snd[t], NULL);
    int64_t want = (int64_t)(o->streams * o->samples), got = 0, t_acc = 0, t_proc = 0;
    last = wait_processed(&r, base, want, &t_acc, &t_proc, &got);
    /* The last alerts: until every anomaly was seen, or a second of quiet. */
    for (size_t seen = SIZE_MAX; seen != r.alerts && r.nlat < o->streams * r.nanom;) {
        seen = r.alerts;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    r.stop = 1;
    pthread_join(sub, NULL);
    if (!last) {
        rc = EX_UNAVAILABLE;
    } else if (got != want || !t_proc) {
        fprintf(stderr,
                "tsmine-loadgen: the daemon accepted %" PRId64 " of %" PRId64 " samples%s\n", got,
                want, t_proc ? "" : " and did not process them all in time");
        rc = EX_SOFTWARE;
    }
    if (r.failed)
        rc = EX_UNAVAILABLE;
    else if (last && t_proc && t_acc)
        report(&r, 1e-9 * (double)(t_proc - t0), 1e-9 * (double)(t_acc - t0), got, base, last);
    free(snd);
    free(args);
out:
    if (base)
        tsmine__v1__control_reply__free_unpacked(base, NULL);
    if (last)
        tsmine__v1__control_reply__free_unpacked(last, NULL);
    free(r.sent_ns), free(r.sent_rt_ns), free(r.matched), free(r.lat_ms), free(r.daemon_ms);
    zmq_ctx_term(r.zctx);
    zmq_ctx_term(r.sub_zctx);
    return rc;
}

static void usage(void) {
    printf("Usage: tsmine-loadgen [OPTIONS]\n\n"
           "Publishes random-walk streams with planted anomalies to a running tsmined, as\n"
           "fast as it takes them or at --rate, and measures the sustained rate (samples\n"
           "the daemon processed per second), where its time goes (time_split), and the\n"
           "latency from the sample that completes an anomalous subsequence to its\n"
           "ANOMALY alert (detected: anomalies with an ANOMALY over them; false_events:\n"
           "ANOMALY alerts over none). Prints one JSON line.\n"
           "The daemon's window, m, hop and thresholds come from its configuration; give\n"
           "the same --window and -m here so that the anomalies fall where they can be seen.\n\n"
           "Options:\n"
           "  --ingest E        PUSH endpoint (default " CLIENT_INGEST_DEFAULT ")\n"
           "  --alerts E        SUB endpoint (default " CLIENT_ALERTS_DEFAULT ")\n"
           "  --control E       control endpoint (default " CLIENT_CONTROL_DEFAULT ")\n"
           "  --streams S       streams (default 100)\n"
           "  --samples N       samples per stream (default 20480)\n"
           "  --batch B         samples per message (default 256)\n"
           "  --threads T       sender threads, one PUSH socket each (default 2)\n"
           "  --rate HZ         total samples per second (default: as fast as possible)\n"
           "  -m M              the daemon's subsequence length (default 64)\n"
           "  --window W        the daemon's window (default 1024)\n"
           "  --hop H           the daemon's hop, only for the report\n"
           "  --every A         samples between anomalies of a stream (default 4096)\n"
           "  --prefix P        stream ids are P0, P1, ... (default lg/)\n"
           "  --seed S          random seed (default 1)\n"
           "  --drain-ms T      longest wait for the daemon to process everything (default 60000)\n"
           "  -h, --help        this help\n"
           "Exit status: 0, 64 usage, 69 daemon unreachable, 70 samples lost or not processed.\n");
}

/* Parses the options; 0 to run, -1 after --help, EX_USAGE after an error. */
static int parse(int argc, char **argv, lg_opts *o) {
    enum {
        O_INGEST = 256,
        O_ALERTS,
        O_CONTROL,
        O_STREAMS,
        O_SAMPLES,
        O_BATCH,
        O_THREADS,
        O_RATE,
        O_WINDOW,
        O_HOP,
        O_EVERY,
        O_PREFIX,
        O_SEED,
        O_DRAIN
    };
    static const struct option lo[] = {{"ingest", 1, NULL, O_INGEST},
                                       {"alerts", 1, NULL, O_ALERTS},
                                       {"control", 1, NULL, O_CONTROL},
                                       {"streams", 1, NULL, O_STREAMS},
                                       {"samples", 1, NULL, O_SAMPLES},
                                       {"batch", 1, NULL, O_BATCH},
                                       {"threads", 1, NULL, O_THREADS},
                                       {"rate", 1, NULL, O_RATE},
                                       {"window", 1, NULL, O_WINDOW},
                                       {"every", 1, NULL, O_EVERY},
                                       {"hop", 1, NULL, O_HOP},
                                       {"prefix", 1, NULL, O_PREFIX},
                                       {"seed", 1, NULL, O_SEED},
                                       {"drain-ms", 1, NULL, O_DRAIN},
                                       {"help", 0, NULL, 'h'},
                                       {"version", 0, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
    *o = (lg_opts){CLIENT_INGEST_DEFAULT, CLIENT_ALERTS_DEFAULT, CLIENT_CONTROL_DEFAULT, "lg/",
                   .streams = 100,        .samples = 20480,      .batch = 256,           .m = 64,
                   .window = 1024,        .every = 4096,         .threads = 2,           .seed = 1,
                   .drain_ms = 60000};
    int c;
    while ((c = getopt_long(argc, argv, "m:hV", lo, NULL)) != -1) {
        char *end = NULL;
        double x = optarg ? strtod(optarg, &end) : 0;
        if (optarg && c != O_INGEST && c != O_ALERTS && c != O_CONTROL && c != O_PREFIX &&
            (end == optarg || *end || !(x >= 0) || x > 1e12)) {
            fprintf(stderr, "tsmine-loadgen: %s: invalid number '%s'\n", argv[optind - 1], optarg);
            return EX_USAGE;
        }
        switch (c) {
        case O_INGEST: o->ingest = optarg; break;
        case O_ALERTS: o->alerts = optarg; break;
        case O_CONTROL: o->control = optarg; break;
        case O_PREFIX: o->prefix = optarg; break;
        case O_STREAMS: o->streams = (size_t)x; break;
        case O_SAMPLES: o->samples = (size_t)x; break;
        case O_BATCH: o->batch = (size_t)x; break;
        case O_THREADS: o->threads = (int)x; break;
        case O_RATE: o->rate = x; break;
        case 'm': o->m = (size_t)x; break;
        case O_WINDOW: o->window = (size_t)x; break;
        case O_EVERY: o->every = (size_t)x; break;
        case O_HOP: o->hop = (size_t)x; break;
        case O_SEED: o->seed = (uint64_t)x; break;
        case O_DRAIN: o->drain_ms = (long)x; break;
        case 'h': usage(); return -1;
        case 'V': printf("tsmine-loadgen %s\n", TSMINE_VERSION); return -1;
        default: fprintf(stderr, "tsmine-loadgen: see --help\n"); return EX_USAGE;
        }
    }
    if (optind < argc || !o->streams || !o->samples || !o->batch || o->threads < 1 ||
        o->threads > 256 || o->m < 3 || o->every < 4 * o->m) {
        fprintf(stderr, "tsmine-loadgen: need streams, samples, batch >= 1, 1 <= threads <= "
                        "256, m >= 3, every >= 4 m, and no operands\n");
        return EX_USAGE;
    }
    return 0;
}

int main(int argc, char **argv) {
    lg_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    return bench(&o);
}
