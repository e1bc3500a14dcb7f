/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_alertmanager_test.c - the JSON that tsmined posts to Alertmanager
 * (daemon/sink/alertmanager.h, tsd_am_body): an open event, its resolution, several
 * events in one body, escaping, clamped times, an event resumed from a checkpoint,
 * the detection views as annotations, and truncation like snprintf. The
 * expected texts are written out by hand; their times were checked with Python's
 * datetime (1700000001.5 s = 2023-11-14T22:13:21.500Z). */
#include "testutil.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sink/alertmanager.h"

/* An ANOMALY of stream id at seq 1500, detected at 1800000000.123456789 s. */
static tsd_alert_rec anomaly(const char *id) {
    tsd_alert_rec r;
    memset(&r, 0, sizeof r);
    r.alert = (tss_alert){.kind = TSS_ALERT_ANOMALY,
                          .start_seq = 1500,
                          .start_timestamp_ns = 1700000001500000000,
                          .length = 24,
                          .distance = 3.25,
                          .neighbor_seq = 700,
                          .threshold = 0.997,
                          .score = 0.9995,
                          .event_start_seq = 1500,
                          .event_end_seq = 1524,
                          .detected_seq = 1523,
                          .view = TSS_VIEW_MAGNITUDE,
                          .shape_score = 0.4375,
                          .magnitude_score = 0.9995,
                          .level_score = 0,
                          .magnitude = 12.5,
                          .magnitude_neighbor_seq = 640,
                          .level = 0};
    r.alert_id = 9, r.seq = 3;
    r.detected_at_ns = 1800000000123456789;
    snprintf(r.stream_id, sizeof r.stream_id, "%s", id);
    return r;
}

/* Its ANOMALY_END: the event [1500, 1560), peak at 1510, closed 30.9 s later. */
static tsd_alert_rec anomaly_end(const char *id) {
    tsd_alert_rec r = anomaly(id);
    r.alert.kind = TSS_ALERT_ANOMALY_END;
    r.alert.start_seq = 1510;
    r.alert.start_timestamp_ns = 1700000001510000000;
    r.alert.distance = 4.5;
    r.alert.score = 1.0;
    r.alert.magnitude_score = 1.0, r.alert.shape_score = 0.75, r.alert.level_score = 0.5;
    r.alert.magnitude = 20.25, r.alert.magnitude_neighbor_seq = 320, r.alert.level = 0.0625;
    r.alert.event_end_seq = 1560;
    r.alert.detected_seq = 1583;
    r.detected_at_ns = 1800000030999000000;
    return r;
}

static const tsd_am_ident ident = {"edge-7", "http://127.0.0.1:9464/metrics"};
#define ENDS 1800000240123456789 /* firing: 4 x 60 s ahead */

#define OPEN_JSON                                                                                  \
    "{\"labels\":{\"alertname\":\"TsmineAnomaly\",\"stream\":\"plant/a\",\"kind\":\"anomaly\","    \
    "\"daemon\":\"edge-7\"},\"annotations\":{\"summary\":\"anomaly on plant/a: score 0.9995, 24 "  \
    "samples from 1500\",\"distance\":\"3.25\",\"score\":\"0.9995\",\"threshold\":\"0.997\","      \
    "\"start_seq\":\"1500\",\"length\":\"24\",\"start_time\":\"2023-11-14T22:13:21.500Z\","        \
    "\"event_start_seq\":\"1500\",\"view\":\"magnitude\",\"shape_score\":\"0.4375\","              \
    "\"magnitude_score\":\"0.9995\",\"level_score\":\"0\",\"magnitude_distance\":\"12.5\","        \
    "\"magnitude_neighbor_seq\":\"640\",\"level\":\"0\"},\"startsAt\":"                            \
    "\"2027-01-15T08:00:00.123Z\",\"endsAt\":\"2027-01-15T08:04:00.123Z\",\"generatorURL\":"       \
    "\"http://127.0.0.1:9464/metrics\"}"

static void test_open(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("plant/a");
    tsd_am_event e = {&a, NULL};
    char buf[4096];
    size_t n = tsd_am_body(buf, sizeof buf, &e, 1, &ident, ENDS);
    assert_string_equal(buf, "[" OPEN_JSON "]");
    assert_int_equal(n, strlen(buf));
}

static void test_resolved(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("plant/a"), z = anomaly_end("plant/a");
    tsd_am_event e = {&a, &z};
    const tsd_am_ident no_url = {"edge-7", ""};
    char buf[4096];
    tsd_am_body(buf, sizeof buf, &e, 1, &no_url, ENDS);
    /* the same labels; the peak's annotations; endsAt = when the event closed */
    assert_string_equal(
        buf, "[{\"labels\":{\"alertname\":\"TsmineAnomaly\",\"stream\":\"plant/a\",\"kind\":"
             "\"anomaly\",\"daemon\":\"edge-7\"},\"annotations\":{\"summary\":\"anomaly on "
             "plant/a ended: samples 1500 to 1560, peak score 1.0000 at 1510\",\"distance\":"
             "\"4.5\",\"score\":\"1\",\"threshold\":\"0.997\",\"start_seq\":\"1510\",\"length\":"
             "\"24\",\"start_time\":\"2023-11-14T22:13:21.510Z\",\"event_start_seq\":\"1500\","
             "\"event_end_seq\":\"1560\",\"view\":\"magnitude\",\"shape_score\":\"0.75\","
             "\"magnitude_score\":\"1\",\"level_score\":\"0.5\",\"magnitude_distance\":\"20.25\","
             "\"magnitude_neighbor_seq\":\"320\",\"level\":\"0.0625\"},\"startsAt\":"
             "\"2027-01-15T08:00:00.123Z\",\"endsAt\":\"2027-01-15T08:00:30.999Z\"}]");
}

static void test_several_and_escapes(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("plant/a"), b = anomaly("q\"\\\x01\xc3");
    b.alert.start_timestamp_ns = 0; /* unknown: no start_time */
    b.alert.score = NAN;
    tsd_am_event e[2] = {{&a, NULL}, {&b, NULL}};
    const tsd_am_ident id = {"host \"x\"", "http://127.0.0.1:9464/metrics"};
    char buf[8192];
    tsd_am_body(buf, sizeof buf, e, 2, &id, ENDS);
    assert_non_null(strstr(buf, "\"stream\":\"q\\\"\\\\\\u0001\\ufffd\""));
    assert_non_null(strstr(buf, "\"daemon\":\"host \\\"x\\\"\""));
    assert_non_null(strstr(buf, "\"score\":\"NaN\""));
    assert_null(strstr(buf + strlen(OPEN_JSON), "start_time"));
    assert_true(buf[0] == '[' && buf[strlen(buf) - 1] == ']');
    assert_non_null(strstr(buf, "},{\"labels\""));
    /* no raw control or high bytes left */
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
        assert_true(*p >= 0x20 && *p < 0x80);
}

static void test_times_clamped(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("s"), z = anomaly_end("s");
    z.detected_at_ns = a.detected_at_ns - 5000000000; /* the clock stepped back */
    tsd_am_event e = {&a, &z};
    char buf[4096];
    tsd_am_body(buf, sizeof buf, &e, 1, &ident, ENDS);
    assert_non_null(strstr(buf, "\"endsAt\":\"2027-01-15T08:00:00.123Z\""));
    a.detected_at_ns = -1500000000; /* before the epoch: still a valid time */
    e.end = NULL;
    tsd_am_body(buf, sizeof buf, &e, 1, &ident, -1500000000);
    assert_non_null(strstr(buf, "\"startsAt\":\"1969-12-31T23:59:58.500Z\""));
}

static void test_resumed(void **state) {
    (void)state;
    tsd_alert_rec a;
    memset(&a, 0, sizeof a); /* as tsd_am_resume makes it: no details */
    a.alert = (tss_alert){.kind = TSS_ALERT_ANOMALY, .distance = NAN, .score = NAN};
    a.detected_at_ns = 1800000000123456789;
    snprintf(a.stream_id, sizeof a.stream_id, "plant/a");
    tsd_am_event e = {&a, NULL};
    char buf[4096];
    tsd_am_body(buf, sizeof buf, &e, 1, &ident, ENDS);
    assert_string_equal(
        buf, "[{\"labels\":{\"alertname\":\"TsmineAnomaly\",\"stream\":\"plant/a\",\"kind\":"
             "\"anomaly\",\"daemon\":\"edge-7\"},\"annotations\":{\"summary\":\"anomaly on "
             "plant/a: open when tsmined restarted\"},\"startsAt\":\"2027-01-15T08:00:00.123Z\","
             "\"endsAt\":\"2027-01-15T08:04:00.123Z\",\"generatorURL\":\"http://127.0.0.1:9464/"
             "metrics\"}]");
    /* closed by tsd_am_reconcile: an ANOMALY_END with no details either */
    tsd_alert_rec gone = a;
    gone.alert.kind = TSS_ALERT_ANOMALY_END;
    gone.detected_at_ns = 1800000030999000000;
    e.end = &gone;
    tsd_am_body(buf, sizeof buf, &e, 1, &ident, ENDS);
    assert_non_null(strstr(buf,
                           "{\"summary\":\"anomaly on plant/a: closed without its end (the "
                           "stream was removed, or its ANOMALY_END lost)\"},\"startsAt\":"
                           "\"2027-01-15T08:00:00.123Z\",\"endsAt\":\"2027-01-15T08:00:30.999Z\""));
    /* its ANOMALY_END brings the details */
    tsd_alert_rec z = anomaly_end("plant/a");
    e.end = &z;
    tsd_am_body(buf, sizeof buf, &e, 1, &ident, ENDS);
    assert_non_null(strstr(buf, "\"level\":\"0.0625\"},\"startsAt\":\"2027-01-15T08:00:00.123Z\","
                                "\"endsAt\":\"2027-01-15T08:00:30.999Z\""));
}

/* The views are annotations, never labels: the alert's identity (its labels) is the
 * same with and without them, with another opening view, and once resolved; a view not
 * scored (NaN) says so, and without a magnitude distance there is no neighbour. */
static void test_views_are_annotations(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("plant/a"), b = a, z = anomaly_end("plant/a");
    b.alert.view = TSS_VIEW_SHAPE; /* a numeric range: the shape view decides */
    b.alert.magnitude_score = NAN, b.alert.magnitude = NAN;
    char with[4096], shape[4096], none[4096], resolved[4096];
    tsd_am_event e = {&a, NULL};
    tsd_am_body(with, sizeof with, &e, 1, &ident, ENDS);
    e.open = &b;
    tsd_am_body(shape, sizeof shape, &e, 1, &ident, ENDS);
    assert_non_null(strstr(shape, ",\"view\":\"shape\",\"shape_score\":\"0.4375\","
                                  "\"magnitude_score\":\"NaN\",\"level_score\":\"0\","
                                  "\"magnitude_distance\":\"NaN\",\"level\":\"0\"}"));
    assert_null(strstr(shape, "magnitude_neighbor_seq"));
    b.alert.view = TSS_VIEW_NONE;
    tsd_am_body(none, sizeof none, &e, 1, &ident, ENDS);
    assert_null(strstr(none, "view"));
    assert_null(strstr(none, "_score"));
    assert_non_null(strstr(none, "\"event_start_seq\":\"1500\"},\"startsAt\""));
    e.open = &a, e.end = &z;
    tsd_am_body(resolved, sizeof resolved, &e, 1, &ident, ENDS);
    const char *bodies[] = {shape, none, resolved};
    const size_t labels = (size_t)(strstr(with, "\"annotations\"") - with);
    for (int i = 0; i < 3; i++) {
        assert_true(strstr(bodies[i], "\"annotations\"") - bodies[i] == (ptrdiff_t)labels);
        assert_memory_equal(bodies[i], with, labels);
    }
}

static void test_truncation(void **state) {
    (void)state;
    tsd_alert_rec a = anomaly("plant/a");
    tsd_am_event e = {&a, NULL};
    const size_t need = tsd_am_body(NULL, 0, &e, 1, &ident, ENDS);
    assert_int_equal(need, strlen("[" OPEN_JSON "]"));
    char small[32];
    memset(small, 'x', sizeof small);
    assert_int_equal(tsd_am_body(small, sizeof small, &e, 1, &ident, ENDS), need);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_int_equal(tsd_am_body(small, sizeof small, &e, 0, &ident, ENDS), 2);
    assert_string_equal(small, "[]");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_resolved),
        cmocka_unit_test(test_several_and_escapes),
        cmocka_unit_test(test_times_clamped),
        cmocka_unit_test(test_resumed),
        cmocka_unit_test(test_views_are_annotations),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests_name("daemon_alertmanager", tests, NULL, NULL);
}
