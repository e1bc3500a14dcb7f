/* SPDX-License-Identifier: Apache-2.0 */
/* stream_testutil.h - helpers of the stream engine tests: an alert log filled by the
 * engine's callback, a parameters callback from a table, and a feeder that delivers
 * prepared streams to an engine in random batches and ticks (tests/testutil.h rng). */
#ifndef TSM_STREAM_TESTUTIL_H
#define TSM_STREAM_TESTUTIL_H

#include "engine.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char id[64];
    tss_alert a;
} st_alert;

typedef struct {
    st_alert *v;
    size_t n, cap;
} st_log;

/* One scored subsequence (tss_engine_options.on_score). */
typedef struct {
    char id[64];
    uint64_t start, neighbor, magnitude_neighbor;
    uint32_t m;
    double raw, score, magnitude, level, shape_score, magnitude_score, level_score;
    tss_view view;
} st_score;

typedef struct {
    st_score *v;
    size_t n, cap;
} st_scores;

#define ST_MAX_STREAMS 8

/* What the callbacks see: the log and the parameters of each known id (an unknown id
 * is refused). */
typedef struct {
    st_log log;
    st_scores scores; /* filled when keep_scores is set */
    int keep_scores;
    const char *ids[ST_MAX_STREAMS];
    tss_params params[ST_MAX_STREAMS];
    size_t nids;
    int overlap_passes; /* tss_engine_options.overlap_passes of st_engine's engines */
} st_env;

/* One prepared stream: n samples, sample k has sequence number seq[k] (increasing;
 * a jump is a gap) and timestamp seq[k] * ST_PERIOD. */
typedef struct {
    const char *id;
    double *v;
    uint64_t *seq;
    size_t n;
} st_input;
#define ST_PERIOD 1000

void st_env_add(st_env *env, const char *id, tss_params p);
void st_env_free(st_env *env);
/* The backend under test (TSM_TEST_BACKEND, tests/testutil.h); skips the case when it
 * is unavailable. */
tsm_backend st_backend(void);
/* An engine on the backend under test with env's callbacks; fails the test on error. */
tss_engine *st_engine(st_env *env, int threads, uint32_t max_streams);
/* Delivers every input to e: batches of consecutive sequence numbers of 1..max_batch
 * samples, streams interleaved at random, a tick after a batch with probability
 * p_tick, and st_settle at the end. Each ingest must be accepted. */
void st_feed(tss_engine *e, const st_input *in, size_t nin, size_t max_batch, double p_tick);
/* Ticks until nothing is staged: with overlapped passes a tick leaves the samples of
 * streams waiting for their passes staged, and the flush between ticks launches them. */
void st_settle(tss_engine *e);
/* Alerts of one stream and kind, in the order they came. Caller frees. */
st_alert *st_select(const st_log *log, const char *id, int kind, size_t *count);
/* A random walk of n samples with planted bursts and constant stretches, numbered from
 * seq0 with a gap of `gap` missing samples after sample gap_at (none when gap == 0). */
st_input st_make_input(const char *id, size_t n, uint64_t seq0, size_t gap_at, uint64_t gap);
void st_input_free(st_input *in);
/* Rewrites the CRC-32 of a checkpoint (stream/checkpoint.c: its last 4 bytes, over
 * everything before the u64 length field) after an edit, with a bitwise CRC
 * independent of the engine's, so that the field checks behind it are what is tested. */
void st_ckpt_fix_crc(unsigned char *buf, size_t len);

#endif
