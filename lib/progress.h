/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h - the progress line of long commands (DESIGN 6): one updating line on
 * stderr with the stage, the share done and an ETA, fed by the kernels' progress hook
 * (tsm_ctx_set_progress) or by a command's own chunks of work.
 *
 * Shown when stderr is a terminal (one line rewritten in place, cleared at the end),
 * or when forced (--progress: on a terminal the same, elsewhere one line per second
 * and a last line with the total time); never with quiet (-q). On a terminal nothing
 * shows before the work has run half a second, so quick commands stay silent. */
#ifndef TSMINE_PROGRESS_H
#define TSMINE_PROGRESS_H

#include <stdint.h>

typedef struct {
    const char *command; /* "profile": lines read "tsmine: profile: ..." */
    int on, tty;
    double start;   /* of the command's work */
    double t0;      /* of the current run of the stage (its ETA's origin) */
    double last;    /* when the last line was printed */
    char stage[48]; /* the current stage; "" before the first update */
    uint64_t prev;  /* done at the last update: a smaller done starts a new run */
    unsigned round; /* runs of the current stage (passes of a search) */
    int shown;      /* a line is on the terminal */
} progress_line;

/* Starts p for command: on when forced, or when stderr is a terminal and not quiet. */
void progress_begin(progress_line *p, const char *command, int force, int quiet);

/* Records that done of total units of stage are done and prints a line when one is
 * due (a tsm_progress_fn: user is the progress). O(1); a clock read per call. */
void progress_update(void *user, const char *stage, uint64_t done, uint64_t total);

/* Ends the progress: clears the terminal line, or prints the total time when forced
 * elsewhere. Idempotent. */
void progress_end(progress_line *p);

#endif
