/* SPDX-License-Identifier: Apache-2.0 */
/* resources.h - the process's resource limits at start, and the guard's budgets made
 * from them (issue 17 item 9; guard.h).
 *
 *   descriptors     RLIMIT_NOFILE: the soft limit is raised to the hard one (at most
 *                   65536), or under an address-space limit to what the connections'
 *                   address space allows; the guard keeps a reserve of it free for
 *                   control clients, checkpoints and /metrics, and shares the rest among
 *                   the sockets.
 *   address space   RLIMIT_AS (ulimit -v, LimitAS=): when finite, new threads get 1 MiB
 *                   stacks instead of 8 MiB (a thread's stack is reserved address
 *                   space: under `ulimit -v 48M` libzmq's third thread did not fit and
 *                   libzmq aborted at start) and malloc one arena (each more reserves
 *                   64 MiB), threads are tried before libzmq needs them, so that a start
 *                   that cannot work says why, and the guard keeps the address space in
 *                   use clear of the limit.
 *   memory          limits.memory_budget, or by default half the RAM, and at most 3/4 of
 *                   the cgroup's memory.high / memory.max (the unit's MemoryHigh=,
 *                   MemoryMax=), so that the daemon sheds before the kernel reclaims or
 *                   kills. */
#ifndef TSD_RESOURCES_H
#define TSD_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "daemon/guard/guard.h"
#include "daemon/guard/sockets.h"

typedef struct {
    uint64_t nofile;                  /* RLIMIT_NOFILE in force (soft) */
    uint64_t address_space;           /* RLIMIT_AS, 0: unlimited */
    uint64_t ram;                     /* physical memory */
    uint64_t cgroup_high, cgroup_max; /* this process's cgroup memory.high / memory.max; 0: none */
} tsd_resources;

/* Reads the limits, raises the descriptor limit, and under an address-space limit
 * shrinks thread stacks and checks that the threads the daemon needs can start. Logs
 * what it found. 0, or -1 with the cause in err ("cannot start a thread: ... the address
 * space is limited to N MB (ulimit -v) ..."). Call before any thread starts. */
int tsd_resources_init(tsd_resources *r, char *err, size_t errlen);

/* Under an address-space limit, lowers the descriptor limit (soft) so that the
 * connections libzmq may accept beyond the `open` descriptors fit in half of room, the
 * address space left below the guard's margin (at least PEERS_MIN of them): libzmq
 * accepts every connection and aborts when an allocation fails, and the guard's cuts
 * come a look later [under ulimit -v 128M, about 1,000 idle connections aborted it].
 * The kernel then refuses the rest (libzmq retries the accept). No-op without the
 * limit. Call once the sockets are bound, before the guard starts. */
void tsd_resources_fit_descriptors(tsd_resources *r, uint64_t room, uint64_t open);

/* The memory budget in resident bytes: cfg's limits.memory_budget, else the default
 * above. */
uint64_t tsd_resources_budget(const tsd_resources *r, const tsc_config *cfg);

/* The guard's limits for the sockets s opened from cfg. */
void tsd_resources_guard_limits(const tsd_resources *r, const tsc_config *cfg, const tsd_sockets *s,
                                tsd_guard_limits *out);

#endif
