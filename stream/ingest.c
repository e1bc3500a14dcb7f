/* SPDX-License-Identifier: Apache-2.0 */
/* ingest.c - tss_engine_ingest: validation of a batch and its append to the stream's
 * staging (engine.h, "Sequence numbers"). Nothing is computed on the values here.
 *
 * Every check runs before anything changes, and every allocation the append needs is
 * made before the first change, so a refused batch leaves no trace but the counters. */
#include "engine_impl.h"

#include <math.h>
#include <string.h>

/* TSS_REJECT_BAD_ID unless id is 1..TSS_MAX_ID printable ASCII characters. */
static tss_reject check_id(const char *id) {
    if (!id)
        return TSS_REJECT_BAD_ID;
    size_t len = 0;
    for (; id[len]; len++)
        if (len >= TSS_MAX_ID || (unsigned char)id[len] < 0x20 || (unsigned char)id[len] > 0x7e)
            return TSS_REJECT_BAD_ID;
    return len ? TSS_OK : TSS_REJECT_BAD_ID;
}

/* The timestamp of sample k of the batch; -1 when first + k * period overflows. */
static int sample_ts(const int64_t *ts, int64_t first, int64_t period, size_t k, int64_t *out) {
    if (ts) {
        *out = ts[k];
        return 0;
    }
    int64_t step;
    if (__builtin_mul_overflow((int64_t)k, period, &step) ||
        __builtin_add_overflow(first, step, out))
        return -1;
    return 0;
}

/* Checks values and timestamps against each other, against the stream's last
 * timestamp (have_last) and against the latest the clock allows (ahead_ns, 0: none;
 * timestamps are non-decreasing once checked, so the last one decides). */
static tss_reject check_samples(const int64_t *ts, int64_t first, int64_t period,
                                const double *values, size_t n, int have_last, int64_t last,
                                const tss_engine *e) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(values[k]))
            return TSS_REJECT_NONFINITE;
    if (!ts && period < 0)
        return TSS_REJECT_TIMESTAMPS;
    int64_t prev = last;
    for (size_t k = 0; k < n; k++) {
        int64_t t;
        if (sample_ts(ts, first, period, k, &t) != 0)
            return TSS_REJECT_TIMESTAMPS;
        if ((k > 0 || have_last) && t < prev)
            return TSS_REJECT_TIME_BACKWARDS;
        prev = t;
    }
    const double ahead = e->opt.limits.max_ahead_s;
    int64_t latest;
    if (ahead > 0 && n > 0 && ahead < 9e9 && /* else no timestamp can be that far ahead */
        !__builtin_add_overflow(tssi_engine_wall_ns(e), (int64_t)(ahead * 1e9), &latest) &&
        prev > latest)
        return TSS_REJECT_FUTURE_TIME;
    return TSS_OK;
}

/* DUPLICATE or OUT_OF_ORDER for a batch that starts before next_seq. */
static tss_reject late_batch(const tss_stream *s, uint64_t first_seq) {
    for (uint32_t g = 0; g < s->ngaps; g++)
        if (first_seq >= s->gap_lo[g] && first_seq < s->gap_hi[g])
            return TSS_REJECT_OUT_OF_ORDER;
    return TSS_REJECT_DUPLICATE;
}

/* The timestamp the first missing sample would have had: known only for a batch given
 * by (first timestamp, period), counting back; 0 otherwise. */
static int64_t expected_ts(const tss_stream *s, const int64_t *ts, int64_t first, int64_t period,
                           uint64_t missing) {
    int64_t back, t;
    if (ts || period <= 0 || missing > INT64_MAX ||
        __builtin_mul_overflow((int64_t)missing, period, &back) ||
        __builtin_sub_overflow(first, back, &t) || t < s->last_ts)
        return 0;
    return t;
}

/* Counts a refusal (per stream when the stream exists) and returns it. */
static tss_reject refuse(tss_engine *e, tss_stream *s, tss_reject why) {
    e->c.rejected[why]++;
    if (s)
        s->rejected++;
    return why;
}

/* The parameters of a new stream from the callback (defaults without one), checked. */
static int params_of_new(tss_engine *e, const char *id, tss_params *p) {
    *p = tss_params_default();
    if (e->opt.params_for && e->opt.params_for(e->opt.user, id, p) != 0)
        return -1;
    return tss_params_check(p, NULL, 0);
}

uint64_t tss_engine_new_stream_bytes(tss_engine *e, const char *stream_id) {
    tss_params p;
    if (params_of_new(e, stream_id, &p) != 0)
        return 0; /* refused at ingest anyway */
    return tss_stream_bytes_for(&p, !e->arena.device);
}

tss_reject tss_engine_ingest(tss_engine *e, const char *stream_id, uint64_t first_seq,
                             const int64_t *timestamps_ns, int64_t first_ts_ns, int64_t period_ns,
                             const double *values, size_t n) {
    return tss_engine_ingest_epoch(e, stream_id, 0, first_seq, timestamps_ns, first_ts_ns,
                                   period_ns, values, n);
}

tss_reject tss_engine_ingest_epoch(tss_engine *e, const char *stream_id, uint64_t epoch,
                                   uint64_t first_seq, const int64_t *timestamps_ns,
                                   int64_t first_ts_ns, int64_t period_ns, const double *values,
                                   size_t n) {
    tss_reject why = check_id(stream_id);
    if (why != TSS_OK)
        return refuse(e, NULL, why);
    tss_stream *s = tss_registry_find(&e->reg, stream_id), *fresh = NULL;
    if (n == 0 || !values)
        return refuse(e, s, TSS_REJECT_EMPTY);
    tss_params p;
    if (!s) {
        if (e->reg.n >= e->opt.max_streams && !tssi_engine_make_room(e))
            return refuse(e, NULL, TSS_REJECT_TOO_MANY_STREAMS);
        if (params_of_new(e, stream_id, &p) != 0)
            return refuse(e, NULL, TSS_REJECT_STREAM_REFUSED);
    } else {
        p = s->p;
    }
    if (n > p.window)
        return refuse(e, s, TSS_REJECT_TOO_LARGE);
    if (first_seq > UINT64_MAX - n) /* the batch's sequence numbers would wrap */
        return refuse(e, s, TSS_REJECT_OUT_OF_ORDER);
    if (s && epoch < s->epoch)
        return refuse(e, s, TSS_REJECT_STALE_EPOCH);
    /* a newer epoch or a reset: the sender starts over, nothing to continue from */
    const int over = s && s->started && (epoch > s->epoch || s->reset_pending);
    const int cont = s && s->started && !over;
    if (cont && first_seq < s->next_seq)               /* before its timestamps: a resent */
        return refuse(e, s, late_batch(s, first_seq)); /* batch is a duplicate first */
    const uint64_t jump = e->opt.limits.max_seq_jump;
    if (cont && jump && first_seq > s->next_seq && first_seq - s->next_seq > jump)
        return refuse(e, s, TSS_REJECT_SEQ_JUMP);
    why = check_samples(timestamps_ns, first_ts_ns, period_ns, values, n, cont, s ? s->last_ts : 0,
                        e);
    if (why != TSS_OK)
        return refuse(e, s, why);

    /* Accepted: allocate everything, then change state. */
    if (!s) {
        if (tss_stream_new(stream_id, &p, &fresh) != 0)
            return refuse(e, NULL, TSS_REJECT_STREAM_REFUSED); /* out of memory */
        s = fresh;
    }
    int gap = cont && first_seq > s->next_seq;
    if (tss_staging_reserve(&s->stage, n, gap || over) != 0 ||
        tssi_engine_reserve_dirty(e, 1) != 0 || (fresh && tss_registry_add(&e->reg, fresh) != 0)) {
        tss_stream *counted = fresh ? NULL : s;
        tss_stream_destroy(&fresh);
        return refuse(e, counted, TSS_REJECT_STREAM_REFUSED); /* out of memory */
    }
    if (fresh)
        s->proc_seq = first_seq;
    if (over) {
        tss_staging_push_mark(&s->stage, (tss_gap_mark){
                                             .seq = first_seq,
                                             .expected = s->next_seq,
                                             .reset = 1,
                                         });
        s->ngaps = s->gap_next = 0; /* the old run's, numbered differently */
        s->reset_pending = 0;
    }
    if (gap) {
        uint64_t missing = first_seq - s->next_seq;
        tss_staging_push_mark(&s->stage, (tss_gap_mark){
                                             .seq = first_seq,
                                             .expected = s->next_seq,
                                             .missing = missing,
                                             .expected_ts = expected_ts(
                                                 s, timestamps_ns, first_ts_ns, period_ns, missing),
                                         });
        s->gap_lo[s->gap_next] = s->next_seq;
        s->gap_hi[s->gap_next] = first_seq;
        s->gap_next = (s->gap_next + 1) % TSS_GAPS_KEPT;
        s->ngaps += s->ngaps < TSS_GAPS_KEPT;
        s->gaps++;
    }
    for (size_t k = 0; k < n; k++) {
        int64_t t = 0;
        sample_ts(timestamps_ns, first_ts_ns, period_ns, k, &t); /* checked above */
        tss_staging_push(&s->stage, values[k], t);
        s->last_ts = t;
    }
    s->started = 1;
    s->epoch = epoch;
    s->next_seq = first_seq + n;
    s->samples += n;
    tssi_engine_touch(e, s);
    e->c.samples += n;
    e->pending += n;
    tssi_engine_mark_dirty(e, s); /* room reserved above */
    return TSS_OK;
}
