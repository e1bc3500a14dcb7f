/* SPDX-License-Identifier: Apache-2.0 */
/* decode.h - one ingest message through three stages, each a separate function so
 * that a fuzzer or a unit test can drive any prefix of the pipeline:
 *
 *   tsd_decode    bytes -> SampleBatch (protobuf-c, under a memory budget)
 *   tsd_validate  SampleBatch -> accepted or a reason (stateless wire-level checks)
 *   tsd_apply     SampleBatch -> tss_engine_ingest (stateful checks: sequence numbers,
 *                 stream limits, window size)
 *
 * tsd_ingest_message runs all three and counts the outcome. Every refusal has a
 * reason with a stable snake_case name (tsd_reason_name): the engine's own reasons
 * (tss_reject, same values, names from tss_reject_name) followed by the daemon's. */
#ifndef TSD_DECODE_H
#define TSD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "daemon/core/log.h"
#include "engine.h"
#include "tsmine.pb-c.h"

/* Reasons: 0 (TSS_OK) is success; 1 .. TSS_REJECT_COUNT - 1 are tss_reject values. */
enum {
    TSD_REASON_DECODE = TSS_REJECT_COUNT, /* not a SampleBatch (or over the decode budget) */
    TSD_REASON_SCHEMA_VERSION,            /* schema_version newer than this daemon's (1) */
    TSD_REASON_OVERSIZED,                 /* longer than max_message_size */
    TSD_REASON_FRAMES,                    /* a multipart message of the wrong shape */
    TSD_REASON_BAD_SEQ,                   /* first_seq + values overflows 64 bits */
    TSD_REASON_REVOKED,   /* CURVE: the sender's key is no longer in the allow-list */
    TSD_REASON_NOT_OWNER, /* CURVE, stream_owners: the key may not write this stream */
    TSD_REASON_MEMORY,    /* a new stream while memory is over budget (guard.h) */
    TSD_REASON_SOURCES,   /* the first of the sources' own reasons (source.h) */
    TSD_REASON_COUNT = TSD_REASON_SOURCES + 8 /* room for them */
};
/* The name of a reason ("unknown" for none); those of the sources come from their rows
 * of the registry (source.c). */
const char *tsd_reason_name(int reason);
/* The reasons in use: 1 + the last one's number (<= TSD_REASON_COUNT). Defined with the
 * registry of sources (source.c). */
int tsd_reason_count(void);
/* The name of a source's reason (reason >= TSD_REASON_SOURCES), NULL for none. */
const char *tsd_source_reason_name(int reason);

/* The schema version this daemon speaks (tsmine.proto). */
#define TSD_SCHEMA_VERSION 1u

/* A protobuf-c allocator that refuses to hold more than `budget` bytes at once, so a
 * hostile message cannot make unpack allocate without bound. protobuf-c needs up to
 * about 16 bytes per input byte in the worst case (its scanned-member slabs, 1-byte
 * packed varints widened to 8), so the budget is TSD_DECODE_FACTOR times the message
 * size limit. */
#define TSD_DECODE_FACTOR 24u
typedef struct {
    ProtobufCAllocator alloc; /* points back to this struct */
    size_t budget;            /* bytes that may be outstanding */
    size_t used;              /* bytes outstanding now */
} tsd_decoder;

void tsd_decoder_init(tsd_decoder *d, size_t max_message_size);

/* Stage 1. Unpacks len bytes. Returns TSS_OK with *out (free with tsd_decoded_free),
 * TSD_REASON_OVERSIZED when len > max_message_size, TSS_REJECT_BAD_ID when the stream
 * id holds a NUL byte (as a C string it would name another, shorter id), else
 * TSD_REASON_DECODE. */
int tsd_decode(tsd_decoder *d, const void *buf, size_t len, Tsmine__V1__SampleBatch **out);
void tsd_decoded_free(tsd_decoder *d, Tsmine__V1__SampleBatch **b);

/* Stage 2. Checks what needs no stream state: schema version, stream id (1..TSS_MAX_ID
 * printable ASCII bytes), values present and finite, one timestamp per value when any
 * is given and non-decreasing, period >= 0, sequence numbers that do not wrap. O(n). */
int tsd_validate(const Tsmine__V1__SampleBatch *b);

/* Stage 3. Appends to the engine; returns TSS_OK or the engine's tss_reject. */
int tsd_apply(tss_engine *e, const Tsmine__V1__SampleBatch *b);

/* Counters of the ingest path (read by control and metrics; written only by the
 * main loop). */
typedef struct {
    uint64_t messages; /* received, accepted or not */
    uint64_t bytes;    /* their payload bytes */
    uint64_t accepted; /* batches accepted */
    uint64_t samples;  /* samples accepted */
    uint64_t rejected[TSD_REASON_COUNT];
    uint64_t ns_decode; /* time in tsd_decode + tsd_validate (protobuf unpack, checks) */
    uint64_t ns_stage;  /* time in tsd_apply (engine checks, copy into its staging) */
} tsd_ingest_counters;

/* Who sent a message, as libzmq tells: the client's CURVE public key (Z85, ZAP's
 * User-Id; NULL without CURVE), the descriptor of its connection (-1: unknown) and its
 * host (Peer-Address; NULL: unknown). */
typedef struct {
    const char *key;
    int fd;
    const char *address;
} tsd_sender;

/* CURVE's say on one message (security.h, tsd_security_admit): called before decoding
 * with stream_id NULL (may this key send at all: TSS_OK or TSD_REASON_REVOKED), and
 * after validation with the batch's stream id (TSS_OK or TSD_REASON_NOT_OWNER). */
typedef int (*tsd_ingest_admit_fn)(void *ctx, const tsd_sender *from, const char *stream_id);

typedef struct {
    tsd_decoder dec;
    tsd_ingest_counters count;
    tsd_ratelimit limit[TSD_REASON_COUNT]; /* log lines per reason */
    tsd_ingest_admit_fn admit;             /* NULL: every sender may write every stream */
    void *admit_ctx;
    /* Whether a new stream that will take that many bytes may be created now (guard.h,
     * tsd_guard_admit), or NULL for always: when it says no, the batch is refused
     * (memory). Asked for every batch of a stream the engine does not know. */
    int (*admit_new)(void *user, uint64_t bytes);
    void *admit_new_user;
} tsd_ingest;

void tsd_ingest_init(tsd_ingest *in, size_t max_message_size, uint32_t log_rate_per_s);

/* Changes the log rate per reason (reload). */
void tsd_ingest_set_log_rate(tsd_ingest *in, uint32_t log_rate_per_s);

/* Runs the three stages on one message and counts it; logs a refusal (at the rate
 * limit) with `peer` (may be NULL) for context. Returns the reason (TSS_OK = 0). */
int tsd_ingest_message(tsd_ingest *in, tss_engine *e, const void *buf, size_t len,
                       const char *peer);

/* The same for a message of a known sender (from may be NULL), which the admit hook,
 * when set, judges (revoked key, stream owner); refusals log the key. */
int tsd_ingest_message_from(tsd_ingest *in, tss_engine *e, const void *buf, size_t len,
                            const char *peer, const tsd_sender *from);

/* The stages after decoding for a batch that did not come as protobuf bytes (MQTT's
 * JSON and line protocol, mqtt_ingest.c): validate, the memory admission, apply;
 * counts the outcome (accepted and samples, or the reason) like a message, but not
 * as a message (the caller counts those). peer names the source in log lines. */
int tsd_ingest_batch(tsd_ingest *in, tss_engine *e, const Tsmine__V1__SampleBatch *b,
                     const char *peer);

/* Counts one received message of len bytes (sources whose messages hold several
 * batches: tsd_ingest_batch counts the batches). */
void tsd_ingest_received(tsd_ingest *in, size_t len);

/* Reports the rejections the per-reason limits held back (a timer's call). */
void tsd_ingest_flush_log(tsd_ingest *in);

/* Installs the admit hook (NULL: none). */
void tsd_ingest_set_admit(tsd_ingest *in, tsd_ingest_admit_fn admit, void *ctx);

/* Counts a message refused before decoding (TSD_REASON_FRAMES) and logs it. */
void tsd_ingest_refuse(tsd_ingest *in, int reason, size_t len, const char *peer,
                       const char *detail);
/* The same for a message already counted (tsd_ingest_received): the refusal only. */
void tsd_ingest_reject(tsd_ingest *in, int reason, size_t len, const char *peer,
                       const char *detail);

#endif
