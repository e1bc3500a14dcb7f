/* SPDX-License-Identifier: Apache-2.0 */
/* notify.h - the systemd service protocol (sd_notify(3)): READY=1 once every socket is
 * bound and the checkpoint restored, STATUS= lines, WATCHDOG=1 from the main loop at
 * half of WatchdogSec, STOPPING=1. All no-ops outside systemd (no $NOTIFY_SOCKET) and
 * in builds without libsystemd (TSMINE_HAVE_SYSTEMD undefined). */
#ifndef TSD_NOTIFY_H
#define TSD_NOTIFY_H

#include <stdint.h>

typedef struct {
    uint64_t watchdog_ns; /* interval between WATCHDOG=1; 0 = no watchdog */
    uint64_t next_watchdog;
} tsd_notify;

/* Reads the watchdog interval ($WATCHDOG_USEC through sd_watchdog_enabled) and
 * sends nothing. */
void tsd_notify_init(tsd_notify *n);
void tsd_notify_ready(const char *status);
void tsd_notify_status(const char *status);
void tsd_notify_stopping(void);
/* Sends WATCHDOG=1 when due at now_ns (monotonic); O(1). */
void tsd_notify_watchdog(tsd_notify *n, uint64_t now_ns);
/* Nanoseconds until the next WATCHDOG=1 is due (UINT64_MAX without a watchdog), for
 * the poll timeout. */
uint64_t tsd_notify_watchdog_wait(const tsd_notify *n, uint64_t now_ns);

#endif
