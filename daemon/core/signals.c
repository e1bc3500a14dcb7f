/* SPDX-License-Identifier: Apache-2.0 */
/* signals.c - flag-setting handlers. A signal that arrives while the loop sleeps in
 * zmq_poll interrupts it (EINTR, handlers installed without SA_RESTART); one that
 * arrives just before is seen at the latest after one poll timeout (tick_ms). */
#include "daemon/core/signals.h"

#include <string.h>

volatile sig_atomic_t tsd_flag_reload = 0;
volatile sig_atomic_t tsd_flag_stop = 0;
volatile sig_atomic_t tsd_flag_checkpoint = 0;

static void on_reload(int sig) {
    (void)sig;
    tsd_flag_reload = 1;
}

static void on_checkpoint(int sig) {
    (void)sig;
    tsd_flag_checkpoint = 1;
}

static void on_stop(int sig) {
    (void)sig;
    tsd_flag_stop = 1;
}

int tsd_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_reload;
    if (sigaction(SIGHUP, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = on_checkpoint;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = on_stop;
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = SIG_IGN;
    /* SIGXFSZ: under a file-size limit (RLIMIT_FSIZE) a checkpoint write that passes it
     * would kill the process; ignored, the write fails with EFBIG and is handled like a
     * full disk (the previous checkpoint kept, the failure logged and counted). */
    return sigaction(SIGPIPE, &sa, NULL) == 0 && sigaction(SIGXFSZ, &sa, NULL) == 0 ? 0 : -1;
}
