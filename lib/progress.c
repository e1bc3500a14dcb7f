/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c - a progress line with an ETA on stderr. */
#include "lib/progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FIRST_AFTER 0.5 /* s of work before the first line on a terminal */
#define TTY_EVERY   0.2 /* s between rewrites of the terminal line */
#define LOG_EVERY   1.0 /* s between lines when forced onto a file or pipe */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Writes seconds as "42 s", "3 min 05 s" or "2 h 07 min" into buf. */
static void duration(char *buf, size_t len, double s) {
    if (s < 100)
        snprintf(buf, len, "%.*f s", s < 10 ? 1 : 0, s);
    else if (s < 3600)
        snprintf(buf, len, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, len, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

void progress_begin(progress_line *p, const char *command, int force, int quiet) {
    memset(p, 0, sizeof *p);
    p->command = command;
    p->tty = isatty(STDERR_FILENO);
    p->on = !quiet && (force || p->tty);
    p->start = p->t0 = p->last = now();
}

void progress_update(void *user, const char *stage, uint64_t done, uint64_t total) {
    progress_line *p = user;
    if (!p->on)
        return;
    double t = now();
    if (strncmp(p->stage, stage, sizeof p->stage - 1) != 0) {
        snprintf(p->stage, sizeof p->stage, "%s", stage);
        p->round = 1, p->t0 = t, p->prev = 0;
    } else if (done < p->prev) {
        p->round++, p->t0 = t; /* the stage runs again: the next pass */
    }
    p->prev = done;
    if (p->tty ? (t - p->start < FIRST_AFTER || t - p->last < TTY_EVERY)
               : (p->last > p->start && t - p->last < LOG_EVERY))
        return;
    p->last = t;
    double share = total ? (double)done / (double)total : 0, el = t - p->t0;
    char eta[32] = "", spent[32], label[64];
    duration(spent, sizeof spent, t - p->start);
    if (share > 0 && share < 1 && el >= FIRST_AFTER) {
        char d[24];
        duration(d, sizeof d, el * (1 - share) / share);
        snprintf(eta, sizeof eta, ", ETA %s", d);
    }
    if (strcmp(p->stage, p->command) == 0)
        label[0] = '\0'; /* the command's one stage: its name once is enough */
    else
        snprintf(label, sizeof label, p->round > 1 ? "%s %u: " : "%s: ", p->stage, p->round);
    fprintf(stderr, "%stsmine: %s: %s%.1f%% (%s%s)%s", p->tty ? "\r" : "", p->command, label,
            100 * share, spent, eta, p->tty ? "\033[K" : "\n");
    fflush(stderr);
    p->shown = p->tty;
}

void progress_end(progress_line *p) {
    if (!p->on)
        return;
    if (p->shown)
        fputs("\r\033[K", stderr);
    else if (!p->tty) {
        char spent[32];
        duration(spent, sizeof spent, now() - p->start);
        fprintf(stderr, "tsmine: %s: done in %s\n", p->command, spent);
    }
    fflush(stderr);
    p->on = 0;
}
