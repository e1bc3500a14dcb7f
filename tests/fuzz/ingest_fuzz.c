/* SPDX-License-Identifier: Apache-2.0 */
/* ingest_fuzz.c - libFuzzer harness over tsmined's ingest path (daemon/source/decode.h): one
 * input is one ingest message, driven through decode -> validate -> apply into a fresh
 * CPU-backend engine, then a tick (ring append and the online kernel). No sockets.
 *
 * Properties checked on every input (a failed one aborts, which libFuzzer reports):
 *   - the pipeline never crashes, leaks or trips ASan/UBSan, and the decode budget
 *     always comes back to 0;
 *   - tsd_ingest_message returns the same reason as the stages run one by one and
 *     counts exactly one message under exactly that reason (or as accepted);
 *   - an accepted message says what an independent wire reader (wire_read below,
 *     not protobuf-c) reads in the same bytes: id bytes, sequence number, timestamps,
 *     values bit for bit; and it obeys the documented limits (printable id of 1..255
 *     bytes, finite values, at most a window of them);
 *   - re-encoding: protobuf-c packs the decoded batch in canonical form (fields in
 *     number order, defaults left out, packed repeated fields, shortest varints,
 *     unknown fields last). Bytes equal to the input are required when the input is
 *     itself canonical (wire_read tells); otherwise only decode(encode(x)) == x can
 *     hold, and is checked, together with encode(decode(encode(x))) == encode(x);
 *   - apply: the stream then holds n samples and expects first_seq + n; the same
 *     message again is a duplicate and changes nothing; a tick succeeds. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/source/decode.h"

enum { MAX_MESSAGE = 65536, WINDOW = 64, MAX_STREAMS = 4 };

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "ingest_fuzz: property failed at line %d: %s\n", __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- an independent reader of SampleBatch wire bytes (the test oracle) -------------- */

/* What wire_read finds: proto3 semantics (a scalar seen twice: the last one; repeated
 * fields: every occurrence appended, packed or not). Values and timestamps are kept as
 * pointers into the input plus counts; they are re-read when compared. */
typedef struct {
    uint32_t schema_version;
    const uint8_t *id;
    size_t id_len;
    uint64_t first_seq, first_ts, period;
    size_t n_values, n_timestamps;
    int canonical; /* protobuf-c's pack would write exactly these bytes */
} wire_batch;

/* One varint at *p (at most 10 bytes); 0 when malformed. *minimal: no needless
 * trailing 0x80 0x00 bytes. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v, int *minimal) {
    uint64_t x = 0;
    for (int i = 0; i < 10 && *p < end; i++) {
        uint8_t c = *(*p)++;
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = x;
            /* shortest form, and no bits beyond 64 in a 10th byte (unpack drops them,
             * so pack writes that byte as 0 or 1) */
            *minimal = (i == 0 || c != 0) && (i < 9 || c <= 1);
            return 1;
        }
    }
    return 0;
}

/* Reads the message; 0 when the bytes are not a SampleBatch this reader understands.
 * The k-th value / timestamp is fetched later by nth_value / nth_timestamp, which walk
 * the same bytes again. */
static int wire_read(const uint8_t *buf, size_t len, wire_batch *w) {
    memset(w, 0, sizeof *w);
    w->canonical = 1;
    const uint8_t *p = buf, *end = buf + len;
    uint64_t last_field = 0;
    int seen_ts = 0, seen_values = 0;
    while (p < end) {
        uint64_t key, v;
        int minimal, vmin;
        if (!varint(&p, end, &key, &minimal))
            return 0;
        uint64_t field = key >> 3;
        unsigned type = key & 7;
        if (field == 0 || field > 0x1fffffff)
            return 0;
        w->canonical &= minimal && field > last_field && field <= 7;
        last_field = field;
        const uint8_t *body = p;
        size_t body_len = 0;
        switch (type) {
        case 0:
            if (!varint(&p, end, &v, &vmin))
                return 0;
            w->canonical &= vmin && v != 0;
            break;
        case 1:
        case 5:
            body_len = type == 1 ? 8 : 4;
            if ((size_t)(end - p) < body_len)
                return 0;
            p += body_len;
            break;
        case 2:
            if (!varint(&p, end, &v, &vmin) || v > (uint64_t)(end - p))
                return 0;
            w->canonical &= vmin && v != 0;
            body = p;
            body_len = (size_t)v;
            p += body_len;
            break;
        default: return 0; /* groups: not in proto3 */
        }
        int want_type[8] = {-1, 0, 2, 0, -1, 0, 0, -1}; /* 4 and 7: repeated, below */
        if (field <= 6 && field != 4 && (int)type != want_type[field])
            return 0;
        if (field == 1) {
            w->schema_version = (uint32_t)v;
            w->canonical &= v <= UINT32_MAX; /* pack writes the low 32 bits */
        } else if (field == 2)
            w->id = body, w->id_len = body_len;
        else if (field == 3)
            w->first_seq = v;
        else if (field == 5)
            w->first_ts = v;
        else if (field == 6)
            w->period = v;
        else if (field == 4) {
            w->canonical &= type == 2 && !seen_ts++;
            if (type == 0)
                w->n_timestamps++;
            else if (type != 2)
                return 0;
            else
                for (const uint8_t *q = body; q < body + body_len; w->n_timestamps++)
                    if (!varint(&q, body + body_len, &v, &vmin))
                        return 0;
                    else
                        w->canonical &= vmin;
        } else if (field == 7) {
            w->canonical &= type == 2 && !seen_values++;
            if (type == 1)
                w->n_values++;
            else if (type != 2 || body_len % 8)
                return 0;
            else
                w->n_values += body_len / 8;
        }
    }
    return 1;
}

/* Calls fn(user, k, bits) for every element of repeated field `field` in order. */
static void wire_each(const uint8_t *buf, size_t len, uint64_t field,
                      void (*fn)(void *user, size_t k, uint64_t bits), void *user) {
    const uint8_t *p = buf, *end = buf + len;
    size_t k = 0;
    int m;
    while (p < end) {
        uint64_t key, v = 0;
        varint(&p, end, &key, &m);
        unsigned type = key & 7;
        const uint8_t *body = p;
        if (type == 0)
            varint(&p, end, &v, &m);
        else if (type == 1 || type == 5)
            p += type == 1 ? 8 : 4;
        else {
            varint(&p, end, &v, &m);
            body = p;
            p += v;
        }
        if (key >> 3 != field)
            continue;
        if (type == 0) { /* one unpacked timestamp */
            fn(user, k++, v);
        } else if (type == 1) { /* one unpacked value */
            memcpy(&v, body, 8);
            fn(user, k++, v);
        } else if (field == 4) {
            for (const uint8_t *q = body; q < p;) {
                varint(&q, p, &v, &m);
                fn(user, k++, v);
            }
        } else {
            for (const uint8_t *q = body; q < p; q += 8) {
                memcpy(&v, q, 8);
                fn(user, k++, v);
            }
        }
    }
}

/* wire_each callbacks: compare against the decoded batch. */
static void same_timestamp(void *user, size_t k, uint64_t bits) {
    const Tsmine__V1__SampleBatch *b = user;
    REQUIRE(k < b->n_timestamps_ns && (uint64_t)b->timestamps_ns[k] == bits);
}
static void same_value(void *user, size_t k, uint64_t bits) {
    const Tsmine__V1__SampleBatch *b = user;
    uint64_t got;
    REQUIRE(k < b->n_values);
    memcpy(&got, &b->values[k], 8);
    REQUIRE(got == bits);
}

/* ---- properties --------------------------------------------------------------------- */

/* Two decoded batches carry the same fields (values bit for bit, unknown fields too). */
static int same_batch(const Tsmine__V1__SampleBatch *a, const Tsmine__V1__SampleBatch *b) {
    if (a->schema_version != b->schema_version || strcmp(a->stream_id, b->stream_id) ||
        a->first_seq != b->first_seq || a->first_timestamp_ns != b->first_timestamp_ns ||
        a->period_ns != b->period_ns || a->n_values != b->n_values ||
        a->n_timestamps_ns != b->n_timestamps_ns ||
        a->base.n_unknown_fields != b->base.n_unknown_fields)
        return 0;
    if ((a->n_values && memcmp(a->values, b->values, a->n_values * sizeof *a->values)) ||
        (a->n_timestamps_ns &&
         memcmp(a->timestamps_ns, b->timestamps_ns, a->n_timestamps_ns * sizeof(int64_t))))
        return 0;
    for (unsigned k = 0; k < a->base.n_unknown_fields; k++) {
        const ProtobufCMessageUnknownField *x = &a->base.unknown_fields[k],
                                           *y = &b->base.unknown_fields[k];
        if (x->tag != y->tag || x->wire_type != y->wire_type || x->len != y->len ||
            (x->len && memcmp(x->data, y->data, x->len)))
            return 0;
    }
    return 1;
}

/* An accepted batch: what the independent reader sees, the documented limits, and the
 * re-encoding properties (see the top of the file). */
static void check_accepted(tsd_decoder *d, const uint8_t *buf, size_t len,
                           const Tsmine__V1__SampleBatch *b) {
    wire_batch w;
    REQUIRE(wire_read(buf, len, &w));
    size_t id_len = strlen(b->stream_id);
    REQUIRE(w.id_len == id_len && memcmp(w.id, b->stream_id, id_len) == 0);
    REQUIRE(id_len >= 1 && id_len <= TSS_MAX_ID);
    for (size_t k = 0; k < id_len; k++)
        REQUIRE(b->stream_id[k] >= 0x20 && b->stream_id[k] <= 0x7e);
    REQUIRE(w.schema_version == b->schema_version && w.first_seq == b->first_seq);
    REQUIRE(w.first_ts == (uint64_t)b->first_timestamp_ns && w.period == (uint64_t)b->period_ns);
    REQUIRE(w.n_values == b->n_values && w.n_timestamps == b->n_timestamps_ns);
    wire_each(buf, len, 4, same_timestamp, (void *)b);
    wire_each(buf, len, 7, same_value, (void *)b);
    REQUIRE(b->n_values >= 1 && b->n_values <= WINDOW);
    for (size_t k = 0; k < b->n_values; k++)
        REQUIRE(isfinite(b->values[k]));

    size_t n = tsmine__v1__sample_batch__get_packed_size(b);
    uint8_t *out = malloc(n ? n : 1), *again = malloc(n ? n : 1);
    REQUIRE(out && again);
    REQUIRE(tsmine__v1__sample_batch__pack(b, out) == n);
    if (w.canonical && b->base.n_unknown_fields == 0)
        REQUIRE(n == len && memcmp(out, buf, len) == 0);
    Tsmine__V1__SampleBatch *b2;
    REQUIRE(tsd_decode(d, out, n, &b2) == TSS_OK);
    REQUIRE(tsd_validate(b2) == TSS_OK);
    REQUIRE(same_batch(b, b2));
    REQUIRE(tsmine__v1__sample_batch__pack(b2, again) == n && memcmp(out, again, n) == 0);
    tsd_decoded_free(d, &b2);
    free(out);
    free(again);
}

static int params_small(void *user, const char *id, tss_params *out) {
    (void)user, (void)id;
    *out = tss_params_default();
    out->window = WINDOW;
    out->subsequence = 8;
    out->hop = 16;
    out->warmup = 32; /* the default (300) does not fit the window: every stream refused */
    return 0;
}

static tss_engine *engine_new(void) {
    tss_engine_options opt = {.backend = TSM_BACKEND_CPU,
                              .threads = 1,
                              .max_streams = MAX_STREAMS,
                              .params_for = params_small};
    tss_engine *e = NULL;
    char err[256];
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0) {
        fprintf(stderr, "ingest_fuzz: no CPU engine: %s\n", err);
        abort();
    }
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len) {
    /* The stages one by one. */
    tsd_decoder d;
    tsd_decoder_init(&d, MAX_MESSAGE);
    Tsmine__V1__SampleBatch *b;
    int staged = tsd_decode(&d, buf, len, &b);
    if (staged == TSS_OK)
        staged = tsd_validate(b);
    REQUIRE(staged >= 0 && staged < TSD_REASON_COUNT);

    /* The whole path, counted, into a fresh engine (each input stands alone, so a
     * crash reproduces from its file). */
    tss_engine *e = engine_new();
    tsd_ingest in;
    tsd_ingest_init(&in, MAX_MESSAGE, 1);
    int r = tsd_ingest_message(&in, e, buf, len, "fuzz");
    REQUIRE(in.dec.used == 0 && in.count.messages == 1 && in.count.bytes == len);
    if (staged != TSS_OK)
        REQUIRE(r == staged);
    uint64_t counted = in.count.accepted;
    for (int k = 1; k < TSD_REASON_COUNT; k++)
        counted += in.count.rejected[k];
    REQUIRE(counted == 1 && (r == TSS_OK ? in.count.accepted : in.count.rejected[r]) == 1);

    if (r == TSS_OK) {
        check_accepted(&d, buf, len, b);
        tss_stream_info info;
        REQUIRE(tss_engine_stream_find(e, b->stream_id, &info) == 0);
        REQUIRE(info.samples == b->n_values && info.next_seq == b->first_seq + b->n_values);
        REQUIRE(tsd_ingest_message(&in, e, buf, len, "fuzz") == TSS_REJECT_DUPLICATE);
        char err[256];
        REQUIRE(tss_engine_tick(e, err, sizeof err) == 0);
        REQUIRE(tss_engine_stream_find(e, b->stream_id, &info) == 0);
        REQUIRE(info.samples == b->n_values && info.window_fill == b->n_values);
    } else if (staged == TSS_OK) {
        /* Valid on the wire, refused by the engine: only its own reasons (never the
         * stream itself: params_small's parameters are valid, so a fresh engine takes
         * every new id and the accepted path above is reached). */
        REQUIRE(r > 0 && r < TSS_REJECT_COUNT && r != TSS_REJECT_STREAM_REFUSED);
        REQUIRE(tss_engine_stream_count(e) == 0); /* "a refused batch changes nothing" */
    }
    tsd_decoded_free(&d, &b);
    REQUIRE(d.used == 0);
    tss_engine_destroy(&e);
    return 0;
}
