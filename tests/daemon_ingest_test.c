/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_ingest_test.c - tsmined's ingest stages (daemon/source/decode.h): a table of
 * malformed messages, each mapped to its rejection reason by decode -> validate;
 * the decode budget; random and mutated bytes never crash and never leak the
 * budget; the apply stage and the per-reason counters against a real CPU engine. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/source/decode.h"

#define MAX_MSG 65536

/* A valid batch: stream "s1", 4 values, period timestamps. Fields are overwritten by
 * the cases; values and timestamps point at the case's arrays. */
typedef struct {
    Tsmine__V1__SampleBatch b;
    double values[8];
    int64_t ts[8];
    char id[400];
} batch;

static void batch_init(batch *x) {
    Tsmine__V1__SampleBatch init = TSMINE__V1__SAMPLE_BATCH__INIT;
    x->b = init;
    snprintf(x->id, sizeof x->id, "s1");
    x->b.stream_id = x->id;
    x->b.first_seq = 10;
    x->b.first_timestamp_ns = 1000;
    x->b.period_ns = 10;
    for (int k = 0; k < 4; k++) {
        x->values[k] = k * 0.5;
        x->ts[k] = 1000 + 10 * k;
    }
    x->b.values = x->values;
    x->b.n_values = 4;
}

/* Packs, decodes and validates; returns the reason (TSS_OK when accepted). */
static int run_stages(const Tsmine__V1__SampleBatch *b) {
    uint8_t buf[4096];
    size_t len = tsmine__v1__sample_batch__get_packed_size(b);
    assert_true(len <= sizeof buf);
    tsmine__v1__sample_batch__pack(b, buf);
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MSG);
    Tsmine__V1__SampleBatch *got;
    int r = tsd_decode(&d, buf, len, &got);
    if (r == TSS_OK)
        r = tsd_validate(got);
    tsd_decoded_free(&d, &got);
    assert_int_equal(d.used, 0);
    return r;
}

typedef void (*mutate_fn)(batch *x);
static void m_none(batch *x) {
    (void)x;
}
static void m_schema0(batch *x) {
    x->b.schema_version = 0;
}
static void m_schema2(batch *x) {
    x->b.schema_version = 2;
}
static void m_id_empty(batch *x) {
    x->id[0] = '\0';
}
static void m_id_300(batch *x) {
    memset(x->id, 'a', 300);
    x->id[300] = '\0';
}
static void m_id_255(batch *x) {
    memset(x->id, 'a', 255);
    x->id[255] = '\0';
}
static void m_id_256(batch *x) {
    memset(x->id, 'a', 256);
    x->id[256] = '\0';
}
static void m_id_ctrl(batch *x) {
    snprintf(x->id, sizeof x->id, "a\tb");
}
static void m_no_values(batch *x) {
    x->b.n_values = 0;
}
static void m_nan(batch *x) {
    x->values[2] = NAN;
}
static void m_inf(batch *x) {
    x->values[0] = INFINITY;
}
static void m_minus_inf(batch *x) {
    x->values[3] = -INFINITY;
}
static void m_ts_ok(batch *x) {
    x->b.timestamps_ns = x->ts;
    x->b.n_timestamps_ns = 4;
}
static void m_ts_count(batch *x) {
    x->b.timestamps_ns = x->ts;
    x->b.n_timestamps_ns = 3;
}
static void m_ts_backwards(batch *x) {
    m_ts_ok(x);
    x->ts[2] = x->ts[1] - 1;
}
static void m_period_negative(batch *x) {
    x->b.period_ns = -1;
}
static void m_period_overflow(batch *x) {
    x->b.first_timestamp_ns = INT64_MAX - 5;
    x->b.period_ns = 10;
}
static void m_seq_wraps(batch *x) {
    x->b.first_seq = UINT64_MAX - 2;
}
static void m_seq_last(batch *x) {
    x->b.first_seq = UINT64_MAX - 4;
}

static void test_validate_table(void **state) {
    (void)state;
    static const struct {
        const char *name;
        mutate_fn mutate;
        const char *reason; /* NULL: accepted */
    } cases[] = {
        {"valid", m_none, NULL},
        {"schema_version 0 reads as 1", m_schema0, NULL},
        {"schema_version 2", m_schema2, "schema_version"},
        {"empty id", m_id_empty, "bad_id"},
        {"300-byte id", m_id_300, "bad_id"},
        {"255-byte id", m_id_255, NULL},
        {"256-byte id", m_id_256, "bad_id"},
        {"control character in id", m_id_ctrl, "bad_id"},
        {"no values", m_no_values, "empty"},
        {"NaN value", m_nan, "nonfinite"},
        {"+Inf value", m_inf, "nonfinite"},
        {"-Inf value", m_minus_inf, "nonfinite"},
        {"one timestamp per value", m_ts_ok, NULL},
        {"timestamps count mismatch", m_ts_count, "timestamps"},
        {"timestamps going backwards", m_ts_backwards, "time_backwards"},
        {"negative period", m_period_negative, "timestamps"},
        {"last timestamp overflows", m_period_overflow, "timestamps"},
        {"sequence numbers wrap", m_seq_wraps, "bad_seq"},
        {"last sequence number is UINT64_MAX - 1", m_seq_last, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        batch x;
        batch_init(&x);
        cases[i].mutate(&x);
        int r = run_stages(&x.b);
        const char *want = cases[i].reason ? cases[i].reason : "ok";
        const char *got = r == TSS_OK ? "ok" : tsd_reason_name(r);
        if (strcmp(want, got) != 0)
            fail_msg("case \"%s\": want %s, got %s", cases[i].name, want, got);
    }
}

/* Hand-made wire bytes that protobuf-c must refuse (or that are refused before it). */
static void test_decode_table(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
    } cases[] = {
        {"truncated varint (first_seq)", "\x18\xff", 2},
        {"truncated varint, 11 bytes", "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11},
        {"length prefix 2^32-1 (stream_id)", "\x12\xff\xff\xff\xff\x0f", 6},
        {"length prefix beyond the message",
         "\x12\x05"
         "ab",
         4},
        {"stream_id as a varint", "\x10\x01", 2},
        {"values as a varint", "\x38\x01", 2},
        {"values as fixed32", "\x3d\x00\x00\x00\x00", 5},
        {"packed values with a partial double", "\x3a\x04\x00\x00\x00\x00", 6},
        {"field number 0", "\x00\x01", 2},
        {"wire type 7", "\x0f", 1},
        {"end group without a start", "\x0c", 1},
        {"first_seq as length-delimited", "\x1a\x01\x01", 3},
        {"schema_version as fixed64", "\x09\x01\x00\x00\x00\x00\x00\x00\x00", 9},
        {"field number 0 in a 2-byte key", "\x80\x00\x01", 3},
        {"field number 2^32 - 1", "\xf8\xff\xff\xff\xff\x0f\x01", 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsd_decoder d;
        tsd_decoder_init(&d, MAX_MSG);
        Tsmine__V1__SampleBatch *b;
        int r = tsd_decode(&d, cases[i].bytes, cases[i].len, &b);
        if (r != TSD_REASON_DECODE)
            fail_msg("case \"%s\": want decode, got %s", cases[i].name,
                     r == TSS_OK ? "ok" : tsd_reason_name(r));
        assert_null(b);
        assert_int_equal(d.used, 0);
    }
}

/* A NUL inside the stream id: protobuf-c hands the id over as a C string, which would
 * name the shorter id "s1"; decode refuses it as bad_id. The same id without the NUL
 * (and an id made of the last occurrence of field 2) passes. */
static void test_id_with_nul(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
        int want;
    } cases[] = {
        {"NUL inside", "\x12\x05s1\0xy\x39\0\0\0\0\0\0\xf0\x3f", 16, TSS_REJECT_BAD_ID},
        {"NUL at the end", "\x12\x03s1\0\x39\0\0\0\0\0\0\xf0\x3f", 14, TSS_REJECT_BAD_ID},
        {"no NUL", "\x12\x02s1\x39\0\0\0\0\0\0\xf0\x3f", 13, TSS_OK},
        {"NUL in an id that a later one replaces",
         "\x12\x03"
         "a\0b\x12\x02s1\x39\0\0\0\0\0\0\xf0\x3f",
         18, TSS_OK},
        {"NUL in the id that replaces a clean one",
         "\x12\x02s1\x12\x03"
         "a\0b\x39\0\0\0\0\0\0\xf0\x3f",
         18, TSS_REJECT_BAD_ID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsd_decoder d;
        tsd_decoder_init(&d, MAX_MSG);
        Tsmine__V1__SampleBatch *b;
        int r = tsd_decode(&d, cases[i].bytes, cases[i].len, &b);
        if (r != cases[i].want)
            fail_msg("case \"%s\": want %s, got %s", cases[i].name,
                     cases[i].want ? tsd_reason_name(cases[i].want) : "ok",
                     r ? tsd_reason_name(r) : "ok");
        if (r == TSS_OK)
            assert_string_equal(b->stream_id, "s1");
        tsd_decoded_free(&d, &b);
        assert_int_equal(d.used, 0);
    }
}

/* A huge stream id (60,000 bytes, under the message limit) is bad_id, not a crash or a
 * truncation. */
static void test_huge_id(void **state) {
    (void)state;
    enum { N = 60000 };
    char *id = malloc(N + 1);
    uint8_t *buf = malloc(N + 64);
    assert_non_null(id);
    assert_non_null(buf);
    memset(id, 'h', N);
    id[N] = '\0';
    batch x;
    batch_init(&x);
    x.b.stream_id = id;
    size_t len = tsmine__v1__sample_batch__pack(&x.b, buf);
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MSG);
    Tsmine__V1__SampleBatch *b;
    assert_int_equal(tsd_decode(&d, buf, len, &b), TSS_OK);
    assert_int_equal(strlen(b->stream_id), N);
    assert_int_equal(tsd_validate(b), TSS_REJECT_BAD_ID);
    tsd_decoded_free(&d, &b);
    free(buf);
    free(id);
}

/* Longer than the limit: refused before protobuf-c sees it. */
static void test_oversized(void **state) {
    (void)state;
    size_t len = MAX_MSG + 1;
    uint8_t *buf = calloc(len, 1);
    assert_non_null(buf);
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MSG);
    Tsmine__V1__SampleBatch *b;
    assert_int_equal(tsd_decode(&d, buf, len, &b), TSD_REASON_OVERSIZED);
    assert_null(b);
    free(buf);
}

/* 1-byte packed varints widen to 8 bytes each: with the budget below what that
 * needs, decode fails cleanly instead of allocating; with the real budget it passes. */
static void test_decode_budget(void **state) {
    (void)state;
    enum { N = 4000 };
    uint8_t buf[N + 16];
    size_t len = 0;
    buf[len++] = 0x22; /* field 4 (timestamps_ns), length-delimited */
    buf[len++] = (uint8_t)(0x80 | (N & 0x7f));
    buf[len++] = (uint8_t)(N >> 7);
    memset(buf + len, 0x01, N);
    len += N;
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MSG);
    Tsmine__V1__SampleBatch *b;
    assert_int_equal(tsd_decode(&d, buf, len, &b), TSS_OK);
    assert_int_equal(b->n_timestamps_ns, N);
    assert_true(d.used >= N * sizeof(int64_t));
    tsd_decoded_free(&d, &b);
    assert_int_equal(d.used, 0);
    d.budget = N * sizeof(int64_t) / 2;
    assert_int_equal(tsd_decode(&d, buf, len, &b), TSD_REASON_DECODE);
    assert_null(b);
    assert_int_equal(d.used, 0);
}

/* Random bytes and byte flips of a valid message: every outcome is a reason or a
 * valid batch, nothing crashes (ASan in CI) and the budget always comes back. */
static void test_random_bytes(void **state) {
    (void)state;
    tu_seed = tu_case_seed(20240501);
    tu_rng_init(tu_seed);
    batch x;
    batch_init(&x);
    m_ts_ok(&x);
    uint8_t valid[512], buf[512];
    size_t vlen = tsmine__v1__sample_batch__pack(&x.b, valid);
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MSG);
    size_t accepted = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        if (iter % 2) {
            len = (size_t)(tu_uniform() * 64);
            for (size_t k = 0; k < len; k++)
                buf[k] = (uint8_t)(tu_uniform() * 256);
        } else {
            len = vlen;
            memcpy(buf, valid, len);
            int flips = 1 + (int)(tu_uniform() * 3);
            for (int f = 0; f < flips; f++)
                buf[(size_t)(tu_uniform() * (double)len)] ^=
                    (uint8_t)(1u << (int)(tu_uniform() * 8));
            if (tu_uniform() < 0.2)
                len = (size_t)(tu_uniform() * (double)len); /* truncated */
        }
        Tsmine__V1__SampleBatch *b;
        int r = tsd_decode(&d, buf, len, &b);
        if (r == TSS_OK) {
            r = tsd_validate(b);
            accepted += r == TSS_OK;
        }
        assert_true(r >= 0 && r < TSD_REASON_COUNT);
        tsd_decoded_free(&d, &b);
        if (d.used != 0)
            fail_msg("seed %llu iteration %d: %zu bytes of budget not returned",
                     (unsigned long long)tu_seed, iter, d.used);
    }
    /* Some flips (in values, seq) leave a valid batch: the test did reach validate. */
    assert_true(accepted > 0);
}

/* Every reason in use (the sources' included) has a distinct snake_case name; the
 * engine's are tss_reject_name's. */
static void test_reason_names(void **state) {
    (void)state;
    for (int r = 1; r < tsd_reason_count(); r++) {
        const char *n = tsd_reason_name(r);
        assert_true(strlen(n) > 0);
        for (const char *p = n; *p; p++)
            assert_true((*p >= 'a' && *p <= 'z') || *p == '_');
        for (int q = 1; q < r; q++)
            assert_string_not_equal(n, tsd_reason_name(q));
        if (r < TSS_REJECT_COUNT)
            assert_string_equal(n, tss_reject_name((tss_reject)r));
    }
    assert_string_equal(tsd_reason_name(TSD_REASON_DECODE), "decode");
    assert_string_equal(tsd_reason_name(TSS_REJECT_DUPLICATE), "duplicate");
}

static int params_default(void *user, const char *id, tss_params *out) {
    (void)user, (void)id;
    *out = tss_params_default();
    out->window = 64;
    out->subsequence = 8;
    out->hop = 16;
    out->warmup = 32; /* the default (300) does not fit a window of 64 */
    return 0;
}

/* A CPU engine accepting max_streams streams with the default parameters; fails the
 * test when it cannot be made. */
static tss_engine *cpu_engine(uint32_t max_streams) {
    tss_engine_options opt = {
        .backend = TSM_BACKEND_CPU, .max_streams = max_streams, .params_for = params_default};
    tss_engine *e = NULL;
    char err[256];
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0)
        fail_msg("tss_engine_new: %s", err);
    return e;
}

/* The whole pipeline with a real engine: accepted, duplicate, and counters. */
static void test_pipeline_counters(void **state) {
    (void)state;
    tss_engine *e = cpu_engine(2);
    tsd_ingest in;
    tsd_ingest_init(&in, MAX_MSG, 1);
    batch x;
    batch_init(&x);
    uint8_t buf[1024];
    size_t len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, "test"), TSS_OK);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, "test"), TSS_REJECT_DUPLICATE);
    assert_int_equal(tsd_ingest_message(&in, e, "\x18\xff", 2, NULL), TSD_REASON_DECODE);
    x.b.first_seq += 4;
    x.b.first_timestamp_ns += 4 * x.b.period_ns;
    len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, "test"), TSS_OK);
    /* Streams beyond max_streams. */
    const char *ids[] = {"s2", "s3"};
    int want[] = {TSS_OK, TSS_REJECT_TOO_MANY_STREAMS};
    for (int i = 0; i < 2; i++) {
        snprintf(x.id, sizeof x.id, "%s", ids[i]);
        len = tsmine__v1__sample_batch__pack(&x.b, buf);
        assert_int_equal(tsd_ingest_message(&in, e, buf, len, "test"), want[i]);
    }
    tsd_ingest_refuse(&in, TSD_REASON_FRAMES, 3, NULL, "expected 1 frame");
    assert_int_equal(in.count.messages, 7);
    assert_int_equal(in.count.accepted, 3);
    assert_int_equal(in.count.samples, 12);
    assert_int_equal(in.count.rejected[TSS_REJECT_DUPLICATE], 1);
    assert_int_equal(in.count.rejected[TSD_REASON_DECODE], 1);
    assert_int_equal(in.count.rejected[TSS_REJECT_TOO_MANY_STREAMS], 1);
    assert_int_equal(in.count.rejected[TSD_REASON_FRAMES], 1);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "s1", &info), 0);
    assert_int_equal(info.samples, 8);
    tss_engine_destroy(&e);
}

/* 10^6 distinct stream ids against max_streams = 1000: the first 1000 streams are
 * accepted, every later new id is too_many_streams, counted one by one; the known
 * streams still take samples afterwards. */
static void test_million_streams(void **state) {
    (void)state;
    enum { STREAMS = 1000, IDS = 1000000 };
    tss_engine *e = cpu_engine(STREAMS);
    tsd_ingest in;
    tsd_ingest_init(&in, MAX_MSG, 1);
    batch x;
    batch_init(&x);
    x.b.n_values = 1;
    uint8_t buf[256];
    for (int i = 0; i < IDS; i++) {
        snprintf(x.id, sizeof x.id, "id/%07d", i);
        size_t len = tsmine__v1__sample_batch__pack(&x.b, buf);
        int r = tsd_ingest_message(&in, e, buf, len, NULL);
        if (r != (i < STREAMS ? TSS_OK : TSS_REJECT_TOO_MANY_STREAMS))
            fail_msg("stream %d: %s", i, r ? tsd_reason_name(r) : "ok");
    }
    assert_int_equal(tss_engine_stream_count(e), STREAMS);
    assert_int_equal(in.count.accepted, STREAMS);
    assert_int_equal(in.count.rejected[TSS_REJECT_TOO_MANY_STREAMS], IDS - STREAMS);
    for (int r = 1; r < TSD_REASON_COUNT; r++)
        if (r != TSS_REJECT_TOO_MANY_STREAMS)
            assert_int_equal(in.count.rejected[r], 0);
    snprintf(x.id, sizeof x.id, "id/%07d", STREAMS - 1);
    x.b.first_seq += 1;
    x.b.first_timestamp_ns += x.b.period_ns;
    size_t len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, NULL), TSS_OK);
    tss_engine_destroy(&e);
}

/* Timestamps going backwards from one batch to the next (the batch itself is in
 * order): time_backwards, counted; the stream then goes on from where it was. */
static void test_time_backwards_across_batches(void **state) {
    (void)state;
    tss_engine *e = cpu_engine(2);
    tsd_ingest in;
    tsd_ingest_init(&in, MAX_MSG, 1);
    batch x;
    batch_init(&x); /* seq 10..13 at 1000..1030 */
    uint8_t buf[1024];
    size_t len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, NULL), TSS_OK);
    x.b.first_seq = 14;
    x.b.first_timestamp_ns = 1020; /* before the last one taken (1030) */
    len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, NULL), TSS_REJECT_TIME_BACKWARDS);
    assert_int_equal(in.count.rejected[TSS_REJECT_TIME_BACKWARDS], 1);
    x.b.first_timestamp_ns = 1040;
    len = tsmine__v1__sample_batch__pack(&x.b, buf);
    assert_int_equal(tsd_ingest_message(&in, e, buf, len, NULL), TSS_OK);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "s1", &info), 0);
    assert_int_equal(info.samples, 8);
    assert_int_equal(info.rejected, 1);
    tss_engine_destroy(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_table),
        cmocka_unit_test(test_decode_table),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_decode_budget),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_reason_names),
        cmocka_unit_test(test_pipeline_counters),
        cmocka_unit_test(test_id_with_nul),
        cmocka_unit_test(test_huge_id),
        cmocka_unit_test(test_million_streams),
        cmocka_unit_test(test_time_backwards_across_batches),
    };
    return cmocka_run_group_tests_name("daemon_ingest", tests, NULL, NULL);
}
