/* SPDX-License-Identifier: Apache-2.0 */
/* test_fault.c - the test-only hook TSMINE_TEST_FAULT (test_fault.h; contract in
 * engine.h): parsing it at creation, and the online phase of a round while it is armed.
 * Nothing here runs in a tick unless the variable was set. */
#include "test_fault.h"
#ifdef TSMINE_HAVE_CUDA
#include "cuda_backend.h" /* tsmi_cuda_test_trap */
#endif

#include "online_round.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int tssi_test_fault_read(tss_engine *e, char *err, unsigned errlen) {
    static const char *const kinds[] = {"device_lost:", "device_trap:"};
    const char *v = getenv("TSMINE_TEST_FAULT");
    e->fault_after = -1;
    if (!v || !*v)
        return 0;
    for (int trap = 0; trap < 2; trap++) {
        const size_t len = strlen(kinds[trap]);
        if (strncmp(v, kinds[trap], len) != 0 || !isdigit((unsigned char)v[len]))
            continue;
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v + len, &end, 10);
        if (*end == '\0' && errno == 0 && n <= LLONG_MAX) {
            e->fault_after = (long long)n;
            e->fault_trap = trap;
            return 0;
        }
    }
    tssi_say(err, errlen,
             "TSMINE_TEST_FAULT=\"%.64s\": expected device_lost:N or device_trap:N (a "
             "test-only hook)",
             v);
    return -1;
}

int tssi_test_fault_check(const tss_engine *e, char *err, unsigned errlen) {
    if (!e->fault_trap || e->backend == TSM_BACKEND_CUDA)
        return 0;
    tssi_say(err, errlen, "TSMINE_TEST_FAULT=device_trap:N needs the cuda backend, not %s",
             tsm_backend_name(e->backend));
    return -1;
}

/* device_trap: before the round, a kernel that executes a trap instruction poisons the
 * CUDA context for real (a sticky cudaErrorLaunchFailure), so the round's own checks
 * report TSM_EDEVICE and the real path runs. device_lost: the round's status becomes
 * TSM_EDEVICE with a message on the ctx, as a kernel that hit a sticky error returns it;
 * the device itself is left untouched. Either fires in the first tick after fault_after
 * ticks with work. */
tsm_status tssi_test_fault_round(tss_engine *e, tss_stream **act, size_t nact) {
    const int due = e->ticks_with_work > (uint64_t)e->fault_after;
#ifdef TSMINE_HAVE_CUDA
    if (e->fault_trap && due)
        (void)tsmi_cuda_test_trap(e->wide); /* its failure shows in the round that follows */
#endif
    tsm_status st = tss_online_round(e->wide, &e->arena, act, nact, e->opt.on_score, e->opt.user);
    if (e->fault_trap || !due || st != TSM_OK)
        return st;
    return tsm_fail(e->wide, TSM_EDEVICE,
                    "test fault injected after %lld ticks (TSMINE_TEST_FAULT=device_lost:%lld)",
                    e->fault_after, e->fault_after);
}
