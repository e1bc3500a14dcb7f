/* SPDX-License-Identifier: Apache-2.0 */
/* test_fault.h - the test-only hook TSMINE_TEST_FAULT (its contract: engine.h, at
 * tss_engine_device_lost): a sticky device error on demand, for the tests of the
 * device-loss path (tests/stream_fault_test.c, tests/integration/fault_test.py, which
 * drives the production tsmined, so the hook is built into every binary). Internal.
 *
 * What it costs where it is off: tss_engine_new reads the variable once, and each
 * round of a tick tests one flag (tssi_test_fault_armed) before its online phase; the
 * rest lives in test_fault.c, off the hot path. */
#ifndef TSS_TEST_FAULT_H
#define TSS_TEST_FAULT_H

#include <stddef.h>

#include "engine_impl.h"

/* Reads TSMINE_TEST_FAULT into e->fault_after and e->fault_trap: unset or empty leaves
 * it off (-1); "device_lost:N" or "device_trap:N" arms it; anything else is refused, so
 * that a mistyped value cannot pass for a test of the fault path. 0 or -1 with err. */
int tssi_test_fault_read(tss_engine *e, char *err, unsigned errlen);
/* Whether the hook suits e's resolved backend (device_trap needs cuda). 0 or -1 with
 * err. */
int tssi_test_fault_check(const tss_engine *e, char *err, unsigned errlen);

/* Whether the hook is armed: the one test the hot path pays for it, once a round. */
static inline int tssi_test_fault_armed(const tss_engine *e) {
    return e->fault_after >= 0;
}

/* A round's online phase (tss_online_round over act[0..nact)) with the hook armed: the
 * first tick after fault_after ticks with work fails on the device, by a trapping
 * kernel before the round (device_trap) or by its status replaced with TSM_EDEVICE
 * (device_lost), so that the caller's real path runs. */
tsm_status tssi_test_fault_round(tss_engine *e, tss_stream **act, size_t nact);

#endif
