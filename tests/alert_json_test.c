/* SPDX-License-Identifier: Apache-2.0 */
/* alert_json_test.c - an Alert as JSON (lib/alert_json.h), the form `tsmine
 * alerts` and `tsmine detect` print and tsmined publishes on MQTT: every field of an
 * ANOMALY with its views, written out in full; a DISCORD's views not computed (null);
 * no views for the kinds without them (or a message of a daemon that predates them);
 * the names of the views; a message that went through pack and unpack gives the same
 * text; and the longest text fits TSM_ALERT_JSON_MAX. */
#include "testutil.h"

#include "lib/alert_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The JSON of a (fits in 4096 bytes), its length checked against the return value. */
static const char *json(const Tsmine__V1__Alert *a) {
    static char buf[4096];
    size_t n = tsm_alert_json(buf, sizeof buf, a);
    assert_true(n < sizeof buf);
    assert_int_equal(strlen(buf), n);
    return buf;
}

/* An ANOMALY whose event the magnitude view opened, every field set. */
static Tsmine__V1__Alert anomaly(void) {
    Tsmine__V1__Alert a = TSMINE__V1__ALERT__INIT;
    a.alert_id = 7, a.stream_id = (char *)"site/pump-7", a.kind = TSMINE__V1__ALERT_KIND__ANOMALY;
    a.start_seq = 300, a.start_timestamp_ns = 1700000300000000000, a.length = 24;
    a.distance = 4.125, a.neighbor_seq = 120, a.threshold = 0.997, a.score = 0.99925;
    a.event_start_seq = 300, a.event_end_seq = 324, a.tail = TSMINE__V1__TAIL__FAR;
    a.detected_seq = 323, a.detected_at_ns = 1800000000123456789, a.seq = 5;
    a.view = TSMINE__V1__VIEW__MAGNITUDE, a.shape_score = 0.4375, a.magnitude_score = 0.99925;
    a.level_score = 0.25, a.magnitude_distance = 17.5, a.magnitude_neighbor_seq = 96;
    a.level = 0.0625;
    return a;
}

#define ANOMALY_JSON                                                                               \
    "{\"alert_id\":7,\"stream_id\":\"site/pump-7\",\"kind\":\"ANOMALY\",\"start_seq\":300,"        \
    "\"start_timestamp_ns\":1700000300000000000,\"length\":24,\"distance\":4.125,"                 \
    "\"neighbor_seq\":120,\"threshold\":0.997,\"score\":0.99925,\"event_start_seq\":300,"          \
    "\"event_end_seq\":324,\"tail\":\"FAR\",\"view\":\"magnitude\",\"shape_score\":0.4375,"        \
    "\"magnitude_score\":0.99925,\"level_score\":0.25,\"magnitude_distance\":17.5,"                \
    "\"magnitude_neighbor_seq\":96,\"level\":0.0625,\"detected_seq\":323,"                         \
    "\"detected_at_ns\":1800000000123456789,\"seq\":5}"

static void test_anomaly(void **state) {
    (void)state;
    Tsmine__V1__Alert a = anomaly();
    assert_string_equal(json(&a), ANOMALY_JSON);
}

/* A DISCORD: the shape view alone, the others' scores and values null, and no
 * magnitude neighbour without a magnitude distance. */
static void test_discord(void **state) {
    (void)state;
    Tsmine__V1__Alert a = anomaly();
    a.kind = TSMINE__V1__ALERT_KIND__DISCORD, a.score = 0.998, a.view = TSMINE__V1__VIEW__SHAPE;
    a.shape_score = 0.998, a.magnitude_score = NAN, a.level_score = NAN;
    a.magnitude_distance = NAN, a.magnitude_neighbor_seq = 0, a.level = NAN;
    assert_non_null(strstr(json(&a), ",\"tail\":\"FAR\",\"view\":\"shape\",\"shape_score\":0.998,"
                                     "\"magnitude_score\":null,\"level_score\":null,"
                                     "\"magnitude_distance\":null,\"magnitude_neighbor_seq\":null,"
                                     "\"level\":null,\"detected_seq\":323,"));
    assert_null(strstr(json(&a), "event_start_seq")); /* still only for the event kinds */
}

/* Without a view (MOTIF, GAP, RESET, an older daemon's message) no view field is
 * written, whatever the others hold; the rest of the text stays as it was. */
static void test_no_views(void **state) {
    (void)state;
    static const int kinds[] = {TSMINE__V1__ALERT_KIND__MOTIF, TSMINE__V1__ALERT_KIND__GAP,
                                TSMINE__V1__ALERT_KIND__RESET, TSMINE__V1__ALERT_KIND__ANOMALY};
    static const char *const names[] = {
        "view",        "shape_score",        "magnitude_score",
        "level_score", "magnitude_distance", "magnitude_neighbor_seq",
        "\"level\""};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        Tsmine__V1__Alert a = anomaly();
        a.kind = kinds[k];
        a.view = TSMINE__V1__VIEW__VIEW_UNSPECIFIED;
        const char *j = json(&a);
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strstr(j, names[i]))
                fail_msg("kind %d without a view: %s in %s", kinds[k], names[i], j);
    }
    Tsmine__V1__Alert a = anomaly();
    a.view = TSMINE__V1__VIEW__VIEW_UNSPECIFIED;
    assert_string_equal(json(&a),
                        "{\"alert_id\":7,\"stream_id\":\"site/pump-7\",\"kind\":\"ANOMALY\","
                        "\"start_seq\":300,\"start_timestamp_ns\":1700000300000000000,"
                        "\"length\":24,\"distance\":4.125,\"neighbor_seq\":120,\"threshold\":"
                        "0.997,\"score\":0.99925,\"event_start_seq\":300,\"event_end_seq\":324,"
                        "\"tail\":\"FAR\",\"detected_seq\":323,\"detected_at_ns\":"
                        "1800000000123456789,\"seq\":5}");
}

static void test_view_names(void **state) {
    (void)state;
    assert_null(tsm_alert_view_name(TSMINE__V1__VIEW__VIEW_UNSPECIFIED));
    assert_string_equal(tsm_alert_view_name(TSMINE__V1__VIEW__SHAPE), "shape");
    assert_string_equal(tsm_alert_view_name(TSMINE__V1__VIEW__MAGNITUDE), "magnitude");
    assert_string_equal(tsm_alert_view_name(TSMINE__V1__VIEW__LEVEL), "level");
    assert_string_equal(tsm_alert_view_name(4), "unknown");
    assert_string_equal(tsm_alert_view_name(-1), "unknown");
    Tsmine__V1__Alert a = anomaly();
    a.view = 4; /* a newer daemon's view: its scores are still shown */
    assert_non_null(strstr(json(&a), ",\"view\":\"unknown\",\"shape_score\":0.4375,"));
}

/* The message a subscriber unpacks gives the same text as the one packed. */
static void test_round_trip(void **state) {
    (void)state;
    Tsmine__V1__Alert a = anomaly();
    uint8_t buf[1024];
    size_t n = tsmine__v1__alert__pack(&a, buf);
    assert_true(n <= sizeof buf);
    Tsmine__V1__Alert *b = tsmine__v1__alert__unpack(NULL, n, buf);
    assert_non_null(b);
    assert_string_equal(json(b), ANOMALY_JSON);
    tsmine__v1__alert__free_unpacked(b, NULL);
}

/* The longest text: a stream id of 255 bytes that all need \u00XX, every number at
 * its longest (17 significant digits, a 3-digit negative exponent), every field on. */
static void test_longest(void **state) {
    (void)state;
    char id[256];
    memset(id, 0x01, 255);
    id[255] = '\0';
    const double x = -1.2345678901234567e-300;
    Tsmine__V1__Alert a = TSMINE__V1__ALERT__INIT;
    a.alert_id = UINT64_MAX, a.stream_id = id, a.kind = TSMINE__V1__ALERT_KIND__ANOMALY_END;
    a.start_seq = UINT64_MAX, a.start_timestamp_ns = INT64_MIN, a.length = UINT32_MAX;
    a.distance = x, a.neighbor_seq = UINT64_MAX, a.threshold = x, a.score = x;
    a.event_start_seq = UINT64_MAX, a.event_end_seq = UINT64_MAX, a.tail = TSMINE__V1__TAIL__NEAR;
    a.detected_seq = UINT64_MAX, a.detected_at_ns = INT64_MIN, a.seq = UINT64_MAX;
    a.view = TSMINE__V1__VIEW__MAGNITUDE, a.shape_score = x, a.magnitude_score = x;
    a.level_score = x, a.magnitude_distance = x, a.magnitude_neighbor_seq = UINT64_MAX;
    a.level = x;
    size_t n = tsm_alert_json(NULL, 0, &a);
    print_message("longest alert JSON: %zu bytes of %d\n", n, TSM_ALERT_JSON_MAX);
    assert_true(n < TSM_ALERT_JSON_MAX);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anomaly),
        cmocka_unit_test(test_discord),
        cmocka_unit_test(test_no_views),
        cmocka_unit_test(test_view_names),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_longest),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("alert_json", tests, NULL, NULL);
}
