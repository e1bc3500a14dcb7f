/* SPDX-License-Identifier: Apache-2.0 */
/* payload_fuzz.c - libFuzzer harness over tsmined's MQTT payload parsers
 * (daemon/source/mqtt_payload.h): one input is one payload, given to format detection and to
 * both text parsers.
 *
 * Properties checked on every input (a failed one aborts, which libFuzzer reports):
 *   - nothing crashes, leaks or trips ASan/UBSan;
 *   - a parser that fails hands over no batch (JSON) or only those of the lines before
 *     the bad one (line protocol), and says why (a non-empty message);
 *   - every batch has 1.. samples, finite values from line protocol, a stream id of at
 *     most 255 bytes when it names one, and JSON's sequence numbers come only with
 *     has_seq. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/source/mqtt_payload.h"

typedef struct {
    size_t batches;
    int influx;
} seen;

static void check(void *user, const tsd_payload_batch *b) {
    seen *s = user;
    s->batches++;
    if (b->n == 0 || !b->values)
        abort();
    if (b->stream_id && strlen(b->stream_id) > 255)
        abort();
    for (size_t k = 0; k < b->n; k++)
        if (s->influx && !isfinite(b->values[k]))
            abort();
    if (s->influx && (b->n != 1 || !b->stream_id || b->has_seq))
        abort();
    if (!s->influx && b->stream_id)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)tsd_payload_detect(data, size);
    char err[256];
    seen s = {0, 0};
    err[0] = '\0';
    const int rc = tsd_payload_json((const char *)data, size, check, &s, err, sizeof err);
    if (rc != 0 ? s.batches != 0 || !err[0] : s.batches != 1) /* one batch, or none and why */
        abort();
    seen t = {0, 1};
    err[0] = '\0';
    if (tsd_payload_influx((const char *)data, size, check, &t, err, sizeof err) != 0 && !err[0])
        abort();
    return 0;
}
