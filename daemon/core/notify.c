/* SPDX-License-Identifier: Apache-2.0 */
/* notify.c - sd_notify calls, compiled out without libsystemd. */
#include "daemon/core/notify.h"

#ifdef TSMINE_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#define NOTIFY(...) sd_notifyf(0, __VA_ARGS__)
#else
#define NOTIFY(...) ((void)0)
#endif

void tsd_notify_init(tsd_notify *n) {
    n->watchdog_ns = 0;
    n->next_watchdog = 0;
#ifdef TSMINE_HAVE_SYSTEMD
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        n->watchdog_ns = usec * 1000ull / 2; /* sd_watchdog_enabled(3): ping at half */
#endif
}

void tsd_notify_ready(const char *status) {
    NOTIFY("READY=1\nSTATUS=%s", status);
}
void tsd_notify_status(const char *status) {
    NOTIFY("STATUS=%s", status);
}
void tsd_notify_stopping(void) {
    NOTIFY("STOPPING=1\nSTATUS=stopping");
}

void tsd_notify_watchdog(tsd_notify *n, uint64_t now_ns) {
    if (!n->watchdog_ns || now_ns < n->next_watchdog)
        return;
    NOTIFY("WATCHDOG=1");
    n->next_watchdog = now_ns + n->watchdog_ns;
}

uint64_t tsd_notify_watchdog_wait(const tsd_notify *n, uint64_t now_ns) {
    if (!n->watchdog_ns)
        return UINT64_MAX;
    return n->next_watchdog > now_ns ? n->next_watchdog - now_ns : 0;
}
