/* SPDX-License-Identifier: Apache-2.0 */
/* slide.c - extremes of a forward-moving run by monotonic queues (slide.h). */
#include "slide.h"

#include <stdlib.h>

static void q_free(tss_monoq *q) {
    free(q->seq);
    free(q->v);
    *q = (tss_monoq){0};
}

/* Room for one more entry (a capacity doubled from 64: always a power of two); 0 or -1. */
static int q_room(tss_monoq *q) {
    if (q->n < q->cap)
        return 0;
    const uint32_t cap = q->cap ? 2 * q->cap : 64;
    uint64_t *seq = malloc(cap * sizeof *seq);
    double *v = malloc(cap * sizeof *v);
    if (!seq || !v || cap < q->cap) {
        free(seq);
        free(v);
        return -1;
    }
    for (uint32_t k = 0; k < q->n; k++) { /* unrolled from the ring, oldest first */
        const uint32_t at = (q->head + k) & (q->cap - 1);
        seq[k] = q->seq[at], v[k] = q->v[at];
    }
    free(q->seq);
    free(q->v);
    q->seq = seq, q->v = v, q->head = 0, q->cap = cap;
    return 0;
}

/* The newest entry's slot (cap is a power of two). */
static uint32_t q_back(const tss_monoq *q) {
    return (q->head + q->n - 1) & (q->cap - 1);
}

/* Sample (seq, v) enters: the entries it dominates (worse or equal, `below` telling
 * which way) leave from the back first. 0 or -1. */
static int q_push(tss_monoq *q, uint64_t seq, double v, int below) {
    while (q->n && (below ? q->v[q_back(q)] >= v : q->v[q_back(q)] <= v))
        q->n--;
    if (q->n == q->cap && q_room(q) != 0)
        return -1;
    const uint32_t at = (q->head + q->n) & (q->cap - 1);
    q->seq[at] = seq, q->v[at] = v;
    q->n++;
    return 0;
}

/* The entries before sequence number a leave from the front. */
static void q_drop(tss_monoq *q, uint64_t a) {
    while (q->n && q->seq[q->head] < a) {
        q->head = (q->head + 1) & (q->cap - 1);
        q->n--;
    }
}

void tss_slide_free(tss_slide *s) {
    q_free(&s->lo);
    q_free(&s->hi);
    *s = (tss_slide){0};
}

void tss_slide_reset(tss_slide *s) {
    s->lo.n = s->hi.n = 0;
    s->valid = 0;
}

int tss_slide_to(tss_slide *s, const double *x, uint64_t x0, uint64_t a, uint64_t b, double *lo,
                 double *hi) {
    uint64_t from = s->b;
    if (!s->valid || a < s->a || b < s->b || a >= s->b) { /* not a continuation: afresh */
        tss_slide_reset(s);
        from = a;
    }
    for (uint64_t k = from; k < b; k++) {
        const double v = x[k - x0];
        if (q_push(&s->lo, k, v, 1) != 0 || q_push(&s->hi, k, v, 0) != 0) {
            tss_slide_reset(s);
            return -1;
        }
    }
    q_drop(&s->lo, a);
    q_drop(&s->hi, a);
    s->a = a, s->b = b, s->valid = 1;
    *lo = s->lo.v[s->lo.head];
    *hi = s->hi.v[s->hi.head];
    return 0;
}
