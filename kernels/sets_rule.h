/* SPDX-License-Identifier: Apache-2.0 */
/* sets_rule.h - the rules of sets.h that both backends apply, written once: what each
 * operation emits (and so how many copies of a key it keeps), and how a cut pairs the
 * copies of a key whose run crosses it. Plain C, usable from CUDA device code too (as
 * distance.h): sets.c / sets.inc and the CUDA files include it.
 *
 * Indices are size_t in C; in CUDA (C++) the functions on indices are templates on the
 * index type, so a tile's 32-bit indices stay 32-bit: TSMI_SET_IDX names that type. */
#ifndef TSM_SETS_RULE_H
#define TSM_SETS_RULE_H

#include "sets.h"

#ifdef __cplusplus
#define TSMI_SET_CONSTEXPR    constexpr
#define TSMI_SET_IDX_TEMPLATE template <typename TSMI_SET_IDX>
#else
#define TSMI_SET_CONSTEXPR
#define TSMI_SET_IDX_TEMPLATE
#define TSMI_SET_IDX size_t
#endif

/* What an operation emits, merging A and B in order, a copy of A first on ties: an
 * element of A without a partner in B (a), one of B without a partner in A (b), one
 * copy per matched pair (eq). Each is 0 or 1. */
typedef struct {
    int a, b, eq;
} tsmi_set_emits;

static inline TSMI_SET_CONSTEXPR TSM_HD tsmi_set_emits tsmi_set_emits_row(int a, int b, int eq) {
    tsmi_set_emits e = {a, b, eq};
    return e;
}

/* The table of the four operations (sets.h), a row each: A alone, B alone, pair. For a
 * key with ca copies in A and cb in B, min(ca, cb) copies are paired and the rest of
 * the longer run has no partners. */
static inline TSMI_SET_CONSTEXPR TSM_HD tsmi_set_emits tsmi_set_emits_of(tsm_set_op op) {
    switch (op) {
    case TSM_SET_INTERSECT: return tsmi_set_emits_row(0, 0, 1);  /* min(ca, cb) */
    case TSM_SET_UNION: return tsmi_set_emits_row(1, 1, 1);      /* max(ca, cb) */
    case TSM_SET_DIFFERENCE: return tsmi_set_emits_row(1, 0, 0); /* max(0, ca - cb) */
    case TSM_SET_SYMDIFF: return tsmi_set_emits_row(1, 1, 0);    /* |ca - cb| */
    }
    return tsmi_set_emits_row(0, 0, 0);
}

/* The copies of one key that e keeps from ca copies in A and cb in B: the pairs when
 * e.eq, the unpaired rest of A's run when e.a, of B's when e.b. The result of a piece
 * that is one run of a single key (sets.inc's piece, sets_merge.cu's one_key_tile). */
TSMI_SET_IDX_TEMPLATE
static inline TSMI_SET_CONSTEXPR TSM_HD TSMI_SET_IDX tsmi_set_copies(tsmi_set_emits e,
                                                                     TSMI_SET_IDX ca,
                                                                     TSMI_SET_IDX cb) {
    const TSMI_SET_IDX pairs = ca < cb ? ca : cb;
    return (e.eq ? pairs : 0) + (e.a ? ca - pairs : 0) + (e.b ? cb - pairs : 0);
}

/* The balanced cut in a run of one key that crosses the merge-path cut (*pi, *pj): the
 * run is a[la, ua) and b[lb, ub). The t copies before the cut become t/2 from each
 * operand (t rounded down to even) while both runs last, else all of the shorter run
 * and the rest of t from the longer (sets.h, tsmi_set_split). Every piece between two
 * cuts then holds, of every key, paired copies or the tail of a run without partners,
 * so the pieces' own counts add up to the whole's. */
TSMI_SET_IDX_TEMPLATE
static inline TSM_HD void tsmi_set_pair_run(TSMI_SET_IDX la, TSMI_SET_IDX ua, TSMI_SET_IDX lb,
                                            TSMI_SET_IDX ub, TSMI_SET_IDX *pi, TSMI_SET_IDX *pj) {
    const TSMI_SET_IDX ca = ua - la, cb = ub - lb, t = (*pi - la) + (*pj - lb),
                       mn = ca < cb ? ca : cb;
    TSMI_SET_IDX ra, rb;
    if (t <= 2 * mn)
        ra = rb = t / 2;
    else if (ca >= cb)
        rb = cb, ra = t - cb;
    else
        ra = ca, rb = t - ca;
    *pi = la + ra, *pj = lb + rb;
}

#undef TSMI_SET_CONSTEXPR
#undef TSMI_SET_IDX_TEMPLATE
#ifndef __cplusplus
#undef TSMI_SET_IDX
#endif
#endif
