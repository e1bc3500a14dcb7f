/* SPDX-License-Identifier: Apache-2.0 */
/* stream_fault_test.c - the test-only hook TSMINE_TEST_FAULT (stream/engine.h).
 *
 * device_lost:N: the first N ticks with work succeed (a tick with nothing staged does
 * not count), the next one fails with the injected message, tss_engine_device_lost
 * latches and every later tick fails at once; the host state is intact: the
 * checkpoint taken after the loss holds every sample ingested (staged ones too), and
 * loads into an engine without the hook that holds the same windows as one that never
 * failed and runs on. Malformed values make tss_engine_new fail with a message; unset
 * or empty, the hook is inert. */
#include "engine_checkpoint.h"
#include "stream_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 50

static tss_params params(void) {
    tss_params p = tss_params_default();
    p.window = 128, p.subsequence = 12, p.hop = 32, p.range = 3.0, p.warmup = 64;
    p.left_discord = 1;
    return p;
}

/* Ingests samples [from, from + n) of the test series into stream "f". */
static void feed(tss_engine *e, uint64_t from, size_t n) {
    double v[CHUNK * 4];
    assert_true(n <= sizeof v / sizeof *v);
    for (size_t k = 0; k < n; k++)
        v[k] = (double)((from + k) * 7919 % 101) / 10.0;
    assert_int_equal(
        tss_engine_ingest(e, "f", from, NULL, (int64_t)from * ST_PERIOD, ST_PERIOD, v, n), TSS_OK);
}

static tss_engine *engine_with(st_env *env, const char *fault) {
    if (fault)
        assert_int_equal(setenv("TSMINE_TEST_FAULT", fault, 1), 0);
    else
        assert_int_equal(unsetenv("TSMINE_TEST_FAULT"), 0);
    tss_engine *e = st_engine(env, 2, 0);
    assert_int_equal(unsetenv("TSMINE_TEST_FAULT"), 0);
    return e;
}

/* Saves a into memory and loads it into a fresh engine without the hook. */
static tss_engine *reload(st_env *env, tss_engine *a) {
    char *buf = NULL, err[256] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (tss_engine_save(a, f, err, sizeof err) != 0)
        fail_msg("save after the device loss: %s", err);
    assert_int_equal(fclose(f), 0);
    tss_engine *b = engine_with(env, NULL);
    f = fmemopen(buf, len, "rb");
    assert_non_null(f);
    if (tss_engine_load(b, f, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    fclose(f);
    free(buf);
    return b;
}

static void assert_same_stream(tss_engine *a, tss_engine *b) {
    tss_stream_info x, y;
    assert_int_equal(tss_engine_stream_find(a, "f", &x), 0);
    assert_int_equal(tss_engine_stream_find(b, "f", &y), 0);
    assert_int_equal(x.samples, y.samples);
    assert_int_equal(x.next_seq, y.next_seq);
    assert_int_equal(x.window_fill, y.window_fill);
}

static void test_device_lost_after_n(void **state) {
    (void)state;
    st_env env = {0};
    st_env_add(&env, "f", params());
    tss_engine *e = engine_with(&env, "device_lost:3");
    tss_engine *ref = engine_with(&env, "");
    char err[512] = "";
    uint64_t at = 0;
    for (int t = 0; t < 3; t++) { /* three ticks with work, one without: all succeed */
        feed(e, at, CHUNK), feed(ref, at, CHUNK);
        at += CHUNK;
        assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
        assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
        assert_int_equal(tss_engine_tick(ref, err, sizeof err), 0);
        assert_false(tss_engine_device_lost(e));
    }
    feed(e, at, CHUNK), feed(ref, at, CHUNK);
    at += CHUNK;
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    assert_non_null(strstr(err, "test fault injected after 3 ticks"));
    assert_true(tss_engine_device_lost(e));
    assert_int_equal(tss_engine_tick(ref, err, sizeof err), 0);
    /* sticky: later ticks fail at once, with or without work; ingest still stages */
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    assert_non_null(strstr(err, "device lost earlier"));
    feed(e, at, CHUNK), feed(ref, at, CHUNK);
    at += CHUNK;
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    size_t left = tss_engine_pending(e); /* and what the failed round did not take */
    assert_true(left >= CHUNK);
    assert_true(tss_engine_device_lost(e));
    /* the checkpoint after the loss: every sample, the staged ones processed on load's
     * first tick; then the same windows as the engine that never failed */
    tss_engine *b = reload(&env, e);
    assert_false(tss_engine_device_lost(b));
    assert_int_equal(tss_engine_pending(b), left);
    assert_int_equal(tss_engine_tick(b, err, sizeof err), 0);
    assert_same_stream(b, ref);
    for (int t = 0; t < 4; t++) { /* and it runs on: the hook is not inherited */
        feed(b, at, CHUNK), feed(ref, at, CHUNK);
        at += CHUNK;
        assert_int_equal(tss_engine_tick(b, err, sizeof err), 0);
        assert_int_equal(tss_engine_tick(ref, err, sizeof err), 0);
    }
    assert_same_stream(b, ref);
    tss_engine_destroy(&b);
    tss_engine_destroy(&ref);
    tss_engine_destroy(&e);
    st_env_free(&env);
}

static void test_device_lost_at_first(void **state) {
    (void)state;
    st_env env = {0};
    st_env_add(&env, "f", params());
    tss_engine *e = engine_with(&env, "device_lost:0");
    char err[512] = "";
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0); /* nothing staged */
    feed(e, 0, 10);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    assert_true(tss_engine_device_lost(e));
    tss_engine_destroy(&e);
    st_env_free(&env);
}

static void test_malformed_values(void **state) {
    (void)state;
    static const char *const bad[] = {
        "device_lost",    "device_lost:",   "device_lost:x", "device_lost:-1",
        "device_lost:1x", "device_lost: 1", "lost:1",        "device_lost:99999999999999999999"};
    tss_engine_options opt = {.backend = st_backend(), .threads = 1};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        assert_int_equal(setenv("TSMINE_TEST_FAULT", bad[k], 1), 0);
        tss_engine *e = NULL;
        char err[256] = "";
        assert_int_equal(tss_engine_new(&opt, &e, err, sizeof err), -1);
        assert_null(e);
        assert_non_null(strstr(err, "expected device_lost:N"));
    }
    assert_int_equal(unsetenv("TSMINE_TEST_FAULT"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_lost_after_n),
        cmocka_unit_test(test_device_lost_at_first),
        cmocka_unit_test(test_malformed_values),
    };
    return TU_RUN_GROUP("stream_fault", tests, NULL, NULL);
}
