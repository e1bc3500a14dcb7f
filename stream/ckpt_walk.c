/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_walk.c - incremental checkpoints: the groups of streams (engine.h, TSS_CKPT_GROUPS)
 * whose streams changed since they were last serialised, found by each stream's
 * fingerprint and serialised in steps of bounded time (tss_ckpt_walk_*); the records go
 * to a sink, which writes them into files with tss_ckpt_file_* (checkpoint.c). */
#include "ckpt_record.h"
#include "engine_checkpoint.h"
#include "engine_impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

unsigned tss_ckpt_group(const char *id) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (h ^ (h >> 16)) % TSS_CKPT_GROUPS;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

static uint64_t mix_f64(uint64_t h, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return mix(h, u);
}

static uint64_t mix_params(uint64_t h, const tss_params *p) {
    h = mix(h, (uint64_t)p->window << 32 | p->subsequence);
    h = mix(h, (uint64_t)p->hop << 32 | p->excl);
    h = mix(h, (uint64_t)p->warmup << 32 | p->references);
    h = mix(h, (uint64_t)p->motif << 1 | (uint64_t)p->left_discord);
    h = mix_f64(h, p->threshold);
    h = mix_f64(h, p->threshold_end);
    return mix_f64(h, p->range);
}

/* Every change to a stream's saved state moves one of these: samples accepted or
 * refused (counters, sequence numbers), processed (proc_seq, fill), passes run
 * (since_pass) and published (spans, pairs, alert counts), events, restarts, resets,
 * new parameters, a recalibration, a value added to the magnitude history or the
 * history emptied (its count, head and last value, its refresh count and statistics).
 * O(1): about 50 ns. */
uint64_t tss_stream_fingerprint(const tss_stream *s) {
    const tss_detect *d = &s->det;
    uint64_t h = 0x243F6A8885A308D3ull;
    h = mix(h, s->samples), h = mix(h, s->rejected), h = mix(h, s->gaps);
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        h = mix(h, s->alerts[k]);
    h = mix(h, s->proc_seq), h = mix(h, s->since_pass);
    h = mix(h, (uint64_t)s->ring.fill << 32 | s->ring.head);
    h = mix(h, s->next_seq), h = mix(h, (uint64_t)s->last_ts), h = mix(h, s->epoch);
    h = mix(h, (uint64_t)s->started << 1 | (uint64_t)s->reset_pending);
    h = mix(h, (uint64_t)s->ngaps << 32 | s->gap_next);
    h = mix(h, tss_staging_pending(&s->stage)), h = mix(h, s->stage.nmark - s->stage.mhead);
    h = mix(h, d->events), h = mix(h, d->npub), h = mix(h, d->nmotif);
    h = mix(h, (uint64_t)d->open << 8 | (uint64_t)d->tail), h = mix(h, d->below);
    h = mix(h, d->first), h = mix(h, d->last), h = mix(h, d->peak.start_seq);
    h = mix(h, (uint64_t)d->cal.n << 32 | d->cal.head), h = mix_f64(h, d->last_value);
    const tss_robust *g = &d->mag;
    h = mix(h, (uint64_t)g->n << 32 | g->head), h = mix(h, (uint64_t)g->since << 1 | !!g->ready);
    h = mix_f64(h, g->n ? g->ring[(g->head + TSS_ROBUST_HISTORY - 1) % TSS_ROBUST_HISTORY] : 0.0);
    h = mix_f64(mix_f64(h, g->med), g->mad);
    h = mix(h, (uint64_t)s->period << 32 | s->next_check);
    h = mix_params(mix_params(h, &s->cfg), &s->p);
    return h | 1; /* 0: never written */
}

/* A stream of a group to write: its group and creation index (streams are found again
 * by index: one may be removed between two steps). */
typedef struct {
    uint32_t group;
    uint64_t index;
} member;

struct tss_ckpt_walk {
    int full;
    int phase;                     /* 0: looking at every stream, 1: writing groups, 2: done */
    uint64_t cursor;               /* phase 0: the next creation index to look at */
    int64_t disk[TSS_CKPT_GROUPS]; /* streams in each group's file (-1: unknown) */
    uint32_t mem[TSS_CKPT_GROUPS]; /* streams of each group in the engine */
    unsigned char dirty[TSS_CKPT_GROUPS];
    member *m;               /* phase 0: every stream; phase 1: those of dirty groups */
    size_t n, cap, at;       /* phase 1: the next member to write */
    uint32_t group, written; /* phase 1: the group being written, its records so far */
    tss_ckpt_walk_stats st;
};

int tss_ckpt_walk_new(const int64_t *disk, int full, tss_ckpt_walk **out) {
    tss_ckpt_walk *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->full = full;
    memcpy(w->disk, disk, sizeof w->disk);
    *out = w;
    return 0;
}

void tss_ckpt_walk_destroy(tss_ckpt_walk **self_p) {
    if (*self_p) {
        free((*self_p)->m);
        free(*self_p);
        *self_p = NULL;
    }
}

const tss_ckpt_walk_stats *tss_ckpt_walk_stats_of(const tss_ckpt_walk *w) {
    return &w->st;
}

/* The position in e's list (creation order, indexes increasing) of the first stream
 * whose index is >= index. O(log n). */
static size_t position_of(const tss_engine *e, uint64_t index) {
    size_t lo = 0, hi = e->reg.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->reg.list[mid]->index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first dirty group at or after g (TSS_CKPT_GROUPS: none). */
static uint32_t next_dirty(const tss_ckpt_walk *w, uint32_t g) {
    while (g < TSS_CKPT_GROUPS && !w->dirty[g])
        g++;
    return g;
}

/* Phase 0, until the deadline: looks at the streams from the cursor on, noting each
 * one's group and whether it changed. Returns 1 once every stream was seen. */
static int look(tss_engine *e, tss_ckpt_walk *w, double deadline) {
    const size_t first = position_of(e, w->cursor);
    for (size_t k = first; k < e->reg.n; k++) {
        if (k > first && (k & 63) == 0 && tssi_now() >= deadline)
            return 0; /* (at least one stream a step) */
        tss_stream *s = e->reg.list[k];
        if (w->n == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 1024;
            member *m = realloc(w->m, cap * sizeof *m);
            if (!m)
                return -1;
            w->m = m, w->cap = cap;
        }
        const uint32_t g = tss_ckpt_group(s->id);
        w->m[w->n++] = (member){g, s->index};
        w->mem[g]++;
        if (s->ckpt_mark != tss_stream_fingerprint(s))
            w->dirty[g] = 1;
        w->cursor = s->index + 1;
    }
    /* a group is written when a stream of it changed, or its file holds another number
     * of streams (one was removed, or the file's count is unknown) */
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        w->dirty[g] |= w->full || w->disk[g] != (int64_t)w->mem[g];
    /* the members of dirty groups, by group, each group's in creation order: a counting
     * sort (O(n): a qsort of 10^4 members alone took a millisecond) */
    size_t at[TSS_CKPT_GROUPS + 1] = {0};
    for (size_t k = 0; k < w->n; k++)
        at[w->m[k].group + 1] += w->dirty[w->m[k].group];
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        at[g + 1] += at[g];
    const size_t kept = at[TSS_CKPT_GROUPS];
    member *sorted = kept ? malloc(kept * sizeof *sorted) : NULL;
    if (kept && !sorted)
        return -1;
    for (size_t k = 0; k < w->n; k++)
        if (w->dirty[w->m[k].group])
            sorted[at[w->m[k].group]++] = w->m[k];
    free(w->m);
    w->m = sorted, w->n = w->cap = kept;
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        w->st.groups += w->dirty[g];
    w->group = next_dirty(w, 0);
    return 1;
}

/* The calling thread's CPU time, in seconds. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tss_ckpt_walk_step(tss_engine *e, tss_ckpt_walk *w, double budget_s, int may_join,
                       const tss_ckpt_sink *sink) {
    const double t0 = tssi_now(), deadline = t0 + budget_s, c0 = thread_cpu();
    int rc = 0;
    if (w->phase == 0) {
        rc = look(e, w, deadline);
        if (rc == 1)
            w->phase = 1, rc = 0;
    }
    tssi_ckbuf b = {0};
    int did = 0; /* records this step: the first one goes whatever the deadline */
    while (w->phase == 1 && rc == 0) {
        if (w->group == TSS_CKPT_GROUPS) {
            w->phase = 2;
            break;
        }
        if (w->at < w->n && w->m[w->at].group == w->group) {
            if ((did && tssi_now() >= deadline) || !sink->room(sink->user))
                break;
            const size_t k = position_of(e, w->m[w->at].index);
            tss_stream *s = k < e->reg.n && e->reg.list[k]->index == w->m[w->at].index
                                ? e->reg.list[k]
                                : NULL; /* NULL: removed since */
            if (s && s->inflight) {     /* its join changes what it published */
                if (!may_join)
                    break; /* a later step, once a tick joined it */
                tssi_engine_join(e, 1, NULL, 0);
            }
            if (s) {
                b = (tssi_ckbuf){0};
                tssi_ckpt_record_put(&b, s);
                if (b.failed) {
                    free(b.p);
                    rc = -1;
                    break;
                }
                s->ckpt_mark = tss_stream_fingerprint(s);
                did++, w->written++, w->st.records++, w->st.bytes += b.n;
                sink->record(sink->user, w->group, b.p, b.n); /* takes b.p */
            }
            w->at++;
            continue;
        }
        sink->end(sink->user, w->group, w->written);
        w->written = 0;
        w->group = next_dirty(w, w->group + 1);
    }
    const double held = tssi_now() - t0;
    w->st.held_s += held;
    if (held > w->st.max_held_s)
        w->st.max_held_s = held;
    const double cpu = thread_cpu() - c0;
    if (cpu > w->st.max_cpu_s)
        w->st.max_cpu_s = cpu;
    return rc < 0 ? -1 : w->phase == 2;
}
