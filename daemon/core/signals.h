/* SPDX-License-Identifier: Apache-2.0 */
/* signals.h - signal handlers that only set flags (STYLE.md); the main loop acts.
 * SIGHUP -> reload; SIGUSR1 -> a checkpoint now; SIGTERM, SIGINT -> stop; SIGPIPE and SIGXFSZ
 * ignored (a write fails with EPIPE or EFBIG instead of killing the process). */
#ifndef TSD_SIGNALS_H
#define TSD_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t tsd_flag_reload;
extern volatile sig_atomic_t tsd_flag_stop;
extern volatile sig_atomic_t tsd_flag_checkpoint;

/* Installs the handlers; -1 with errno on failure. */
int tsd_signals_install(void);

#endif
