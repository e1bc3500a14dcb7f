/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_alerts_test.c - alert publishing (daemon/sink/alerts.h) on the daemon's own PUB
 * socket (daemon/guard/sockets.h, inproc endpoints): the two frames and their content,
 * increasing alert ids, and plain PUB semantics: a subscriber that does not read
 * loses its own alerts beyond its high-water mark while another subscriber receives
 * every one, and the publisher counts no drop (per-subscriber drops are invisible to
 * it); per-stream alert sequence numbers from a real engine, across a checkpoint; the
 * largest alert (every field at its longest, the views included) still fits the send
 * buffer; an alert without views (GAP) carries none. */
#include "testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "calib.h" /* tss_tail */
#include "config.h"
#include "daemon/guard/sockets.h"
#include "daemon/sink/alert_publisher.h"
#include "daemon/sink/alerts.h"
#include "daemon/sink/sink.h"
#include "engine_checkpoint.h"
#include "tsmine.pb-c.h"

#define ENDPOINT "inproc://daemon-alerts-test"
#define HWM      10  /* the slow subscriber's queue: SNDHWM + RCVHWM over inproc */
#define NALERTS  200 /* far beyond it */

static void setint(void *sock, int opt, int v) {
    assert_int_equal(zmq_setsockopt(sock, opt, &v, sizeof v), 0);
}

static void *subscriber(void *zctx, int rcvhwm) {
    void *s = zmq_socket(zctx, ZMQ_SUB);
    assert_non_null(s);
    setint(s, ZMQ_RCVHWM, rcvhwm);
    setint(s, ZMQ_LINGER, 0);
    assert_int_equal(zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0), 0);
    assert_int_equal(zmq_connect(s, ENDPOINT), 0);
    return s;
}

/* Receives one message (all frames) within timeout_ms; returns its frame count, 0 on
 * timeout.
 * Frame 0 goes to topic and frame 1 to body (each NUL-terminated, truncated to cap). */
static int receive(void *sock, int timeout_ms, char *topic, uint8_t *body, size_t cap,
                   size_t *bodylen) {
    zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};
    if (zmq_poll(&item, 1, timeout_ms) <= 0)
        return 0;
    int frames = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        assert_true(zmq_msg_recv(&m, sock, 0) >= 0);
        size_t n = zmq_msg_size(&m) < cap - 1 ? zmq_msg_size(&m) : cap - 1;
        if (frames == 0) {
            memcpy(topic, zmq_msg_data(&m), n);
            topic[n] = '\0';
        } else if (frames == 1) {
            memcpy(body, zmq_msg_data(&m), n);
            *bodylen = n;
        }
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        frames++;
    }
    return frames;
}

/* Publishes probes until both subscribers received one (subscriptions travel to the
 * PUB socket asynchronously), then empties both queues. */
static void wait_subscribed(void *pub, void *a, void *b) {
    int got_a = 0, got_b = 0;
    for (int i = 0; i < 1000 && !(got_a && got_b); i++) {
        assert_true(zmq_send(pub, "probe", 5, ZMQ_DONTWAIT) == 5);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        got_a |= zmq_recv(a, (char[8]){0}, 8, ZMQ_DONTWAIT) >= 0;
        got_b |= zmq_recv(b, (char[8]){0}, 8, ZMQ_DONTWAIT) >= 0;
    }
    assert_true(got_a && got_b);
    while (zmq_recv(a, (char[8]){0}, 8, ZMQ_DONTWAIT) >= 0) {
    }
    while (zmq_recv(b, (char[8]){0}, 8, ZMQ_DONTWAIT) >= 0) {
    }
}

extern const tsd_sink_ops tsd_sink_zmq; /* sink_zmq.c */

/* The PUB sink on pub, opened as the daemon opens it; one at a time (the one opened
 * before is closed), kept until the next. */
static void *zmq_sink_on(void *pub, uint32_t log_rate) {
    static void *open;
    if (open)
        tsd_sink_zmq.close(open);
    tsc_config cfg;
    tsc_defaults(&cfg);
    cfg.log_rate_per_s = log_rate;
    const tsd_sink_env env = {.cfg = &cfg, .pub = pub};
    char err[256];
    if (tsd_sink_zmq.open(&open, &env, err, sizeof err) != 0)
        fail_msg("zmq sink: %s", err);
    return open;
}

/* Alerts as the daemon publishes them: PUB first (the counted sink). */
static void alerts_init(tsd_alerts *a, void *pub, uint32_t log_rate) {
    tsd_alerts_init(a, log_rate);
    assert_int_equal(tsd_alerts_add_sink(a, &tsd_sink_zmq, zmq_sink_on(pub, log_rate)), 0);
}

static void test_slow_subscriber_loses_only_its_own(void **state) {
    (void)state;
    static const tss_alert_kind kinds[] = {TSS_ALERT_ANOMALY, TSS_ALERT_DISCORD,
                                           TSS_ALERT_ANOMALY_END, TSS_ALERT_LEFT_DISCORD};
    /* their views as the engine gives them: DISCORD the shape view alone (NaN others) */
    static const tss_view views[] = {TSS_VIEW_MAGNITUDE, TSS_VIEW_SHAPE, TSS_VIEW_MAGNITUDE,
                                     TSS_VIEW_SHAPE};
    tsc_config cfg;
    tsc_defaults(&cfg);
    snprintf(cfg.ingest_endpoints[0], sizeof cfg.ingest_endpoints[0], "inproc://t-ingest");
    cfg.n_ingest_endpoints = 1;
    snprintf(cfg.alerts_endpoint, sizeof cfg.alerts_endpoint, "%s", ENDPOINT);
    snprintf(cfg.control_endpoint, sizeof cfg.control_endpoint, "inproc://t-control");
    cfg.alerts_hwm = HWM / 2;
    tsd_sockets sock;
    char err[512];
    if (tsd_sockets_open(&sock, &cfg, err, sizeof err) != 0)
        fail_msg("tsd_sockets_open: %s", err);
    void *pub = sock.pub;
    void *fast = subscriber(sock.zctx, 0), *slow = subscriber(sock.zctx, HWM / 2);
    wait_subscribed(pub, fast, slow);

    tsd_alerts a;
    alerts_init(&a, pub, 5);
    for (int k = 0; k < NALERTS; k++) {
        tss_alert al = {.kind = kinds[k % 4],
                        .start_seq = (uint64_t)k,
                        .length = 16,
                        .distance = 3.5,
                        .neighbor_seq = 7,
                        .threshold = 0.997,
                        .score = 0.5 + k / 1000.0,
                        .event_start_seq = (uint64_t)k,
                        .event_end_seq = (uint64_t)k + 40,
                        .detected_seq = (uint64_t)k + 15,
                        .tail = k % 3 ? TSS_TAIL_FAR : TSS_TAIL_NEAR,
                        .view = views[k % 4],
                        .shape_score = 0.25 + k / 1000.0,
                        .magnitude_score = k % 4 == 1 ? NAN : 0.75 + k / 1000.0,
                        .level_score = k % 4 == 1 ? NAN : 0.125,
                        .magnitude = k % 4 == 1 ? NAN : 10.0 + k,
                        .magnitude_neighbor_seq = k % 4 == 1 ? 0 : (uint64_t)k + 3,
                        .level = k % 4 == 1 ? NAN : k / 64.0};
        tsd_alerts_publish(&a, "plant/7", &al);
    }
    assert_int_equal(a.drops, 0);
    assert_int_equal(a.errors, 0);
    uint64_t found = 0, published = 0;
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        found += a.found[k], published += a.published[k];
    assert_int_equal(found, NALERTS);
    assert_int_equal(published, NALERTS);
    assert_int_equal(a.published[TSS_ALERT_ANOMALY], NALERTS / 4);

    /* the fast subscriber: every alert, in order, two frames each */
    char topic[64];
    uint8_t body[512];
    size_t len = 0;
    for (int k = 0; k < NALERTS; k++) {
        if (receive(fast, 1000, topic, body, sizeof body, &len) != 2)
            fail_msg("fast subscriber: alert %d of %d missing or not two frames", k, NALERTS);
        assert_string_equal(topic, "plant/7");
        Tsmine__V1__Alert *m = tsmine__v1__alert__unpack(NULL, len, body);
        assert_non_null(m);
        assert_int_equal(m->alert_id, (uint64_t)k + 1);
        assert_int_equal(m->start_seq, (uint64_t)k);
        assert_string_equal(m->stream_id, "plant/7");
        assert_int_equal(m->kind, (int)kinds[k % 4]); /* the values are the proto's */
        assert_true(m->distance == 3.5 && m->neighbor_seq == 7 && m->length == 16);
        assert_true(m->threshold == 0.997 && m->score == 0.5 + k / 1000.0);
        assert_int_equal(m->event_start_seq, (uint64_t)k);
        assert_int_equal(m->event_end_seq, (uint64_t)k + 40);
        assert_int_equal(m->detected_seq, (uint64_t)k + 15);
        assert_int_equal(m->tail, k % 3 ? TSMINE__V1__TAIL__FAR : TSMINE__V1__TAIL__NEAR);
        assert_int_equal(m->view, (int)views[k % 4]); /* the values are the proto's */
        assert_true(m->shape_score == 0.25 + k / 1000.0);
        if (k % 4 == 1) { /* DISCORD: not computed, NaN on the wire */
            assert_true(isnan(m->magnitude_score) && isnan(m->level_score));
            assert_true(isnan(m->magnitude_distance) && isnan(m->level));
            assert_int_equal(m->magnitude_neighbor_seq, 0);
        } else {
            assert_true(m->magnitude_score == 0.75 + k / 1000.0 && m->level_score == 0.125);
            assert_true(m->magnitude_distance == 10.0 + k && m->level == k / 64.0);
            assert_int_equal(m->magnitude_neighbor_seq, (uint64_t)k + 3);
        }
        assert_true(m->detected_at_ns > 0);
        tsmine__v1__alert__free_unpacked(m, NULL);
    }
    /* the slow one kept what its queue held, the first alerts, and lost the rest */
    int slow_got = 0;
    while (receive(slow, 100, topic, body, sizeof body, &len) == 2)
        slow_got++;
    print_message("slow subscriber: %d of %d alerts\n", slow_got, NALERTS);
    assert_true(slow_got > 0 && slow_got < NALERTS);

    zmq_close(fast);
    zmq_close(slow);
    tsd_sockets_close(&sock);
}

/* Params that make GAP alerts cheap: one sample per batch, every other seq missing. */
static int small_params(void *user, const char *id, tss_params *out) {
    (void)user;
    (void)id;
    *out = tss_params_default();
    out->window = 64;
    out->subsequence = 8;
    out->hop = 64;
    out->warmup = 32; /* the default (300) does not fit a window of 64 */
    out->range = 1e9; /* no events, no discords: only the GAP alerts count */
    out->motif = 0;
    return 0;
}

static tss_engine *gap_engine(tsd_alerts *a) {
    tss_engine_options opt = {.backend = TSM_BACKEND_CPU,
                              .threads = 1,
                              .on_alert = tsd_alerts_publish,
                              .params_for = small_params,
                              .user = a};
    tss_engine *e = NULL;
    char err[256] = "";
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0)
        fail_msg("tss_engine_new: %s", err);
    return e;
}

/* n single-sample batches per stream at seqs from, from + 2, ... (each after the
 * first of a stream opens a gap: one GAP alert), interleaved, then a tick. */
static void gaps(tss_engine *e, const char *const *ids, int nids, uint64_t from, int n) {
    for (int k = 0; k < n; k++)
        for (int i = 0; i < nids; i++) {
            double v = (double)k;
            uint64_t seq = from + 2 * (uint64_t)k;
            assert_int_equal(tss_engine_ingest(e, ids[i], seq, NULL, (int64_t)seq, 1, &v, 1),
                             TSS_OK);
        }
    char err[256] = "";
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick: %s", err);
}

/* The next alert queued for sub within timeout_ms, unpacked (the caller frees it), or
 * NULL when none came. */
static Tsmine__V1__Alert *next_alert(void *sub, int timeout_ms) {
    char topic[64];
    uint8_t body[512];
    size_t len = 0;
    if (receive(sub, timeout_ms, topic, body, sizeof body, &len) != 2)
        return NULL;
    Tsmine__V1__Alert *m = tsmine__v1__alert__unpack(NULL, len, body);
    assert_non_null(m);
    return m;
}

/* Receives every alert queued for sub and checks that each stream's seq goes on from
 * next[i] by one; returns how many it received. */
static int expect_consecutive(void *sub, const char *const *ids, int nids, uint64_t *next) {
    int got = 0;
    Tsmine__V1__Alert *m;
    while ((m = next_alert(sub, 200)) != NULL) {
        int i = 0;
        while (i < nids && strcmp(ids[i], m->stream_id) != 0)
            i++;
        assert_true(i < nids);
        assert_int_equal(m->view, TSMINE__V1__VIEW__VIEW_UNSPECIFIED); /* a GAP has none */
        if (m->seq != next[i])
            fail_msg("stream %s: seq %llu, expected %llu", ids[i], (unsigned long long)m->seq,
                     (unsigned long long)next[i]);
        next[i]++;
        got++;
        tsmine__v1__alert__free_unpacked(m, NULL);
    }
    return got;
}

/* A PUB socket on ENDPOINT (no high-water mark) with one subscriber (*sub) that
 * already receives. */
static void *pub_with_subscriber(void *zctx, void **sub) {
    void *pub = zmq_socket(zctx, ZMQ_PUB);
    setint(pub, ZMQ_SNDHWM, 0);
    assert_int_equal(zmq_bind(pub, ENDPOINT), 0);
    void *other = subscriber(zctx, 0);
    *sub = subscriber(zctx, 0);
    wait_subscribed(pub, *sub, other);
    zmq_close(other);
    return pub;
}

/* Every alert of a stream carries the next per-stream seq (1, 2, ...), independent of
 * the other streams' alerts, and a checkpoint restores the count: the engine loaded
 * from it goes on where the saved one stopped. */
static void test_seq_per_stream_survives_checkpoint(void **state) {
    (void)state;
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);

    static const char *const ids[] = {"site/a", "site/b", "site/c"};
    uint64_t next[3] = {1, 1, 1};
    tsd_alerts a;
    alerts_init(&a, pub, 5);
    tss_engine *e = gap_engine(&a);
    gaps(e, ids, 3, 0, 5);  /* 4 gaps per stream */
    gaps(e, ids, 2, 10, 3); /* 3 more for a and b only */
    assert_int_equal(expect_consecutive(sub, ids, 3, next), 3 * 4 + 2 * 3);
    assert_int_equal(next[0], 8);
    assert_int_equal(next[2], 5);

    FILE *f = tmpfile();
    assert_non_null(f);
    char err[256] = "";
    if (tss_engine_save(e, f, err, sizeof err) != 0)
        fail_msg("save: %s", err);
    tss_engine_destroy(&e);
    rewind(f);
    alerts_init(&a, pub, 5);
    e = gap_engine(&a);
    if (tss_engine_load(e, f, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    fclose(f);
    gaps(e, ids, 3, 100, 2); /* a gap to 100, then one more: 2 per stream */
    assert_int_equal(expect_consecutive(sub, ids, 3, next), 3 * 2);
    assert_int_equal(next[0], 10);
    assert_int_equal(next[2], 7);

    tss_engine_destroy(&e);
    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

/* The publisher thread (alerts.h, threaded mode): each stream's seq still goes on by
 * one in the order the engine found the alerts, and the counters add up once synced;
 * with a queue of 256 bytes (two or three alerts, wrapping all the time) some alerts
 * may be refused: then published + drops equals
 * what was found and the subscriber gets exactly the published ones, ids increasing. */
static void test_publisher_thread_keeps_order(void **state) {
    (void)state;
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);

    static const char *const ids[] = {"site/a", "site/b", "site/c"};
    uint64_t next[3] = {1, 1, 1};
    tsd_alerts a;
    alerts_init(&a, pub, 5);
    char err[256] = "";
    if (tsd_alerts_start(&a, 1 << 20, err, sizeof err) != 0)
        fail_msg("tsd_alerts_start: %s", err);
    tss_engine *e = gap_engine(&a);
    gaps(e, ids, 3, 0, 40); /* 39 gaps per stream */
    tsd_alerts_stop(&a);
    assert_int_equal(a.found[TSS_ALERT_GAP], 3 * 39);
    assert_int_equal(a.published[TSS_ALERT_GAP], 3 * 39);
    assert_int_equal(a.drops, 0);
    assert_int_equal(expect_consecutive(sub, ids, 3, next), 3 * 39);

    alerts_init(&a, pub, 0);
    if (tsd_alerts_start(&a, 256, err, sizeof err) != 0)
        fail_msg("tsd_alerts_start: %s", err);
    tss_alert al = {.kind = TSS_ALERT_DISCORD, .length = 16, .distance = 3.5};
    for (int k = 0; k < 2000; k++)
        tsd_alerts_publish(&a, "plant/7", &al);
    tsd_alerts_stop(&a);
    print_message("queue of 256 bytes: %llu of 2000 dropped\n", (unsigned long long)a.drops);
    assert_int_equal(a.published[TSS_ALERT_DISCORD] + a.drops, 2000);
    assert_int_equal(a.errors, 0);
    uint64_t got = 0, last = 0;
    Tsmine__V1__Alert *m;
    while ((m = next_alert(sub, 200)) != NULL) {
        assert_true(m->alert_id > last && m->alert_id <= 2000);
        last = m->alert_id, got++;
        tsmine__v1__alert__free_unpacked(m, NULL);
    }
    assert_int_equal(got, a.published[TSS_ALERT_DISCORD]);

    tss_engine_destroy(&e);
    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

/* The publisher's two lanes (alert_publisher.h), with the thread held while they fill:
 * a LEFT_DISCORD of a stream with nothing in the bulk lane leaves first, ahead of a
 * burst of DISCORDs of another stream, and a GAP of a third stream and an ANOMALY of a
 * fourth right after it;
 * the bursting stream's own LEFT_DISCORD and GAP stay behind its burst, and a
 * DISCORD queued after the urgent ones goes last. So every stream's alerts arrive in
 * the order they were queued (alert_id increasing per stream). */
static void test_publisher_urgent_lane(void **state) {
    (void)state;
    enum { BURST = 1000 };
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);
    tsd_alerts a;
    alerts_init(&a, pub, 5);
    char err[256] = "";
    if (tsd_alerts_start(&a, 1u << 20, err, sizeof err) != 0)
        fail_msg("tsd_alerts_start: %s", err);
    tsd_publisher_hold(a.thread, 1);
    tss_alert disc = {.kind = TSS_ALERT_DISCORD, .length = 16, .distance = 3.5};
    tss_alert left = {.kind = TSS_ALERT_LEFT_DISCORD, .length = 16, .distance = 4.5};
    tss_alert gap = {.kind = TSS_ALERT_GAP, .length = 3};
    tss_alert anomaly = {.kind = TSS_ALERT_ANOMALY, .length = 16, .score = 0.999};
    for (int k = 0; k < BURST; k++) /* ids 1 .. BURST */
        tsd_alerts_publish(&a, "burst/x", &disc);
    tsd_alerts_publish(&a, "burst/x", &left);    /* BURST + 1: behind its burst */
    tsd_alerts_publish(&a, "quick/y", &left);    /* BURST + 2: first of all */
    tsd_alerts_publish(&a, "burst/x", &gap);     /* BURST + 3: behind its burst */
    tsd_alerts_publish(&a, "gap/z", &gap);       /* BURST + 4: second */
    tsd_alerts_publish(&a, "event/w", &anomaly); /* BURST + 5: third */
    tsd_alerts_publish(&a, "quick/y", &disc);    /* BURST + 6: bulk, last */
    tsd_alerts_flush(&a); /* the last partial batch into the lanes while still held (as
                           * the engine's on_alerts_end does after each burst) */
    tsd_publisher_hold(a.thread, 0);
    tsd_alerts_stop(&a);
    assert_int_equal(a.drops, 0);

    /* the order of arrival: the three urgent ones, the burst, then the bulk lane's rest */
    static const uint64_t head[] = {BURST + 2, BURST + 4, BURST + 5};
    static const uint64_t tail[] = {BURST + 1, BURST + 3, BURST + 6};
    uint64_t got = 0;
    Tsmine__V1__Alert *m;
    while ((m = next_alert(sub, 500)) != NULL) {
        uint64_t want = got < 3 ? head[got] : got < BURST + 3 ? got - 2 : tail[got - BURST - 3];
        if (m->alert_id != want)
            fail_msg("alert %llu arrived %llu-th, expected alert %llu",
                     (unsigned long long)m->alert_id, (unsigned long long)got + 1,
                     (unsigned long long)want);
        got++;
        tsmine__v1__alert__free_unpacked(m, NULL);
    }
    assert_int_equal(got, BURST + 6);

    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

/* found = published + dropped + queued for every kind (alerts.h), at this sync. */
static void assert_counts_add_up(tsd_alerts *a) {
    tsd_alerts_sync(a);
    uint64_t drops = 0;
    for (int k = 0; k < TSS_ALERT_KINDS; k++) {
        if (a->found[k] != a->published[k] + a->dropped[k] + a->queued[k])
            fail_msg("kind %d: found %llu != published %llu + dropped %llu + queued %llu", k,
                     (unsigned long long)a->found[k], (unsigned long long)a->published[k],
                     (unsigned long long)a->dropped[k], (unsigned long long)a->queued[k]);
        drops += a->dropped[k];
    }
    assert_int_equal(a->drops, drops);
}

/* Issue 17 item 11: the counts per kind are exact at every sync, while alerts wait in
 * the batch and in the queue (the thread held), once a small queue refuses some, and
 * after the stop (nothing queued); the subscriber gets exactly the published ones, per
 * kind. */
static void test_counts_per_kind_add_up(void **state) {
    (void)state;
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);
    tsd_alerts a;
    alerts_init(&a, pub, 0);
    char err[256] = "";
    if (tsd_alerts_start(&a, 8192, err, sizeof err) != 0) /* about 80 alerts */
        fail_msg("tsd_alerts_start: %s", err);
    tsd_publisher_hold(a.thread, 1);
    static const tss_alert_kind kinds[] = {TSS_ALERT_DISCORD,      TSS_ALERT_MOTIF,
                                           TSS_ALERT_LEFT_DISCORD, TSS_ALERT_GAP,
                                           TSS_ALERT_ANOMALY,      TSS_ALERT_ANOMALY_END};
    enum { N = 600 };
    for (int k = 0; k < N; k++) {
        tss_alert al = {.kind = kinds[k % 6], .length = 16, .distance = 1.5};
        tsd_alerts_publish(&a, k % 2 ? "mix/odd" : "mix/even", &al);
        if (k % 97 == 0)
            assert_counts_add_up(&a); /* some in the batch, some queued */
    }
    assert_counts_add_up(&a);
    uint64_t queued = 0;
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        queued += a.queued[k];
    assert_true(queued > 0); /* the held thread's queue (and the batch) */
    tsd_alerts_flush(&a);
    assert_counts_add_up(&a);
    assert_true(a.drops > 0); /* the small queue refused some: the test is not void */
    tsd_publisher_hold(a.thread, 0);
    tsd_alerts_stop(&a);
    assert_counts_add_up(&a);
    uint64_t got[TSS_ALERT_KINDS] = {0}, published = 0;
    Tsmine__V1__Alert *m;
    while ((m = next_alert(sub, 200)) != NULL) {
        got[tsd_alert_slot((int)m->kind)]++;
        tsmine__v1__alert__free_unpacked(m, NULL);
    }
    for (int k = 0; k < TSS_ALERT_KINDS; k++) {
        assert_int_equal(a.queued[k], 0);
        assert_int_equal(got[k], a.published[k]);
        published += a.published[k];
    }
    print_message("%d alerts, 6 kinds, queue of 8 KiB held: %llu published, %llu dropped\n", N,
                  (unsigned long long)published, (unsigned long long)a.drops);
    assert_int_equal(published + a.drops, N);
    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

/* A sink (alerts.h) that records the alert ids it gets. */
typedef struct {
    uint64_t ids[4096];
    size_t n;
} sink_log;

static int record(void *user, const tsd_alert_rec *r) {
    sink_log *l = user;
    if (l->n < 4096)
        l->ids[l->n++] = r->alert_id;
    return TSD_SINK_TAKEN;
}

static const tsd_sink_ops record_sink = {.name = "record", .offer = record};

/* Sinks get every alert once, after the PUB send and in order, from the main thread
 * without a publisher thread and from the thread with one; a sink beyond
 * TSD_SINKS_MAX is refused. */
static void test_sinks_get_every_alert(void **state) {
    (void)state;
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);
    static sink_log one, two;
    tss_alert al = {.kind = TSS_ALERT_ANOMALY, .length = 16, .distance = 3.5};
    for (int threaded = 0; threaded < 2; threaded++) {
        one.n = two.n = 0;
        tsd_alerts a;
        alerts_init(&a, pub, 5);
        assert_int_equal(tsd_alerts_add_sink(&a, &record_sink, &one), 0);
        assert_int_equal(tsd_alerts_add_sink(&a, &record_sink, &two), 0);
        char err[256] = "";
        if (threaded && tsd_alerts_start(&a, 1 << 20, err, sizeof err) != 0)
            fail_msg("tsd_alerts_start: %s", err);
        for (int k = 0; k < 1000; k++)
            tsd_alerts_publish(&a, k % 2 ? "s/odd" : "s/even", &al);
        tsd_alerts_flush(&a);
        tsd_alerts_stop(&a);
        assert_int_equal(a.published[TSS_ALERT_ANOMALY], 1000);
        assert_int_equal(one.n, 1000);
        assert_int_equal(two.n, 1000);
        /* each once, and each stream's in order (ids of s/even are odd, s/odd even) */
        uint64_t last[2] = {0, 0}, sum = 0;
        for (size_t i = 0; i < one.n; i++) {
            assert_int_equal(two.ids[i], one.ids[i]);
            assert_true(one.ids[i] > last[one.ids[i] % 2]);
            last[one.ids[i] % 2] = one.ids[i], sum += one.ids[i];
        }
        assert_int_equal(sum, 1000 * 1001 / 2);
        for (size_t k = a.nsinks; k < TSD_SINKS_MAX; k++)
            assert_int_equal(tsd_alerts_add_sink(&a, &record_sink, &one), 0);
        assert_int_equal(tsd_alerts_add_sink(&a, &record_sink, &one), -1); /* TSD_SINKS_MAX */
    }
    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

/* The largest alert, a stream id of TSS_MAX_ID bytes and every varint at its longest,
 * the views included, fits the send buffer (TSD_ALERT_PACKED_MAX): it is published, not
 * dropped as too large, and arrives whole. */
static void test_largest_alert_fits(void **state) {
    (void)state;
    void *zctx = zmq_ctx_new(), *sub = NULL;
    void *pub = pub_with_subscriber(zctx, &sub);
    char id[TSS_MAX_ID + 1];
    memset(id, 'x', TSS_MAX_ID);
    id[TSS_MAX_ID] = '\0';
    tsd_alert_rec r = {.alert = {.kind = TSS_ALERT_ANOMALY_END,
                                 .start_seq = UINT64_MAX,
                                 .start_timestamp_ns = INT64_MIN,
                                 .length = UINT32_MAX,
                                 .distance = 1.5,
                                 .neighbor_seq = UINT64_MAX,
                                 .threshold = 0.997,
                                 .score = 0.999,
                                 .event_start_seq = UINT64_MAX,
                                 .event_end_seq = UINT64_MAX,
                                 .detected_seq = UINT64_MAX,
                                 .tail = TSS_TAIL_NEAR,
                                 .seq = UINT64_MAX,
                                 .view = TSS_VIEW_MAGNITUDE,
                                 .shape_score = 0.5,
                                 .magnitude_score = 0.999,
                                 .level_score = 0.25,
                                 .magnitude = 123.5,
                                 .magnitude_neighbor_seq = UINT64_MAX,
                                 .level = 0.125},
                       .alert_id = UINT64_MAX,
                       .seq = UINT64_MAX,
                       .detected_at_ns = INT64_MIN};
    memcpy(r.stream_id, id, sizeof id);
    Tsmine__V1__Alert msg;
    tsd_alert_rec_msg(&r, &msg);
    const size_t need = tsmine__v1__alert__get_packed_size(&msg);
    print_message("largest alert: %zu bytes, the buffer %d\n", need,
                  TSS_MAX_ID + TSD_ALERT_PACKED_MAX);
    assert_true(need <= TSS_MAX_ID + TSD_ALERT_PACKED_MAX);
    tsd_alert_sends out = {0};
    const tsd_sink zs = {.ops = &tsd_sink_zmq, .self = zmq_sink_on(pub, 5)};
    tsd_sinks_offer(&zs, 1, &r, &out);
    assert_int_equal(out.published[TSS_ALERT_ANOMALY_END], 1);
    assert_int_equal(out.dropped[TSS_ALERT_ANOMALY_END], 0);
    char topic[1024];
    uint8_t body[1024];
    size_t len = 0;
    assert_int_equal(receive(sub, 1000, topic, body, sizeof body, &len), 2);
    assert_string_equal(topic, id);
    assert_int_equal(len, need);
    Tsmine__V1__Alert *m = tsmine__v1__alert__unpack(NULL, len, body);
    assert_non_null(m);
    assert_int_equal(m->view, TSMINE__V1__VIEW__MAGNITUDE);
    assert_int_equal(m->magnitude_neighbor_seq, UINT64_MAX);
    assert_true(m->magnitude_distance == 123.5 && m->level == 0.125 && m->level_score == 0.25);
    assert_int_equal(m->seq, UINT64_MAX);
    tsmine__v1__alert__free_unpacked(m, NULL);
    zmq_close(sub);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_subscriber_loses_only_its_own),
        cmocka_unit_test(test_seq_per_stream_survives_checkpoint),
        cmocka_unit_test(test_publisher_thread_keeps_order),
        cmocka_unit_test(test_publisher_urgent_lane),
        cmocka_unit_test(test_counts_per_kind_add_up),
        cmocka_unit_test(test_sinks_get_every_alert),
        cmocka_unit_test(test_largest_alert_fits),
    };
    return cmocka_run_group_tests_name("daemon_alerts", tests, NULL, NULL);
}
