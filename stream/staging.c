/* SPDX-License-Identifier: Apache-2.0 */
/* staging.c - see staging.h. */
#include "staging.h"

#include <stdlib.h>
#include <string.h>

/* Buffers larger than this many samples are released when the staging empties, so a
 * burst does not pin memory for good. */
#define KEEP_CAP 4096

void tss_staging_free(tss_staging *q) {
    free(q->v);
    free(q->ts);
    free(q->mark);
    *q = (tss_staging){0};
}

/* A doubled capacity of at least need (from 64); 0 when that would overflow bytes. */
static size_t grown(size_t cap, size_t need, size_t size) {
    size_t c = cap ? cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            return 0;
        c *= 2;
    }
    return c;
}

int tss_staging_reserve(tss_staging *q, size_t samples, size_t marks) {
    if (samples > SIZE_MAX / 2 - q->n || marks > SIZE_MAX / 2 - q->nmark)
        return -1;
    if (q->n + samples > q->cap) {
        /* v may grow while ts fails: cap (the room in both) then stays as it was */
        size_t c = grown(q->cap, q->n + samples, sizeof *q->v);
        double *v = c ? realloc(q->v, c * sizeof *v) : NULL;
        if (!v)
            return -1;
        q->v = v;
        int64_t *ts = realloc(q->ts, c * sizeof *ts);
        if (!ts)
            return -1;
        q->ts = ts;
        q->cap = c;
    }
    if (q->nmark + marks > q->mcap) {
        size_t c = grown(q->mcap, q->nmark + marks, sizeof *q->mark);
        tss_gap_mark *mk = c ? realloc(q->mark, c * sizeof *mk) : NULL;
        if (!mk)
            return -1;
        q->mark = mk;
        q->mcap = c;
    }
    return 0;
}

void tss_staging_push_mark(tss_staging *q, tss_gap_mark mark) {
    mark.at = q->n;
    q->mark[q->nmark++] = mark;
}

const tss_gap_mark *tss_staging_head_mark(const tss_staging *q) {
    if (q->mhead < q->nmark && q->mark[q->mhead].at == q->head)
        return &q->mark[q->mhead];
    return NULL;
}

void tss_staging_pop_mark(tss_staging *q) {
    q->mhead++;
}

size_t tss_staging_run(const tss_staging *q) {
    if (q->mhead < q->nmark)
        return q->mark[q->mhead].at - q->head;
    return q->n - q->head;
}

void tss_staging_compact(tss_staging *q) {
    size_t left = q->n - q->head;
    if (left == 0 && q->cap > KEEP_CAP) {
        tss_staging_free(q);
        return;
    }
    if (q->head > 0) {
        memmove(q->v, q->v + q->head, left * sizeof *q->v);
        memmove(q->ts, q->ts + q->head, left * sizeof *q->ts);
    }
    size_t marks = q->nmark - q->mhead;
    for (size_t k = 0; k < marks; k++) {
        q->mark[k] = q->mark[q->mhead + k];
        q->mark[k].at -= q->head;
    }
    q->head = 0;
    q->n = left;
    q->mhead = 0;
    q->nmark = marks;
}
