/* daemon_alerts_test.c - alert publishing (daemon/alerts.h) on the daemon's own PUB
 * socket (daemon/sockets.h, inproc endpoints): the two frames and their content,
 * increasing alert ids, and plain PUB semantics: a subscriber that does not read
 * loses its own alerts beyond its high-water mark while another subscriber receives
 * every one, and the publisher counts no drop (per-subscriber drops are invisible to
 * it). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "alerts.h"
#include "config.h"
#include "sockets.h"
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

static void test_slow_subscriber_loses_only_its_own(void **state) {
    (void)state;
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
    tsd_alerts_init(&a, pub, 5);
    for (int k = 0; k < NALERTS; k++) {
        tss_alert al = {.kind = k % 2 ? TSS_ALERT_LEFT_DISCORD : TSS_ALERT_DISCORD,
                        .start_seq = (uint64_t)k,
                        .length = 16,
                        .distance = 3.5,
                        .neighbor_seq = 7,
                        .threshold = 3.0};
        tsd_alerts_publish(&a, "plant/7", &al);
    }
    assert_int_equal(a.drops, 0);
    assert_int_equal(a.errors, 0);
    assert_int_equal(a.found[TSS_ALERT_DISCORD] + a.found[TSS_ALERT_LEFT_DISCORD], NALERTS);
    assert_int_equal(a.published[TSS_ALERT_DISCORD] + a.published[TSS_ALERT_LEFT_DISCORD], NALERTS);

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
        assert_int_equal(m->kind, k % 2 ? TSMINE__V1__ALERT_KIND__LEFT_DISCORD
                                        : TSMINE__V1__ALERT_KIND__DISCORD);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_subscriber_loses_only_its_own),
    };
    return cmocka_run_group_tests_name("daemon_alerts", tests, NULL, NULL);
}
