/* SPDX-License-Identifier: Apache-2.0 */
/* util.h - two small helpers every file of stream/ uses (internal). */
#ifndef TSS_UTIL_H
#define TSS_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Writes a printf-style message into err (size errlen; either may be 0/NULL). */
static inline __attribute__((format(printf, 3, 4))) void tssi_say(char *err, unsigned errlen,
                                                                  const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
}

/* Monotonic clock in seconds, for the phase timers. */
static inline double tssi_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
