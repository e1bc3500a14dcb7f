/* SPDX-License-Identifier: Apache-2.0 */
/* omp_team.h - the few OpenMP queries the CPU kernels share, written once so that the
 * code reads the same with and without OpenMP (internal). */
#ifndef TSM_OMP_TEAM_H
#define TSM_OMP_TEAM_H

#include "tsm.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Work below this many elements runs on one thread: a parallel region costs more. */
#define TSMI_SERIAL_BELOW ((size_t)1 << 15)

/* Threads to use for n elements of work. */
static inline int tsmi_threads_for(const tsm_ctx *ctx, size_t n) {
    int t = tsm_ctx_threads(ctx);
    return n < TSMI_SERIAL_BELOW || t < 1 ? 1 : t;
}

/* This thread's number in the current team, and the team's size. */
static inline int tsmi_thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int tsmi_team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

#endif
