/* SPDX-License-Identifier: Apache-2.0 */
/* decode.c - decode -> validate -> apply for one ingest message, and its counters. */
#include "daemon/source/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *tsd_reason_name(int reason) {
    switch (reason) {
    case TSD_REASON_DECODE: return "decode";
    case TSD_REASON_SCHEMA_VERSION: return "schema_version";
    case TSD_REASON_OVERSIZED: return "oversized";
    case TSD_REASON_FRAMES: return "frames";
    case TSD_REASON_BAD_SEQ: return "bad_seq";
    case TSD_REASON_REVOKED: return "revoked";
    case TSD_REASON_NOT_OWNER: return "not_owner";
    case TSD_REASON_MEMORY: return "memory";
    default: break;
    }
    const char *source = tsd_source_reason_name(reason);
    if (source)
        return source;
    if (reason >= 0 && reason < TSS_REJECT_COUNT)
        return tss_reject_name((tss_reject)reason);
    return "unknown";
}

/* The budget allocator: each block carries its size in a header (16 bytes, keeping
 * the payload aligned for any type) so that free can give the budget back. */
typedef union {
    size_t size;
    max_align_t align;
} block_header;

static void *budget_alloc(void *data, size_t size) {
    tsd_decoder *d = data;
    if (size > d->budget - d->used)
        return NULL; /* protobuf-c then fails the unpack cleanly */
    block_header *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = size;
    d->used += size;
    return h + 1;
}

static void budget_free(void *data, void *ptr) {
    tsd_decoder *d = data;
    if (!ptr)
        return;
    block_header *h = (block_header *)ptr - 1;
    d->used -= h->size;
    free(h);
}

void tsd_decoder_init(tsd_decoder *d, size_t max_message_size) {
    d->alloc =
        (ProtobufCAllocator){.alloc = budget_alloc, .free = budget_free, .allocator_data = d};
    d->budget = TSD_DECODE_FACTOR * max_message_size + 65536;
    d->used = 0;
}

#define TSD_FIELD_MAX 0x1fffffffu /* the largest field number protobuf allows */

/* One varint at *p; 0 when it runs past end or beyond 10 bytes. */
static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        *v |= (uint64_t)(c & 0x7f) << (shift < 64 ? shift : 0);
        if (!(c & 0x80))
            return 1;
    }
    return 0;
}

/* The wire length of the stream id that unpack kept (the last field 2: for a proto3
 * scalar the last occurrence wins), 0 when absent, or SIZE_MAX when the bytes do not
 * walk or hold a field number that protobuf does not allow: 0, or above 2^29 - 1
 * (protobuf-c 1.4 lets both through as unknown fields: 0 when its key takes more than
 * one byte, large ones up to 2^32 - 1). Needed because
 * protobuf-c hands a string over NUL-terminated without its length: an id "s1\0xyz"
 * would read as "s1", another stream's id. O(fields). */
static size_t wire_id_len(const uint8_t *p, size_t len) {
    const uint8_t *end = p + len;
    size_t id_len = 0;
    while (p < end) {
        uint64_t key, n = 8; /* wire type 1: 8 bytes */
        if (!wire_varint(&p, end, &key) || key >> 3 == 0 || key >> 3 > TSD_FIELD_MAX)
            return SIZE_MAX;
        unsigned type = key & 7;
        if (type == 0) {
            if (!wire_varint(&p, end, &n))
                return SIZE_MAX;
            continue;
        }
        if (type == 5)
            n = 4;
        else if (type == 2 && !wire_varint(&p, end, &n))
            return SIZE_MAX;
        else if (type != 1 && type != 2)
            return SIZE_MAX;
        if (n > (uint64_t)(end - p))
            return SIZE_MAX;
        if (type == 2 && key >> 3 == 2)
            id_len = (size_t)n;
        p += n;
    }
    return id_len;
}

int tsd_decode(tsd_decoder *d, const void *buf, size_t len, Tsmine__V1__SampleBatch **out) {
    *out = NULL;
    if (len > (d->budget - 65536) / TSD_DECODE_FACTOR)
        return TSD_REASON_OVERSIZED;
    *out = tsmine__v1__sample_batch__unpack(&d->alloc, len, buf);
    if (!*out)
        return TSD_REASON_DECODE;
    size_t id_len = wire_id_len(buf, len);
    if (id_len != strlen((*out)->stream_id)) {
        tsd_decoded_free(d, out);
        return id_len == SIZE_MAX ? TSD_REASON_DECODE : TSS_REJECT_BAD_ID;
    }
    return TSS_OK;
}

void tsd_decoded_free(tsd_decoder *d, Tsmine__V1__SampleBatch **b) {
    if (*b) {
        tsmine__v1__sample_batch__free_unpacked(*b, &d->alloc);
        *b = NULL;
    }
}

/* 1..TSS_MAX_ID bytes of printable ASCII (they become ZeroMQ topics, metric labels
 * and log text). */
static int valid_id(const char *id) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++, n++)
        if (*p < 0x20 || *p > 0x7e || n >= TSS_MAX_ID)
            return 0;
    return n > 0;
}

/* Timestamps: one per value and non-decreasing, or a non-negative period whose last
 * timestamp fits in 64 bits. */
static int check_timestamps(const Tsmine__V1__SampleBatch *b) {
    if (b->period_ns < 0)
        return TSS_REJECT_TIMESTAMPS;
    if (b->n_timestamps_ns) {
        if (b->n_timestamps_ns != b->n_values)
            return TSS_REJECT_TIMESTAMPS;
        for (size_t k = 1; k < b->n_timestamps_ns; k++)
            if (b->timestamps_ns[k] < b->timestamps_ns[k - 1])
                return TSS_REJECT_TIME_BACKWARDS;
        return TSS_OK;
    }
    int64_t span;
    if (__builtin_mul_overflow(b->period_ns, (int64_t)(b->n_values - 1), &span) ||
        __builtin_add_overflow(b->first_timestamp_ns, span, &span))
        return TSS_REJECT_TIMESTAMPS;
    return TSS_OK;
}

int tsd_validate(const Tsmine__V1__SampleBatch *b) {
    if (b->schema_version > TSD_SCHEMA_VERSION)
        return TSD_REASON_SCHEMA_VERSION;
    if (!valid_id(b->stream_id))
        return TSS_REJECT_BAD_ID;
    if (b->n_values == 0)
        return TSS_REJECT_EMPTY;
    if (b->first_seq > UINT64_MAX - b->n_values)
        return TSD_REASON_BAD_SEQ;
    for (size_t k = 0; k < b->n_values; k++)
        if (!isfinite(b->values[k]))
            return TSS_REJECT_NONFINITE;
    return check_timestamps(b);
}

int tsd_apply(tss_engine *e, const Tsmine__V1__SampleBatch *b) {
    return tss_engine_ingest_epoch(e, b->stream_id, b->epoch, b->first_seq,
                                   b->n_timestamps_ns ? b->timestamps_ns : NULL,
                                   b->first_timestamp_ns, b->period_ns, b->values, b->n_values);
}

void tsd_ingest_set_log_rate(tsd_ingest *in, uint32_t log_rate_per_s) {
    for (int r = 0; r < TSD_REASON_COUNT; r++)
        tsd_ratelimit_init(&in->limit[r], log_rate_per_s);
}

void tsd_ingest_init(tsd_ingest *in, size_t max_message_size, uint32_t log_rate_per_s) {
    memset(in, 0, sizeof *in);
    tsd_decoder_init(&in->dec, max_message_size);
    tsd_ingest_set_log_rate(in, log_rate_per_s);
}

/* Counts a refusal; returns whether it may be logged now (the reason's rate limit),
 * after saying how many lines of that reason were suppressed before. */
static int refused(tsd_ingest *in, int reason) {
    in->count.rejected[reason]++;
    uint64_t suppressed;
    if (!tsd_ratelimit_allow(&in->limit[reason], tsd_now_ns(), &suppressed))
        return 0;
    if (suppressed)
        tsd_log(TSD_LOG_WARNING, "ingest: %llu more rejections for %s not logged",
                (unsigned long long)suppressed, tsd_reason_name(reason));
    return 1;
}

void tsd_ingest_refuse(tsd_ingest *in, int reason, size_t len, const char *peer,
                       const char *detail) {
    tsd_ingest_received(in, len);
    tsd_ingest_reject(in, reason, len, peer, detail);
}

void tsd_ingest_reject(tsd_ingest *in, int reason, size_t len, const char *peer,
                       const char *detail) {
    if (refused(in, reason))
        tsd_log(TSD_LOG_WARNING, "ingest: rejected %zu-byte message from %s: %s (%s)", len,
                peer ? peer : "?", tsd_reason_name(reason), detail);
}

void tsd_ingest_flush_log(tsd_ingest *in) {
    const uint64_t now = tsd_now_ns();
    for (int r = 1; r < tsd_reason_count(); r++) {
        char what[64];
        snprintf(what, sizeof what, "rejections for %s", tsd_reason_name(r));
        tsd_ratelimit_flush(&in->limit[r], now, TSD_LOG_WARNING, what);
    }
}

void tsd_ingest_set_admit(tsd_ingest *in, tsd_ingest_admit_fn admit, void *ctx) {
    in->admit = admit;
    in->admit_ctx = ctx;
}

/* Whether the engine has a stream of that id (only streams it does not know need
 * admitting). */
static int known(const tss_engine *e, const char *id) {
    return tss_engine_stream_find(e, id, NULL) == 0;
}

int tsd_ingest_message(tsd_ingest *in, tss_engine *e, const void *buf, size_t len,
                       const char *peer) {
    return tsd_ingest_message_from(in, e, buf, len, peer, NULL);
}

/* The end of every path: validate (unless r already refused), the CURVE owner check
 * (ZeroMQ only: from NULL skips it; MQTT's senders are the broker's to admit), the
 * memory admission, apply; then counts and logs the outcome. b may be NULL when r is a
 * refusal. t0: when the message's decoding began (ns_decode). */
static int finish(tsd_ingest *in, tss_engine *e, const Tsmine__V1__SampleBatch *b, int r,
                  uint64_t t0, size_t len, const char *peer, const tsd_sender *from) {
    static const tsd_sender nobody = {NULL, -1, NULL};
    const int curve = from != NULL;
    from = from ? from : &nobody;
    if (r == TSS_OK)
        r = tsd_validate(b);
    if (r == TSS_OK && in->admit && curve)
        r = in->admit(in->admit_ctx, from, b->stream_id);
    uint64_t t1 = tsd_now_ns();
    in->count.ns_decode += t1 - t0;
    if (r == TSS_OK && in->admit_new && !known(e, b->stream_id) &&
        !in->admit_new(in->admit_new_user, tss_engine_new_stream_bytes(e, b->stream_id)))
        r = TSD_REASON_MEMORY;
    if (r == TSS_OK) {
        r = tsd_apply(e, b);
        in->count.ns_stage += tsd_now_ns() - t1;
    }
    if (r == TSS_OK) {
        in->count.accepted++;
        in->count.samples += b->n_values;
    } else {
        if (refused(in, r)) {
            /* The id is printed only when it is safe to print. */
            int id_ok = b && valid_id(b->stream_id);
            tsd_log_fields(
                TSD_LOG_WARNING, id_ok ? b->stream_id : NULL, tsd_reason_name(r),
                "ingest: rejected %zu-byte message from %s%s%s%s: %s (stream \"%s\", seq "
                "%llu)",
                len, peer ? peer : "?", from->key ? " (key " : "", from->key ? from->key : "",
                from->key ? ")" : "", tsd_reason_name(r), id_ok ? b->stream_id : "?",
                b ? (unsigned long long)b->first_seq : 0ull);
        }
    }
    return r;
}

int tsd_ingest_message_from(tsd_ingest *in, tss_engine *e, const void *buf, size_t len,
                            const char *peer, const tsd_sender *from) {
    static const tsd_sender nobody = {NULL, -1, NULL};
    from = from ? from : &nobody;
    tsd_ingest_received(in, len);
    Tsmine__V1__SampleBatch *b = NULL;
    uint64_t t0 = tsd_now_ns();
    /* CURVE: a key revoked at a reload is refused before its bytes are decoded */
    int r = in->admit ? in->admit(in->admit_ctx, from, NULL) : TSS_OK;
    if (r == TSS_OK)
        r = tsd_decode(&in->dec, buf, len, &b);
    r = finish(in, e, b, r, t0, len, peer, from);
    tsd_decoded_free(&in->dec, &b);
    return r;
}

int tsd_ingest_batch(tsd_ingest *in, tss_engine *e, const Tsmine__V1__SampleBatch *b,
                     const char *peer) {
    return finish(in, e, b, TSS_OK, tsd_now_ns(), b->n_values * sizeof(double), peer, NULL);
}

void tsd_ingest_received(tsd_ingest *in, size_t len) {
    in->count.messages++;
    in->count.bytes += len;
}
