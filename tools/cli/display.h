/* SPDX-License-Identifier: Apache-2.0 */
/* display.h - how the daemon companions that print for people (`tsmine alerts`,
 * `status`, `counters`) show what they print (issue 32): --format text|json (text when
 * standard output is a terminal, JSON lines otherwise, so that every script that reads
 * them goes on working), --local|--utc for times and --top N for status's table.
 *
 * These options are taken out of argv here, before client_main (companion.h) parses the
 * rest with the companions' shared table: tsmine.c runs every companion through
 * display_client_main. Their help is printed after the command's own. */
#ifndef TSMINE_DISPLAY_H
#define TSMINE_DISPLAY_H

#include <stddef.h>

#include "companion.h"

typedef enum { DISPLAY_JSON, DISPLAY_TEXT } display_format;

/* The display options of the running command. */
typedef struct {
    display_format format;
    int local;  /* times in local time (TZ) instead of UTC */
    size_t top; /* status: the streams listed, most alerts first (0: all) */
} display_opts;

/* The default of --top. */
#define DISPLAY_TOP_DEFAULT 20

/* Parses the display options the command takes out of argv (argv[0] = its name),
 * then runs it with client_main. Commands without display options go straight to
 * client_main. Returns the exit status. */
int display_client_main(const client_command *cmd, int argc, char **argv);

/* The display options parsed for the running command (its run function reads them). */
const display_opts *display_options(void);

#endif
