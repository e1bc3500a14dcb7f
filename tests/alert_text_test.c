/* SPDX-License-Identifier: Apache-2.0 */
/* alert_text_test.c - the readable forms of lib/alert_text.h: ISO 8601 times in
 * UTC and at a fixed local offset, durations at each unit's edges, term-safe stream
 * ids, the line of every alert kind (its words, its columns, the sample period learnt
 * from a stream's alerts) and the detection views of the scored kinds. The
 * expected texts are written out in full; `tsmine alerts` on a terminal is tested
 * end to end in tests/integration/terminal_test.py. */
#include "testutil.h"

#include "lib/alert_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1700000000000000000LL /* 2023-11-14T22:13:20Z */
#define S  1000000000LL          /* one second in ns */

static void test_time_utc(void **state) {
    (void)state;
    static const struct {
        long long ns;
        const char *text;
    } cases[] = {
        {T0, "2023-11-14T22:13:20.000Z"},
        {T0 + 123456789, "2023-11-14T22:13:20.123Z"},
        {0, "1970-01-01T00:00:00.000Z"},
        {-1, "1969-12-31T23:59:59.999Z"}, /* floor, not towards zero */
        {951782400LL * S, "2000-02-29T00:00:00.000Z"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = tsm_time_text(buf, sizeof buf, cases[i].ns, 0);
        assert_string_equal(buf, cases[i].text);
        assert_int_equal(n, 24);
    }
    /* cut to the buffer, the whole length returned */
    assert_int_equal(tsm_time_text(buf, 11, T0, 0), 24);
    assert_string_equal(buf, "2023-11-14");
}

static void test_time_local(void **state) {
    (void)state;
    char buf[64];
    setenv("TZ", "EST5", 1); /* POSIX: UTC-5, no summer time */
    tzset();
    assert_int_equal(tsm_time_text(buf, sizeof buf, T0, 1), 29);
    assert_string_equal(buf, "2023-11-14T17:13:20.000-05:00");
    setenv("TZ", "IST-5:30", 1); /* UTC+5:30 */
    tzset();
    tsm_time_text(buf, sizeof buf, T0, 1);
    assert_string_equal(buf, "2023-11-15T03:43:20.000+05:30");
    setenv("TZ", "UTC0", 1);
    tzset();
    tsm_time_text(buf, sizeof buf, T0, 1);
    assert_string_equal(buf, "2023-11-14T22:13:20.000+00:00");
}

static void test_duration(void **state) {
    (void)state;
    static const struct {
        double s;
        const char *text;
    } cases[] = {
        {0, "0 s"},
        {0.25, "0.25 s"},
        {0.001, "0.001 s"},
        {8.33, "8.3 s"},
        {9.94, "9.9 s"},
        {9.96, "10 s"},
        {42.4, "42 s"},
        {59.4, "59 s"},
        {59.6, "1 min"},
        {303, "5 min 3 s"},
        {3599.4, "59 min 59 s"},
        {3599.6, "1 h"},
        {3 * 3600 + 600, "3 h 10 min"},
        {86369, "23 h 59 min"},
        {86400, "1 d"},
        {2 * 86400 + 4 * 3600, "2 d 4 h"},
        {-1, "-"},
        {NAN, "-"},
        {INFINITY, "-"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsm_duration_text(buf, sizeof buf, cases[i].s);
        assert_string_equal(buf, cases[i].text);
    }
}

static void test_term_safe(void **state) {
    (void)state;
    char buf[64];
    assert_int_equal(tsm_term_safe(buf, sizeof buf, "site/pump-7"), 11);
    assert_string_equal(buf, "site/pump-7");
    tsm_term_safe(buf, sizeof buf, "a\x1b[2Jb\x7f\n");
    assert_string_equal(buf, "a\\x1b[2Jb\\x7f\\x0a");
    assert_int_equal(tsm_text_columns("caf\xc3\xa9"), 4); /* café: 5 bytes, 4 columns */
}

/* An alert of stream id, kind k at sample seq (timestamp T0 + seq s), length len. */
static Tsmine__V1__Alert alert(const char *id, int k, uint64_t seq, uint32_t len) {
    Tsmine__V1__Alert a = TSMINE__V1__ALERT__INIT;
    a.stream_id = (char *)id;
    a.kind = k;
    a.start_seq = seq;
    a.start_timestamp_ns = T0 + (int64_t)seq * S;
    a.length = len;
    a.distance = NAN;
    a.score = NAN;
    a.threshold = 0.997;
    return a;
}

/* The line of a through t. */
static const char *line(tsm_alert_text *t, const Tsmine__V1__Alert *a) {
    static char buf[1024];
    size_t n = tsm_alert_text_line(t, a, buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_int_equal(strlen(buf), n);
    return buf;
}

static void test_lines(void **state) {
    (void)state;
    tsm_alert_text *t = tsm_alert_text_new(0);
    assert_non_null(t);
    Tsmine__V1__Alert a = alert("site/pump-7", TSMINE__V1__ALERT_KIND__ANOMALY, 300, 24);
    a.score = 0.99912, a.distance = 4.123, a.neighbor_seq = 120, a.tail = TSMINE__V1__TAIL__FAR;
    a.event_start_seq = 300, a.event_end_seq = 324;
    assert_string_equal(line(t, &a),
                        "2023-11-14T22:18:20.000Z  site/pump-7  ANOMALY       score 0.9991  "
                        "event opens at #300..#323 (m 24), unlike anything before (nearest "
                        "#120, distance 4.12)");
    /* the END's peak at another sample than the anomaly's: the period (1 s) is known */
    Tsmine__V1__Alert e = alert("site/pump-7", TSMINE__V1__ALERT_KIND__ANOMALY_END, 302, 24);
    e.score = 1, e.distance = 5, e.neighbor_seq = 90, e.tail = TSMINE__V1__TAIL__NEAR;
    e.event_start_seq = 300, e.event_end_seq = 400;
    assert_string_equal(line(t, &e),
                        "2023-11-14T22:18:22.000Z  site/pump-7  ANOMALY_END   score 1.0000  "
                        "event closed: #300..#399, 100 samples, 1 min 40 s; peak at #302 "
                        "(distance 5)");
    /* a longer id widens the column from here on; a NAN score is a blank column */
    Tsmine__V1__Alert m = alert("site/compressor", TSMINE__V1__ALERT_KIND__MOTIF, 10, 24);
    m.neighbor_seq = 500, m.distance = 0.5;
    assert_string_equal(line(t, &m), "2023-11-14T22:13:30.000Z  site/compressor  MOTIF        "
                                     "               motif: #10..#33 and #500..#523 repeat each "
                                     "other (m 24, distance 0.5)");
    /* the stream's second alert, at another sample: its period (1 s) is known */
    Tsmine__V1__Alert g = alert("site/compressor", TSMINE__V1__ALERT_KIND__GAP, 600, 40);
    assert_string_equal(line(t, &g), "2023-11-14T22:23:20.000Z  site/compressor  GAP          "
                                     "               samples #600..#639 never arrived (40 "
                                     "samples, 40 s); the window starts again after them");
    Tsmine__V1__Alert d = alert("site/pump-7", TSMINE__V1__ALERT_KIND__DISCORD, 700, 24);
    d.score = 0.998, d.distance = 3, d.neighbor_seq = 12;
    assert_string_equal(line(t, &d), "2023-11-14T22:25:00.000Z  site/pump-7      DISCORD       "
                                     "score 0.9980  discord #700..#723 (m 24) (nearest #12, "
                                     "distance 3)");
    /* a RESET carries no timestamp: "-" in the time column, and the period stays */
    Tsmine__V1__Alert r = alert("site/pump-7", TSMINE__V1__ALERT_KIND__RESET, 0, 0);
    r.start_timestamp_ns = 0, r.neighbor_seq = 800;
    assert_string_equal(line(t, &r), "-                         site/pump-7      RESET         "
                                     "              the stream starts over at #0 (it had "
                                     "reached #800); its window and alert spans start afresh");
    Tsmine__V1__Alert g2 = alert("site/pump-7", TSMINE__V1__ALERT_KIND__GAP, 5, 3);
    assert_string_equal(line(t, &g2), "2023-11-14T22:13:25.000Z  site/pump-7      GAP          "
                                      "               samples #5..#7 never arrived (3 samples, "
                                      "3 s); the window starts again after them");
    Tsmine__V1__Alert u = alert("site/pump-7", 99, 5, 3);
    assert_non_null(strstr(line(t, &u), "UNKNOWN       "));
    tsm_alert_text_destroy(&t);
    assert_null(t);
    tsm_alert_text_destroy(&t); /* NULL: nothing */
}

static void test_local_lines(void **state) {
    (void)state;
    setenv("TZ", "EST5", 1);
    tzset();
    tsm_alert_text *t = tsm_alert_text_new(1);
    Tsmine__V1__Alert a = alert("s", TSMINE__V1__ALERT_KIND__GAP, 0, 1);
    assert_string_equal(line(t, &a), "2023-11-14T17:13:20.000-05:00  s  GAP                     "
                                     "    samples #0 never arrived (1 sample); the window starts "
                                     "again after them");
    Tsmine__V1__Alert r = alert("s", TSMINE__V1__ALERT_KIND__RESET, 0, 0);
    r.start_timestamp_ns = 0;
    assert_int_equal(strspn(line(t, &r), "- "), 29 + 2); /* as wide as a local time */
    tsm_alert_text_destroy(&t);
}

/* The views: the one behind the score and each view's score that was computed, after
 * the words of every scored kind; nothing for an alert without views (view
 * VIEW_UNSPECIFIED: MOTIF, GAP, RESET, a daemon that predates them), even when its
 * score fields hold numbers. */
static void test_views(void **state) {
    (void)state;
    tsm_alert_text *t = tsm_alert_text_new(0);
    Tsmine__V1__Alert a = alert("s", TSMINE__V1__ALERT_KIND__ANOMALY, 10, 4);
    a.score = 0.99912, a.distance = 2, a.neighbor_seq = 1, a.tail = TSMINE__V1__TAIL__FAR;
    a.event_start_seq = 10, a.event_end_seq = 14;
    a.view = TSMINE__V1__VIEW__MAGNITUDE;
    a.shape_score = 0.41, a.magnitude_score = 0.99912, a.level_score = 0;
    a.magnitude_distance = 7.5, a.magnitude_neighbor_seq = 3, a.level = 0;
    assert_string_equal(line(t, &a), "2023-11-14T22:13:30.000Z  s  ANOMALY       score 0.9991  "
                                     "event opens at #10..#13 (m 4), unlike anything before "
                                     "(nearest #1, distance 2); view magnitude (shape 0.4100, "
                                     "magnitude 0.9991, level 0.0000)");
    /* the event's peak */
    Tsmine__V1__Alert e = a;
    e.kind = TSMINE__V1__ALERT_KIND__ANOMALY_END, e.start_seq = 12;
    e.start_timestamp_ns = T0 + 12 * S, e.event_end_seq = 20;
    e.shape_score = 0.5, e.magnitude_score = 1, e.level_score = 0.25;
    assert_non_null(strstr(line(t, &e), "; peak at #12 (distance 2); view magnitude (shape "
                                        "0.5000, magnitude 1.0000, level 0.2500)"));
    /* a DISCORD: the shape view alone; a score not computed is left out */
    Tsmine__V1__Alert d = alert("s", TSMINE__V1__ALERT_KIND__DISCORD, 30, 4);
    d.score = 0.998, d.distance = 3, d.neighbor_seq = 12, d.view = TSMINE__V1__VIEW__SHAPE;
    d.shape_score = 0.998, d.magnitude_score = NAN, d.level_score = NAN;
    d.magnitude_distance = NAN, d.level = NAN;
    const char *l = line(t, &d);
    assert_non_null(strstr(l, "(nearest #12, distance 3); view shape (shape 0.9980)"));
    assert_int_equal(strlen(strstr(l, "; view")), strlen("; view shape (shape 0.9980)"));
    /* LEFT_DISCORD with a numeric range: the shape view decides, magnitude not yet scored */
    Tsmine__V1__Alert ld = alert("s", TSMINE__V1__ALERT_KIND__LEFT_DISCORD, 40, 4);
    ld.score = 0.9, ld.distance = 5, ld.neighbor_seq = 2, ld.view = TSMINE__V1__VIEW__SHAPE;
    ld.shape_score = 0.9, ld.magnitude_score = NAN, ld.level_score = 0.125;
    assert_non_null(
        strstr(line(t, &ld), "(nearest #2, distance 5); view shape (shape 0.9000, level 0.1250)"));
    /* no score at all: the view alone */
    ld.shape_score = NAN, ld.level_score = NAN, ld.view = TSMINE__V1__VIEW__LEVEL;
    l = line(t, &ld);
    assert_string_equal(strstr(l, "; view"), "; view level");
    /* a view this tsmine does not know (a newer daemon) */
    ld.view = 9, ld.level_score = 0.5;
    assert_non_null(strstr(line(t, &ld), "; view unknown (level 0.5000)"));
    /* no views: nothing, whatever the score fields hold */
    a.view = TSMINE__V1__VIEW__VIEW_UNSPECIFIED;
    assert_null(strstr(line(t, &a), "view"));
    Tsmine__V1__Alert m = alert("s", TSMINE__V1__ALERT_KIND__MOTIF, 50, 4);
    m.shape_score = 0.5, m.magnitude_score = 0.5;
    assert_null(strstr(line(t, &m), "view"));
    tsm_alert_text_destroy(&t);
}

/* Many streams: the table grows, every stream keeps its own period. */
static void test_many_streams(void **state) {
    (void)state;
    tsm_alert_text *t = tsm_alert_text_new(0);
    char id[32], buf[512];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 5000; i++) {
            snprintf(id, sizeof id, "s/%d", i);
            Tsmine__V1__Alert g = alert(id, TSMINE__V1__ALERT_KIND__GAP, 10 + pass * (i + 1), 2);
            g.start_timestamp_ns = T0 + (int64_t)(10 + pass * (i + 1)) * (i + 1) * S;
            tsm_alert_text_line(t, &g, buf, sizeof buf);
            if (pass == 1) { /* period i + 1 s: 2 samples span 2 (i + 1) s */
                char want[64], d[32];
                tsm_duration_text(d, sizeof d, 2.0 * (i + 1));
                snprintf(want, sizeof want, "(2 samples, %s)", d);
                assert_non_null(strstr(buf, want));
            }
        }
    tsm_alert_text_destroy(&t);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_utc),
        cmocka_unit_test(test_time_local),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_term_safe),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_local_lines),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_many_streams),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("alert_text", tests, NULL, NULL);
}
