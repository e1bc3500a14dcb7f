/* SPDX-License-Identifier: Apache-2.0 */
/* alert_msg_test.c - the engine's alert as a tsmine.v1.Alert (lib/alert_msg.h),
 * what tsmined publishes and `tsmine detect` prints: every field of the engine's alert
 * reaches the message and survives pack and unpack (a NaN score stays NaN), the views
 * only when the alert has a view (else nothing of them goes on the wire), and the
 * sender's own fields are left as they were. */
#include "testutil.h"

#include "calib.h" /* tss_tail */
#include "lib/alert_msg.h"

#include <math.h>
#include <string.h>

/* An ANOMALY_END whose event the magnitude view opened: every field distinct. */
static tss_alert peak(void) {
    return (tss_alert){.kind = TSS_ALERT_ANOMALY_END,
                       .start_seq = 1510,
                       .start_timestamp_ns = 1700000001510000000,
                       .length = 24,
                       .distance = 4.5,
                       .neighbor_seq = 700,
                       .threshold = 0.997,
                       .score = 0.9993,
                       .event_start_seq = 1500,
                       .event_end_seq = 1560,
                       .detected_seq = 1583,
                       .tail = TSS_TAIL_NEAR,
                       .seq = 12,
                       .view = TSS_VIEW_MAGNITUDE,
                       .shape_score = 0.41,
                       .magnitude_score = 0.9993,
                       .level_score = 0.125,
                       .magnitude = 17.25,
                       .magnitude_neighbor_seq = 640,
                       .level = 0.03};
}

/* Every field of a as m carries it (NaN where a has NaN). */
static void expect_fields(const Tsmine__V1__Alert *m, const tss_alert *a) {
#define SAME(x, y) assert_true(isnan(y) ? isnan(x) : (x) == (y))
    assert_int_equal(m->kind, (int)a->kind);
    assert_int_equal(m->start_seq, a->start_seq);
    assert_true(m->start_timestamp_ns == a->start_timestamp_ns);
    assert_int_equal(m->length, a->length);
    SAME(m->distance, a->distance);
    assert_int_equal(m->neighbor_seq, a->neighbor_seq);
    SAME(m->threshold, a->threshold);
    SAME(m->score, a->score);
    assert_int_equal(m->event_start_seq, a->event_start_seq);
    assert_int_equal(m->event_end_seq, a->event_end_seq);
    assert_int_equal(m->detected_seq, a->detected_seq);
    assert_int_equal(m->tail, a->tail);
    assert_int_equal(m->seq, a->seq);
    assert_int_equal(m->view, (int)a->view);
    SAME(m->shape_score, a->shape_score);
    SAME(m->magnitude_score, a->magnitude_score);
    SAME(m->level_score, a->level_score);
    SAME(m->magnitude_distance, a->magnitude);
    assert_int_equal(m->magnitude_neighbor_seq, a->magnitude_neighbor_seq);
    SAME(m->level, a->level);
#undef SAME
}

/* Packs m and unpacks it again (the caller frees the copy). */
static Tsmine__V1__Alert *round_trip(const Tsmine__V1__Alert *m) {
    static uint8_t buf[1024];
    size_t n = tsmine__v1__alert__get_packed_size(m);
    assert_true(n <= sizeof buf);
    assert_int_equal(tsmine__v1__alert__pack(m, buf), n);
    Tsmine__V1__Alert *u = tsmine__v1__alert__unpack(NULL, n, buf);
    assert_non_null(u);
    return u;
}

static void test_every_field(void **state) {
    (void)state;
    const tss_alert a = peak();
    Tsmine__V1__Alert m = TSMINE__V1__ALERT__INIT;
    m.schema_version = 1, m.alert_id = 99, m.stream_id = (char *)"plant/a";
    m.detected_at_ns = 1800000030999000000;
    tsm_alert_msg_fill(&m, &a);
    expect_fields(&m, &a);
    /* the sender's fields, as they were */
    assert_int_equal(m.schema_version, 1);
    assert_int_equal(m.alert_id, 99);
    assert_string_equal(m.stream_id, "plant/a");
    assert_true(m.detected_at_ns == 1800000030999000000);
    Tsmine__V1__Alert *u = round_trip(&m);
    expect_fields(u, &a);
    assert_int_equal(u->alert_id, 99);
    assert_string_equal(u->stream_id, "plant/a");
    tsmine__v1__alert__free_unpacked(u, NULL);
}

/* A DISCORD: the shape view, the others NaN, through the wire as NaN. */
static void test_discord_nan(void **state) {
    (void)state;
    tss_alert a = peak();
    a.kind = TSS_ALERT_DISCORD, a.view = TSS_VIEW_SHAPE, a.shape_score = a.score = 0.998;
    a.magnitude_score = a.level_score = a.magnitude = a.level = NAN;
    a.magnitude_neighbor_seq = 0, a.event_start_seq = a.event_end_seq = 0;
    Tsmine__V1__Alert m = TSMINE__V1__ALERT__INIT;
    tsm_alert_msg_fill(&m, &a);
    Tsmine__V1__Alert *u = round_trip(&m);
    expect_fields(u, &a);
    assert_int_equal(u->view, TSMINE__V1__VIEW__SHAPE);
    assert_true(isnan(u->magnitude_score) && isnan(u->magnitude_distance) && isnan(u->level));
    tsmine__v1__alert__free_unpacked(u, NULL);
}

/* No view (MOTIF, GAP, RESET): the view fields stay 0, whatever the engine's alert
 * holds in them, and none of them is on the wire: the packed message is as long as
 * one of a daemon that predates them. */
static void test_no_view(void **state) {
    (void)state;
    tss_alert a = peak();
    a.kind = TSS_ALERT_MOTIF, a.view = TSS_VIEW_NONE, a.score = NAN;
    a.shape_score = a.magnitude_score = a.level_score = a.magnitude = a.level = NAN;
    a.magnitude_neighbor_seq = 5;
    Tsmine__V1__Alert m = TSMINE__V1__ALERT__INIT;
    tsm_alert_msg_fill(&m, &a);
    assert_int_equal(m.view, TSMINE__V1__VIEW__VIEW_UNSPECIFIED);
    assert_true(m.shape_score == 0 && m.magnitude_score == 0 && m.level_score == 0);
    assert_true(m.magnitude_distance == 0 && m.magnitude_neighbor_seq == 0 && m.level == 0);
    Tsmine__V1__Alert old = m; /* the same alert as the fields before the views */
    old.view = 0, old.shape_score = old.magnitude_score = old.level_score = 1;
    const size_t with_scores = tsmine__v1__alert__get_packed_size(&old);
    old.shape_score = old.magnitude_score = old.level_score = 0;
    assert_int_equal(tsmine__v1__alert__get_packed_size(&m),
                     tsmine__v1__alert__get_packed_size(&old));
    assert_int_equal(with_scores, tsmine__v1__alert__get_packed_size(&m) + 3 * 10);
    Tsmine__V1__Alert *u = round_trip(&m);
    assert_int_equal(u->kind, TSMINE__V1__ALERT_KIND__MOTIF);
    assert_int_equal(u->view, TSMINE__V1__VIEW__VIEW_UNSPECIFIED);
    assert_true(isnan(u->score));
    tsmine__v1__alert__free_unpacked(u, NULL);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_discord_nan),
        cmocka_unit_test(test_no_view),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("alert_msg", tests, NULL, NULL);
}
