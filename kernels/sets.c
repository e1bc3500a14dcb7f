/* SPDX-License-Identifier: Apache-2.0 */
/* sets.c - sorted multiset operations: argument checks, the choice of method, the
 * dispatch on the ctx's backend, and the OpenMP implementations (sets.inc, once per
 * key width). See sets.h for the semantics and the methods. */
#include "sets.h"

#include "omp_team.h"
#include "scan.h"
#include "sets_rule.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A piece whose one side is this many times the other is done by searching the small
 * side in the large one rather than by merging; AUTO takes RANGE_SEARCH for the whole
 * operation from the same ratio (a search costs a few cache misses, a merge step a
 * few cycles: the search wins once tens of elements of the large side fall between
 * two keys of the small one). */
#define GALLOP_RATIO 32

/* Merge steps sampled to choose between the branch-free and the branching merge. */
#define MERGE_SAMPLE 256

/* Equal pairs the branching merge takes at once when a block of both inputs is equal. */
#define EQ_BLOCK 16

/* Bytes ahead at which that loop prefetches both inputs: the hardware prefetchers stop
 * at the 4 KiB page's end, and two streams at this loop's speed outrun them (identical
 * u32 inputs at 10^8 on 2 threads: 16 -> 14 ms; 1 KiB ahead 15 ms, 8 KiB 14.3 ms). */
#define EQ_AHEAD 4096

/* Bytes of one thread's staging buffer for a merge-path piece (it stays in L2). */
#define STAGE_BYTES ((size_t)256 << 10)

/* Above this many input bytes the result is written with streaming stores, which do
 * not read the destination's cache lines first and do not evict the inputs. */
#define STREAM_ABOVE ((size_t)32 << 20)

/* Keys of the small side ahead at which a search piece prefetches the large side's line
 * of the lower bound (found by the search, but evicted from the L1 since). */
#define PIECE_AHEAD 8

/* Merged elements per merge-path piece: about 8 pieces per thread so that pieces of
 * unequal cost even out, at most what fits the staging buffer, at least 4096 so that
 * the cuts (two binary searches each) stay a small part of the work. */
static size_t piece_width(size_t total, int nt, size_t key_bytes) {
    size_t most = STAGE_BYTES / key_bytes, w = total / ((size_t)nt * 8);
    if (nt == 1)
        return total < most ? (total ? total : 1) : most;
    return w < 4096 ? 4096 : w > most ? most : w;
}

/* ---- the merge-path pipeline ---------------------------------------------------- */

/* Staging buffers per thread: how many merged pieces a thread may hold whose output
 * place is not known yet (because an earlier piece is still being merged). */
#define STAGES 4

/* Spins of a thread waiting for an earlier piece's count before it computes that count
 * itself (about the time of one piece): a thread preempted in the middle of a piece
 * then holds the others up for this long, not for its whole time slice. */
#define HELP_AFTER 4096

/* The bookkeeping of the merge-path pieces: the result's size of a piece is published
 * as soon as it is known (by the thread that merged it, or by one that needed it first
 * and counted it itself: the count is deterministic, both store the same value), and
 * output offsets are assigned in piece order by whichever thread advances the frontier
 * over the known counts. A piece's owner copies its staged result once its offset is
 * known. */
typedef struct {
    size_t C;               /* pieces */
    atomic_size_t next;     /* the next piece to take */
    atomic_size_t frontier; /* pieces [0, frontier) have their offsets */
    atomic_flag lock;       /* held while the frontier advances */
    size_t pos;             /* output assigned so far (under lock) */
    atomic_size_t *count;   /* a piece's result size + 1; 0 while unknown */
    size_t *offset;         /* a piece's output offset, valid below the frontier */
    atomic_int failed;      /* a staging buffer could not be allocated */
} pieces;

/* Sets up the bookkeeping of C pieces; -1 when out of memory. */
static int pieces_init(pieces *p, size_t C) {
    p->C = C;
    atomic_init(&p->next, 0);
    atomic_init(&p->frontier, 0);
    atomic_flag_clear(&p->lock);
    atomic_init(&p->failed, 0);
    p->pos = 0;
    p->count = malloc(C * sizeof *p->count);
    p->offset = malloc(C * sizeof *p->offset);
    if (!p->count || !p->offset)
        return -1;
    for (size_t c = 0; c < C; c++)
        atomic_init(&p->count[c], 0);
    return 0;
}

static void pieces_free(pieces *p) {
    free(p->count);
    free(p->offset);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Assigns offsets to the pieces at the frontier whose counts are known. */
static void pieces_advance(pieces *p) {
    while (atomic_flag_test_and_set_explicit(&p->lock, memory_order_acquire))
        cpu_relax();
    size_t f = atomic_load_explicit(&p->frontier, memory_order_relaxed);
    while (f < p->C) {
        size_t v = atomic_load_explicit(&p->count[f], memory_order_acquire);
        if (!v)
            break;
        p->offset[f++] = p->pos;
        p->pos += v - 1;
    }
    atomic_store_explicit(&p->frontier, f, memory_order_release);
    atomic_flag_clear_explicit(&p->lock, memory_order_release);
}

/* Publishes piece c's result size k and moves the frontier on. */
static void pieces_publish(pieces *p, size_t c, size_t k) {
    atomic_store_explicit(&p->count[c], k + 1, memory_order_release);
    pieces_advance(p);
}

/* Whether piece c's offset is known. */
static int pieces_placed(pieces *p, size_t c) {
    return atomic_load_explicit(&p->frontier, memory_order_acquire) > c;
}

/* memcpy, or with streaming (non-temporal) stores for the aligned middle when stream
 * is set: the destination's lines are not read first and the caches keep the inputs.
 * Callers end with store_fence before the data is read by another thread. */
static void copy_out(void *dst, const void *src, size_t bytes, int stream) {
#if defined(__SSE2__)
    if (stream && bytes >= 256) {
        char *d = dst;
        const char *s = src;
        size_t head = (64 - ((uintptr_t)d & 63)) & 63;
        memcpy(d, s, head);
        d += head, s += head, bytes -= head;
        size_t body = bytes & ~(size_t)63;
        for (size_t q = 0; q < body; q += 64) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(s + q));
            __m128i x1 = _mm_loadu_si128((const __m128i *)(s + q + 16));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(s + q + 32));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(s + q + 48));
            _mm_stream_si128((__m128i *)(d + q), x0);
            _mm_stream_si128((__m128i *)(d + q + 16), x1);
            _mm_stream_si128((__m128i *)(d + q + 32), x2);
            _mm_stream_si128((__m128i *)(d + q + 48), x3);
        }
        memcpy(d + body, s + body, bytes - body);
        return;
    }
#endif
    (void)stream;
    if (bytes)
        memcpy(dst, src, bytes);
}

static void store_fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* The CPU bodies, once per key width. */
#define K   uint32_t
#define SFX u32
#include "sets.inc"
#undef K
#undef SFX
#define K   uint64_t
#define SFX u64
#include "sets.inc"
#undef K
#undef SFX

/* ---- names and bounds ------------------------------------------------------------- */

static const char *const op_names[TSM_SET_NOPS] = {"intersect", "union", "difference", "symdiff"};

const char *tsm_set_op_name(tsm_set_op op) {
    return (unsigned)op < TSM_SET_NOPS ? op_names[op] : "?";
}

int tsm_set_op_parse(const char *s, tsm_set_op *out) {
    for (int q = 0; q < TSM_SET_NOPS; q++)
        if (strcmp(s, op_names[q]) == 0) {
            *out = (tsm_set_op)q;
            return 0;
        }
    return -1;
}

const char *tsm_set_method_name(tsm_set_method m) {
    switch (m) {
    case TSM_SET_AUTO: return "auto";
    case TSM_SET_MERGE_PATH: return "merge_path";
    case TSM_SET_RANGE_SEARCH: return "range_search";
    }
    return "?";
}

size_t tsm_set_bound(tsm_set_op op, size_t na, size_t nb) {
    switch (op) {
    case TSM_SET_INTERSECT: return na < nb ? na : nb;
    case TSM_SET_DIFFERENCE: return na;
    case TSM_SET_UNION:
    case TSM_SET_SYMDIFF: break;
    }
    return na > SIZE_MAX - nb ? SIZE_MAX : na + nb;
}

/* ---- entry points ----------------------------------------------------------------- */

static tsm_status check_set(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const void *a,
                            size_t na, const void *b, size_t nb, size_t *count) {
    if (!count)
        return tsm_fail(ctx, TSM_EINVAL, "sets: NULL count");
    *count = 0;
    if ((unsigned)op >= TSM_SET_NOPS)
        return tsm_fail(ctx, TSM_EINVAL, "sets: unknown operation %d", (int)op);
    if ((unsigned)method > TSM_SET_RANGE_SEARCH)
        return tsm_fail(ctx, TSM_EINVAL, "sets: unknown method %d", (int)method);
    if ((na > 0 && !a) || (nb > 0 && !b))
        return tsm_fail(ctx, TSM_EINVAL, "sets: NULL input with %zu and %zu elements", na, nb);
    if (na > SIZE_MAX / 2 - nb)
        return tsm_fail(ctx, TSM_EINVAL, "sets: %zu + %zu elements are too many", na, nb);
    return TSM_OK;
}

/* The CPU's choice: searching wins once one side is GALLOP_RATIO times the other. */
static tsm_set_method cpu_method(tsm_set_method m, size_t na, size_t nb) {
    if (m != TSM_SET_AUTO)
        return m;
    size_t lo = na < nb ? na : nb, hi = na < nb ? nb : na;
    return lo > 0 && hi / GALLOP_RATIO >= lo ? TSM_SET_RANGE_SEARCH : TSM_SET_MERGE_PATH;
}

/* Once per key width: the public entry points (sets_api.inc: tsm_set_with_SFX,
 * tsm_set_SFX, tsm_first_descent_SFX). */
#define K   uint32_t
#define SFX u32
#include "sets_api.inc"
#undef K
#undef SFX
#define K   uint64_t
#define SFX u64
#include "sets_api.inc"
#undef K
#undef SFX
