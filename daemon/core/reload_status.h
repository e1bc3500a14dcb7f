/* SPDX-License-Identifier: Apache-2.0 */
/* reload_status.h - the outcome of a reload, told to whoever asked for it by SIGHUP.
 *
 * systemd's ExecReload= succeeds when its command does, and SIGHUP says nothing back:
 * with `ExecReload=tsmined --reload $MAINPID`, `systemctl reload tsmined` fails when the
 * daemon refused the new configuration. The daemon writes each reload's outcome to
 * $RUNTIME_DIRECTORY/reload-status (one file, replaced atomically: "GENERATION ok" or
 * "GENERATION failed", then the message on a second line); `tsmined --reload PID` reads
 * the generation, sends SIGHUP to PID and waits for a newer one. The control socket's
 * RELOAD request answers directly (`tsmine reload`), but needs the control endpoint
 * and, with CURVE, a client key: this path needs neither. */
#ifndef TSD_RELOAD_STATUS_H
#define TSD_RELOAD_STATUS_H

#include <stdint.h>
#include <sys/types.h>

#define TSD_RELOAD_STATUS_FILE "reload-status"

/* Writes generation's outcome into dir (ok: 1 or 0; msg: one line); 0 or -1 (errno). */
int tsd_reload_status_write(const char *dir, uint64_t generation, int ok, const char *msg);

/* Reads dir's outcome: 0 with *generation (0 when there is no file yet), *ok and msg
 * (msglen bytes); -1 when the file does not parse. */
int tsd_reload_status_read(const char *dir, uint64_t *generation, int *ok, char *msg,
                           size_t msglen);

/* `tsmined --reload PID`: SIGHUP to pid, then the outcome from dir within timeout_ms,
 * printed on stdout (ok) or stderr. Returns 0, 78 (EX_CONFIG: refused), 69
 * (EX_UNAVAILABLE: no such process, or no outcome in time) or 64 (EX_USAGE: no dir). */
int tsd_reload_request(pid_t pid, const char *dir, long timeout_ms);

#endif
