/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt_payload.h - the text payloads an MQTT message may carry, turned into sample
 * batches (docs/integrations.md, "Payloads"). Pure functions over bytes: no broker, no
 * engine, so that unit tests and a fuzzer drive them directly.
 *
 *   JSON     a number (one sample); an object {"value": V, "ts": SECONDS, "seq": N}
 *            ("ts" and "seq" optional); or an array of numbers or of such objects (one
 *            batch, in order). "ts" is Unix time in seconds (fractions allowed); every
 *            element has one or none does. "seq" is the sequence number of that
 *            sample: in an array the first element's, and any later one given must
 *            follow on (first + index). The stream is the topic's.
 *   influx   InfluxDB line protocol as Telegraf's outputs.mqtt writes it (data_format
 *            = "influx"): one line per metric, "measurement[,tag=v...] field=v[,...]
 *            [timestamp_ns]". Each numeric field (float, 12i, 12u) is one sample of
 *            the stream "SERIES/FIELD", SERIES being the measurement and tags as
 *            written; strings and booleans are skipped. No sequence numbers.
 *   protobuf the SampleBatch of the ZeroMQ path (decode.h decodes it).
 *
 * tsd_payload_detect tells them apart for format "auto": a payload holding a control
 * byte (below 0x20 but tab, CR and LF, or 0x7f) is protobuf (every SampleBatch holds
 * one, in its tags or lengths, but for freak values: set format "protobuf" to be
 * sure); text whose first non-blank byte is one of -0123456789[{ is JSON; other text
 * is line protocol. */
#ifndef TSD_MQTT_PAYLOAD_H
#define TSD_MQTT_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TSD_PAYLOAD_AUTO,
    TSD_PAYLOAD_PROTOBUF,
    TSD_PAYLOAD_JSON,
    TSD_PAYLOAD_INFLUX
} tsd_payload_format;

/* "auto", "protobuf", "json", "influx" -> the format; -1 when none of them. */
int tsd_payload_format_parse(const char *name);

/* The format of a payload under "auto" (never TSD_PAYLOAD_AUTO). O(len). */
tsd_payload_format tsd_payload_detect(const void *buf, size_t len);

/* One batch found in a payload. The arrays and stream id belong to the parser and
 * live until the callback returns. */
typedef struct {
    const char *stream_id; /* NULL: the stream of the message's topic */
    int has_seq;           /* 0: sequence numbers follow the stream's arrival order */
    uint64_t first_seq;    /* when has_seq */
    const int64_t *ts_ns;  /* one per value, or NULL: no timestamps */
    const double *values;
    size_t n;
} tsd_payload_batch;

/* Called once per batch; its return value is ignored by the parsers (the caller counts
 * each batch's outcome itself). */
typedef void (*tsd_payload_fn)(void *user, const tsd_payload_batch *b);

/* Parses a JSON payload into one batch, handed to fn. Returns 0, or -1 with what is
 * wrong in err ("element 3: \"value\" is not a number") and fn not called. O(len). */
int tsd_payload_json(const char *buf, size_t len, tsd_payload_fn fn, void *user, char *err,
                     size_t errlen);

/* Parses line protocol: every numeric field of every line is handed to fn as a batch of
 * one sample, in order. Returns 0, or -1 with "line N: what" in err at the first bad
 * line (the batches of the lines before it were handed over: a partial write keeps
 * what it holds). O(len). */
int tsd_payload_influx(const char *buf, size_t len, tsd_payload_fn fn, void *user, char *err,
                       size_t errlen);

#endif
