/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_control_test.c - the control handler (daemon/ops/control.h) on a daemon with a
 * real CPU engine and no sockets: every request, malformed or not, gets one reply
 * that decodes, with ok and error set as documented. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/ops/control.h"

static tsd_daemon d;

/* The daemon's own resolution: the configuration's parameters for the id. */
static int params_for(void *user, const char *id, tss_params *out) {
    *out = tsc_stream_params_for(&((tsd_daemon *)user)->cfg, id);
    return 0;
}

static int setup(void **state) {
    (void)state;
    memset(&d, 0, sizeof d);
    tsc_defaults(&d.cfg);
    d.cfg.stream_default.window = 64;
    d.cfg.stream_default.subsequence = 8;
    d.cfg.stream_default.hop = 16;
    d.cfg.stream_default.warmup = 32; /* the default (300) does not fit a window of 64 */
    tsd_ingest_init(&d.ingest, d.cfg.max_message_size, 5);
    tsd_ratelimit_init(&d.control_limit, 5);
    tss_engine_options opt = {
        .backend = TSM_BACKEND_CPU, .max_streams = 10, .params_for = params_for, .user = &d};
    char err[256];
    return tss_engine_new(&opt, &d.engine, err, sizeof err);
}

static int teardown(void **state) {
    (void)state;
    tss_engine_destroy(&d.engine);
    return 0;
}

/* Sends raw request bytes; returns the decoded reply (free with ..._free_unpacked). */
static Tsmine__V1__ControlReply *ask_raw(const void *req, size_t len) {
    uint8_t *out = NULL;
    size_t outlen = 0;
    assert_int_equal(tsd_control_handle(&d, req, len, &out, &outlen), 0);
    Tsmine__V1__ControlReply *r = tsmine__v1__control_reply__unpack(NULL, outlen, out);
    free(out);
    assert_non_null(r);
    assert_int_equal(r->schema_version, 1);
    return r;
}

static Tsmine__V1__ControlReply *ask(int command, const char *id, uint32_t schema) {
    Tsmine__V1__ControlRequest q = TSMINE__V1__CONTROL_REQUEST__INIT;
    q.command = (Tsmine__V1__ControlRequest__Command)command;
    q.stream_id = (char *)id;
    q.schema_version = schema;
    uint8_t buf[512];
    size_t len = tsmine__v1__control_request__pack(&q, buf);
    return ask_raw(buf, len);
}

static uint64_t counter(Tsmine__V1__Counter **c, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i]->name, name) == 0)
            return c[i]->value;
    fail_msg("no counter %s", name);
    return 0;
}

static void feed(const char *id, uint64_t first_seq, size_t n) {
    double v[64];
    for (size_t k = 0; k < n; k++)
        v[k] = sin((double)(first_seq + k));
    assert_int_equal(tss_engine_ingest(d.engine, id, first_seq, NULL, (int64_t)first_seq, 1, v, n),
                     TSS_OK);
    d.ingest.count.samples += n;
}

static void test_malformed_requests(void **state) {
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
        const char *error; /* a substring of the reply's error */
    } cases[] = {
        {"\x12\xff\xff\xff\xff\x0f", 6, "malformed"},
        {"\x08", 1, "malformed"},
        {"garbage that is not protobuf at all", 35, "malformed"},
        {"", 0, "unknown command 0"},
        {"\x10\x63", 2, "unknown command 99"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Tsmine__V1__ControlReply *r = ask_raw(cases[i].bytes, cases[i].len);
        assert_false(r->ok);
        if (!strstr(r->error, cases[i].error))
            fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, r->error, cases[i].error);
        tsmine__v1__control_reply__free_unpacked(r, NULL);
    }
    Tsmine__V1__ControlReply *r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS, "", 2);
    assert_false(r->ok);
    assert_non_null(strstr(r->error, "schema_version"));
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    assert_int_equal(d.control_errors, 6);
}

static void test_status_and_stream(void **state) {
    (void)state;
    feed("a", 0, 20);
    feed("b", 5, 10);
    d.ingest.count.rejected[TSD_REASON_DECODE] = 4;
    Tsmine__V1__ControlReply *r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS, "", 1);
    assert_true(r->ok);
    assert_string_equal(r->backend, "cpu");
    assert_int_equal(r->n_streams, 2);
    assert_string_equal(r->streams[0]->stream_id, "a");
    assert_int_equal(r->streams[0]->samples, 20);
    assert_int_equal(r->streams[0]->next_seq, 20);
    assert_int_equal(r->streams[1]->next_seq, 15);
    assert_int_equal(r->streams[1]->window, 64);
    assert_int_equal(counter(r->rejected, r->n_rejected, "decode"), 4);
    assert_int_equal(counter(r->rejected, r->n_rejected, "duplicate"), 0);
    assert_int_equal(r->n_rejected, tsd_reason_count() - 1);
    assert_int_equal(counter(r->alerts_by_kind, r->n_alerts_by_kind, "LEFT_DISCORD"), 0);
    assert_int_equal(counter(r->alerts_by_kind, r->n_alerts_by_kind, "ANOMALY"), 0);
    assert_int_equal(counter(r->alerts_by_kind, r->n_alerts_by_kind, "ANOMALY_END"), 0);
    assert_int_equal(r->n_alerts_by_kind, TSS_ALERT_KINDS - 1);
    assert_int_equal(counter(r->counters, r->n_counters, "samples"), 30);
    assert_int_equal(counter(r->counters, r->n_counters, "streams"), 2);
    tsmine__v1__control_reply__free_unpacked(r, NULL);

    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM, "b", 1);
    assert_true(r->ok);
    assert_int_equal(r->n_streams, 1);
    assert_string_equal(r->streams[0]->stream_id, "b");
    const Tsmine__V1__StreamState *b = r->streams[0];
    assert_true(isnan(b->range)); /* scores decide, not calibrated yet */
    assert_false(b->calibrated);
    assert_int_equal(b->subsequence, 8);
    assert_false(b->subsequence_auto);
    assert_int_equal(b->period, 0);
    assert_int_equal(b->warmup, 32);
    assert_true(b->threshold == d.cfg.stream_default.threshold);
    assert_false(b->event_open);
    assert_int_equal(b->events, 0);
    assert_true(isnan(b->last_score)); /* nothing scored yet */
    tsmine__v1__control_reply__free_unpacked(r, NULL);

    /* a: past its warm-up with a magnitude history of 250 (TSS_ROBUST_MIN) and more */
    for (uint64_t seq = 20; seq < 320; seq += 60)
        feed("a", seq, 60);
    char err[256];
    assert_int_equal(tss_engine_tick(d.engine, err, sizeof err), 0);
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM, "a", 1);
    assert_true(r->ok);
    assert_true(r->streams[0]->calibrated);
    /* the distance that would score the threshold: none on a clean sine (INFINITY) */
    assert_true(r->streams[0]->range > 0 && !isnan(r->streams[0]->range));
    assert_true(r->streams[0]->last_score >= 0 && r->streams[0]->last_score <= 1);
    tsmine__v1__control_reply__free_unpacked(r, NULL);

    /* subsequence = auto: 0 in force while the warm-up history is not in */
    d.cfg.stream_default.subsequence = 0;
    feed("c", 0, 10);
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM, "c", 1);
    assert_true(r->ok);
    assert_int_equal(r->streams[0]->subsequence, 0);
    assert_true(r->streams[0]->subsequence_auto);
    tsmine__v1__control_reply__free_unpacked(r, NULL);

    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STREAM, "nope", 1);
    assert_false(r->ok);
    assert_non_null(strstr(r->error, "unknown stream"));
    tsmine__v1__control_reply__free_unpacked(r, NULL);
}

/* processed_samples and pending_samples follow the ticks; the ns_<phase> counters
 * split ns_busy: receive is the drain time less decode and stage, other the rest
 * (never negative). */
static void test_status_accounting(void **state) {
    (void)state;
    feed("a", 0, 20);
    feed("b", 5, 10);
    Tsmine__V1__ControlReply *r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS, "", 1);
    assert_int_equal(counter(r->counters, r->n_counters, "processed_samples"), 0);
    assert_int_equal(counter(r->counters, r->n_counters, "pending_samples"), 30);
    assert_int_equal(counter(r->counters, r->n_counters, "ticks"), 0);
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    char err[256];
    assert_int_equal(tss_engine_tick(d.engine, err, sizeof err), 0);
    d.ns_busy = 10000000000ull;
    d.ns_drain = 900;
    d.ingest.count.ns_decode = 300;
    d.ingest.count.ns_stage = 200;
    d.alerts.ns_publish = 50;
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS, "", 1);
    assert_int_equal(counter(r->counters, r->n_counters, "processed_samples"), 30);
    assert_int_equal(counter(r->counters, r->n_counters, "pending_samples"), 0);
    assert_int_equal(counter(r->counters, r->n_counters, "ticks"), 1);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_busy"), 10000000000ull);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_receive"), 400);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_decode"), 300);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_stage"), 200);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_publish"), 50);
    uint64_t sum = 0;
    for (int p = 0; p < TSD_PHASES; p++) {
        char name[32];
        snprintf(name, sizeof name, "ns_%s", tsd_phase_name(p));
        sum += counter(r->counters, r->n_counters, name);
    }
    assert_int_equal(sum, 10000000000ull); /* ns_other takes the rest */
    assert_true(counter(r->counters, r->n_counters, "ns_online") > 0);
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    d.ns_busy = 10; /* less than the phases measured: other is 0, not negative */
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__STATUS, "", 1);
    assert_int_equal(counter(r->counters, r->n_counters, "ns_other"), 0);
    tsmine__v1__control_reply__free_unpacked(r, NULL);
}

static void test_recalibrate_and_reload(void **state) {
    (void)state;
    Tsmine__V1__ControlReply *r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__RECALIBRATE, "", 1);
    assert_true(r->ok);
    assert_non_null(strstr(r->message, "recalibrate"));
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    /* Without -c there is nothing to re-read: ok, and it says so. */
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__RELOAD, "", 1);
    assert_true(r->ok);
    assert_non_null(strstr(r->message, "nothing to reload"));
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    /* An unreadable file: refused, the running configuration stays. */
    snprintf(d.config_path, sizeof d.config_path, "/nonexistent/tsmined.conf");
    uint32_t window = d.cfg.stream_default.window;
    r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__RELOAD, "", 1);
    assert_false(r->ok);
    assert_non_null(strstr(r->error, "keeping the running configuration"));
    assert_int_equal(d.cfg.stream_default.window, window);
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    d.config_path[0] = '\0';
}

/* A reload from a file: a live key (streams.default.range) applies, a restart-only
 * key (alerts.endpoint) is reported and not swapped in. */
static void test_reload_file(void **state) {
    (void)state;
    char path[] = "/tmp/tsmined-reload-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "alerts = { endpoint = \"tcp://127.0.0.1:6000\"; };\n"
                       "streams = { default = { window = 64; subsequence = 8; hop = 16;"
                       " warmup = 32; range = 2.5; }; };\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(d.config_path, sizeof d.config_path, "%s", path);
    char before[256];
    snprintf(before, sizeof before, "%s", d.cfg.alerts_endpoint);
    Tsmine__V1__ControlReply *r = ask(TSMINE__V1__CONTROL_REQUEST__COMMAND__RELOAD, "", 1);
    assert_true(r->ok);
    assert_non_null(strstr(r->message, "restart"));
    assert_non_null(strstr(r->message, "alerts.endpoint"));
    tsmine__v1__control_reply__free_unpacked(r, NULL);
    assert_true(d.cfg.stream_default.range == 2.5);
    assert_string_equal(d.cfg.alerts_endpoint, before);
    unlink(path);
    d.config_path[0] = '\0';
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_malformed_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_and_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_accounting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recalibrate_and_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_file, setup, teardown),
    };
    return cmocka_run_group_tests_name("daemon_control", tests, NULL, NULL);
}
