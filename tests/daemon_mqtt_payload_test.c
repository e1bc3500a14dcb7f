/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_mqtt_payload_test.c - the MQTT payload parsers (daemon/source/mqtt_payload.h): a
 * table of JSON and line-protocol payloads with the batches each must give or the
 * error it must name; format detection; random and mutated bytes never crash. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/source/mqtt_payload.h"

/* What the callback saw, flattened: up to 16 batches. */
typedef struct {
    size_t nb;
    char id[16][300];
    int has_seq[16], has_ts[16];
    uint64_t seq[16];
    size_t n[16];
    double v[16][8];
    int64_t ts[16][8];
} seen;

static void collect(void *user, const tsd_payload_batch *b) {
    seen *s = user;
    if (s->nb == 16)
        return;
    size_t i = s->nb++;
    snprintf(s->id[i], sizeof s->id[i], "%s", b->stream_id ? b->stream_id : "(topic)");
    s->has_seq[i] = b->has_seq, s->seq[i] = b->first_seq, s->n[i] = b->n;
    s->has_ts[i] = b->ts_ns != NULL;
    for (size_t k = 0; k < b->n && k < 8; k++) {
        s->v[i][k] = b->values[k];
        s->ts[i][k] = b->ts_ns ? b->ts_ns[k] : 0;
    }
}

static int parse(tsd_payload_format f, const char *text, seen *s, char *err) {
    memset(s, 0, sizeof *s);
    return f == TSD_PAYLOAD_JSON ? tsd_payload_json(text, strlen(text), collect, s, err, 200)
                                 : tsd_payload_influx(text, strlen(text), collect, s, err, 200);
}

static void test_json_good(void **state) {
    (void)state;
    seen s;
    char err[200];
    assert_int_equal(parse(TSD_PAYLOAD_JSON, "21.5", &s, err), 0);
    assert_int_equal(s.nb, 1);
    assert_string_equal(s.id[0], "(topic)");
    assert_int_equal(s.n[0], 1);
    assert_true(s.v[0][0] == 21.5 && !s.has_seq[0] && !s.has_ts[0]);

    assert_int_equal(
        parse(TSD_PAYLOAD_JSON, "{\"ts\": 1700000000.25, \"value\": -2, \"seq\": 7}", &s, err), 0);
    assert_true(s.v[0][0] == -2 && s.has_seq[0] && s.seq[0] == 7 && s.has_ts[0]);
    assert_true(s.ts[0][0] == 1700000000250000000ll);

    assert_int_equal(parse(TSD_PAYLOAD_JSON,
                           "[{\"value\":1,\"seq\":10},{\"value\":2},{\"value\":3,\"seq\":12}]", &s,
                           err),
                     0);
    assert_int_equal(s.n[0], 3);
    assert_true(s.has_seq[0] && s.seq[0] == 10 && s.v[0][2] == 3);

    assert_int_equal(parse(TSD_PAYLOAD_JSON, " [1, 2.5, 1e3] ", &s, err), 0);
    assert_true(s.n[0] == 3 && s.v[0][2] == 1000 && !s.has_ts[0]);
}

static void test_json_bad(void **state) {
    (void)state;
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"", "payload"},
        {"{\"value\": 1", "payload"},
        {"\"x\"", "a string"},
        {"[]", "empty array"},
        {"{\"ts\": 1}", "\"value\" is missing"},
        {"{\"value\": \"1\"}", "not a number"},
        {"{\"value\": 1, \"unit\": \"C\"}", "unknown member \"unit\""},
        {"{\"value\": 1, \"seq\": -1}", "\"seq\""},
        {"{\"value\": 1, \"seq\": 1.5}", "\"seq\""},
        {"{\"value\": 1, \"ts\": 1e300}", "\"ts\""},
        {"[{\"value\":1,\"ts\":1},{\"value\":2}]", "element 1: \"ts\" on some"},
        {"[{\"value\":1},{\"value\":2,\"ts\":1}]", "element 1: \"ts\" on some"},
        {"[{\"value\":1,\"seq\":5},{\"value\":2,\"seq\":7}]", "element 1: \"seq\" does not follow"},
        {"[{\"value\":1},{\"value\":2,\"seq\":7}]", "element 1: \"seq\""},
        {"[1, null]", "element 1: null"},
        {"[1] 2", "payload"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        seen s;
        char err[200] = "";
        int rc = parse(TSD_PAYLOAD_JSON, cases[i].text, &s, err);
        if (rc != -1 || s.nb != 0 || !strstr(err, cases[i].says))
            fail_msg("case %zu (%s): rc %d, %zu batches, error \"%s\", expected \"%s\"", i,
                     cases[i].text, rc, s.nb, err, cases[i].says);
    }
}

static void test_influx_good(void **state) {
    (void)state;
    seen s;
    char err[200];
    const char *text = "# comment\n"
                       "cpu,cpu=cpu0,host=h\\ 1 usage_idle=97.5,usage_user=2i,mode=\"x\",on=true "
                       "1700000000000000000\r\n"
                       "\n"
                       "  temp value=-1.25e1\n"
                       "mem used=12u 5";
    assert_int_equal(parse(TSD_PAYLOAD_INFLUX, text, &s, err), 0);
    assert_int_equal(s.nb, 4);
    assert_string_equal(s.id[0], "cpu,cpu=cpu0,host=h\\ 1/usage_idle");
    assert_true(s.v[0][0] == 97.5 && s.has_ts[0] && s.ts[0][0] == 1700000000000000000ll);
    assert_string_equal(s.id[1], "cpu,cpu=cpu0,host=h\\ 1/usage_user");
    assert_true(s.v[1][0] == 2 && !s.has_seq[1]);
    assert_string_equal(s.id[2], "temp/value");
    assert_true(s.v[2][0] == -12.5 && !s.has_ts[2]);
    assert_string_equal(s.id[3], "mem/used");
    assert_true(s.v[3][0] == 12 && s.ts[3][0] == 5);
    /* a quoted string may hold spaces, commas and equals signs */
    assert_int_equal(parse(TSD_PAYLOAD_INFLUX, "m note=\"a b,c=d\",x=1 9", &s, err), 0);
    assert_true(s.nb == 1 && s.v[0][0] == 1 && s.ts[0][0] == 9);
}

static void test_influx_bad(void **state) {
    (void)state;
    static const struct {
        const char *text, *says;
        size_t before; /* batches handed over before the bad line */
    } cases[] = {
        {"cpu", "line 1: no fields", 0},
        {"cpu x", "line 1: bad field \"x\"", 0},
        {"cpu x=", "bad field", 0},
        {"cpu =1", "bad field", 0},
        {"cpu x=abc", "bad field", 0},
        {"cpu x=1 12abc", "bad timestamp", 0},
        {"cpu x=1 99999999999999999999", "bad timestamp", 0},
        {"cpu x=1\ncpu y=\"open", "line 2: bad field", 1},
        {"cpu x=1e999", "bad field", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        seen s;
        char err[200] = "";
        int rc = parse(TSD_PAYLOAD_INFLUX, cases[i].text, &s, err);
        if (rc != -1 || s.nb != cases[i].before || !strstr(err, cases[i].says))
            fail_msg("case %zu (%s): rc %d, %zu batches, error \"%s\", expected \"%s\"", i,
                     cases[i].text, rc, s.nb, err, cases[i].says);
    }
    /* an id over TSS_MAX_ID bytes */
    char longline[600];
    memset(longline, 'a', 400);
    snprintf(longline + 400, 200, " x=1");
    seen s;
    char err[200];
    assert_int_equal(parse(TSD_PAYLOAD_INFLUX, longline, &s, err), -1);
    assert_non_null(strstr(err, "longer than"));
}

static void test_detect(void **state) {
    (void)state;
    assert_int_equal(tsd_payload_detect("12.5", 4), TSD_PAYLOAD_JSON);
    assert_int_equal(tsd_payload_detect(" [1]", 4), TSD_PAYLOAD_JSON);
    assert_int_equal(tsd_payload_detect("{\"value\":1}", 11), TSD_PAYLOAD_JSON);
    assert_int_equal(tsd_payload_detect("cpu x=1\n", 8), TSD_PAYLOAD_INFLUX);
    const unsigned char pb[] = {0x12, 0x02, 's', '1', 0x3a, 0x08, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    assert_int_equal(tsd_payload_detect(pb, sizeof pb), TSD_PAYLOAD_PROTOBUF);
    assert_int_equal(tsd_payload_format_parse("influx"), TSD_PAYLOAD_INFLUX);
    assert_int_equal(tsd_payload_format_parse("xml"), -1);
}

/* Random bytes and mutations of good payloads: any outcome but a crash. */
static void test_random(void **state) {
    (void)state;
    static const char *const seeds[] = {"[{\"value\":1,\"seq\":10,\"ts\":5},{\"value\":2}]",
                                        "cpu,host=a x=1,y=2i,s=\"q\" 17\nmem u=3u"};
    uint64_t r = tu_case_seed(20);
    char buf[128];
    for (int it = 0; it < 20000; it++) {
        const char *base = seeds[it % 2];
        size_t n = strlen(base);
        memcpy(buf, base, n);
        for (int k = 0; k < 1 + it % 4; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            buf[(r >> 33) % n] = (char)(r >> 17);
        }
        if (it % 7 == 0)
            n = (r >> 40) % n;
        seen s;
        char err[200];
        memset(&s, 0, sizeof s);
        tsd_payload_json(buf, n, collect, &s, err, sizeof err);
        tsd_payload_influx(buf, n, collect, &s, err, sizeof err);
        (void)tsd_payload_detect(buf, n);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_good),   cmocka_unit_test(test_json_bad),
        cmocka_unit_test(test_influx_good), cmocka_unit_test(test_influx_bad),
        cmocka_unit_test(test_detect),      cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
