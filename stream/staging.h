/* SPDX-License-Identifier: Apache-2.0 */
/* staging.h - the samples of one stream accepted by ingest and not yet processed by a
 * tick (DESIGN 5.1 "host staging"), with the gaps found between them.
 *
 * A FIFO of (value, timestamp) pairs plus gap marks: a mark at staged index `at` says
 * that the samples from `at` on follow a jump in sequence numbers, so the tick emits a
 * GAP and restarts the window before it appends them (or, for a reset mark, a RESET:
 * the sender started over). Host memory, grown by doubling;
 * the tick consumes from the head and compacts at its end. */
#ifndef TSS_STAGING_H
#define TSS_STAGING_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t seq;        /* sequence number of the first sample after the gap */
    uint64_t expected;   /* the first missing sequence number */
    uint64_t missing;    /* seq - expected */
    int64_t expected_ts; /* timestamp the first missing sample would have had, 0 if unknown */
    size_t at;           /* staged index of the first sample after the gap */
    int reset;           /* not a gap: the sender started over at seq (a new epoch, a reset;
                          * expected is where the old run had got to, missing 0) */
} tss_gap_mark;

typedef struct {
    double *v;
    int64_t *ts;
    size_t head, n, cap; /* pending samples are [head, n) */
    tss_gap_mark *mark;
    size_t mhead, nmark, mcap; /* pending marks are [mhead, nmark), by increasing at */
} tss_staging;

void tss_staging_free(tss_staging *q);
/* Makes room for more samples and marks so that the appends that follow cannot fail;
 * 0 or -1 (out of memory, nothing changed). */
int tss_staging_reserve(tss_staging *q, size_t samples, size_t marks);
/* Appends a sample / a mark before the next sample (room reserved). */
static inline void tss_staging_push(tss_staging *q, double v, int64_t ts) {
    q->v[q->n] = v;
    q->ts[q->n] = ts;
    q->n++;
}
void tss_staging_push_mark(tss_staging *q, tss_gap_mark mark);
static inline size_t tss_staging_pending(const tss_staging *q) {
    return q->n - q->head;
}
/* The mark at the head (the next sample follows a gap), or NULL. */
const tss_gap_mark *tss_staging_head_mark(const tss_staging *q);
void tss_staging_pop_mark(tss_staging *q);
/* Pending samples before the next mark (all of them when there is none). */
size_t tss_staging_run(const tss_staging *q);
/* Drops k samples from the head. */
static inline void tss_staging_consume(tss_staging *q, size_t k) {
    q->head += k;
}
/* Moves what is pending to the front and releases a large buffer once it is empty. */
void tss_staging_compact(tss_staging *q);

#endif
