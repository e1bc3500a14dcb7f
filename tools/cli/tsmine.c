/* SPDX-License-Identifier: Apache-2.0 */
/* tsmine.c - the `tsmine` command-line tool: dispatch to a subcommand, global help
 * and version (DESIGN 6). Each subcommand lives in its own cmd_NAME.c: the batch
 * commands run through cli_main, the daemon companions through client_main. */
#include "cli.h"
#include "cmd_shapelet.h"
#include "commands.h"
#include "dist.h"
#ifdef TSMINE_HAVE_CLIENT
#include "display.h"
#endif

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#ifndef TSMINE_VERSION
#define TSMINE_VERSION "unknown"
#endif

static const cli_command *const commands[] = {&cmd_discord, &cmd_motif, &cmd_profile, &cmd_sets};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

#ifdef TSMINE_HAVE_CLIENT
static const client_command *const companions[] = {
    &cmd_replay, &cmd_alerts, &cmd_status,      &cmd_counters, &cmd_reset,
    &cmd_delete, &cmd_keygen, &cmd_recalibrate, &cmd_reload,   &cmd_checkpoint};
#define N_COMPANIONS (sizeof companions / sizeof companions[0])
#else
#define N_COMPANIONS 0
#endif

/* One entry of either table: exactly one of the two pointers is set (only batch in
 * builds without the daemon). */
typedef struct {
    const cli_command *batch;
#ifdef TSMINE_HAVE_CLIENT
    const client_command *client;
#endif
} command_ref;

static command_ref find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return (command_ref){.batch = commands[i]};
#ifdef TSMINE_HAVE_CLIENT
    for (size_t i = 0; i < N_COMPANIONS; i++)
        if (strcmp(companions[i]->name, name) == 0)
            return (command_ref){.client = companions[i]};
#endif
    return (command_ref){0};
}

/* Whether find_command found anything. */
static int found(command_ref c) {
#ifdef TSMINE_HAVE_CLIENT
    if (c.client)
        return 1;
#endif
    return c.batch != NULL;
}

/* Runs the command with argv[0] = its name. */
static int run_command(command_ref c, int argc, char **argv) {
#ifdef TSMINE_HAVE_CLIENT
    if (c.client) /* alerts and status take display options first (display.h) */
        return display_client_main(c.client, argc, argv);
#endif
    return cli_main(c.batch, argc, argv);
}

/* Commands with an option table and a main of their own (they read no series, or
 * several): run with argv[0] = their name. */
typedef struct {
    const char *name, *summary;
    int (*main)(int argc, char **argv);
} own_main;

static const own_main own_mains[] = {
    {"shapelet", "shapelet-tree classifier: train, predict, show", shapelet_main},
    {"plot", "PNG/SVG picture of a series, its discords, motifs and profile", plot_main},
    {"score", "NAB score of an alert stream against labelled windows", score_main},
#ifdef TSMINE_HAVE_DETECT
    {"detect", "tsmined's detection (events) run offline over files", detect_main},
#endif
};
#define N_OWN_MAINS (sizeof own_mains / sizeof own_mains[0])

static const own_main *find_own_main(const char *name) {
    for (size_t i = 0; i < N_OWN_MAINS; i++)
        if (strcmp(own_mains[i].name, name) == 0)
            return &own_mains[i];
    return NULL;
}

/* Prints `tsmine --help` on stdout. */
static void usage(void) {
    printf("Usage: tsmine COMMAND [OPTIONS] FILE...\n"
           "       tsmine --help | --version\n\n"
           "Exact discords, motifs and matrix profiles of a time series, and operations on\n"
           "sorted multisets.\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-10s %s\n", commands[i]->name, commands[i]->summary);
    for (size_t i = 0; i < N_OWN_MAINS; i++)
        printf("  %-10s %s\n", own_mains[i].name, own_mains[i].summary);
#ifdef TSMINE_HAVE_CLIENT
    printf("\nTalking to the daemon tsmined:\n");
    for (size_t i = 0; i < N_COMPANIONS; i++)
        printf("  %-10s %s\n", companions[i]->name, companions[i]->summary);
#endif
    printf("\nRun 'tsmine COMMAND --help' for a command's options.\n"
           "Exit status: 0 success, 64 usage or bad parameters, 65 bad input data, 66 cannot\n"
           "open input, 69 backend unavailable, 70 internal error.\n");
}

int main(int argc, char **argv) {
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    dist_init(&argc, &argv); /* MPI, when started as one of several ranks */

    if (argc < 2) {
        cli_error("missing command (see 'tsmine --help')");
        return EX_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
        (strcmp(name, "help") == 0 && argc == 2)) {
        usage();
        return fflush(stdout) == 0 ? 0 : EX_IOERR;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("tsmine %s\n", TSMINE_VERSION);
        return fflush(stdout) == 0 ? 0 : EX_IOERR;
    }
    const own_main *own = find_own_main(name);
    if (own)
        return own->main(argc - 1, argv + 1);
    if (strcmp(name, "help") == 0 && argc > 2 && (own = find_own_main(argv[2])) != NULL) {
        char *hargv[] = {argv[2], "--help", NULL};
        return own->main(2, hargv);
    }
    if (strcmp(name, "help") == 0) { /* `tsmine help COMMAND` = `tsmine COMMAND --help` */
        command_ref cmd = find_command(argv[2]);
        if (!found(cmd)) {
            cli_error("unknown command '%s' (see 'tsmine --help')", argv[2]);
            return EX_USAGE;
        }
        char *hargv[] = {argv[2], "--help", NULL};
        return run_command(cmd, 2, hargv);
    }
    command_ref cmd = find_command(name);
    if (!found(cmd)) {
        if (name[0] == '-')
            cli_error("unknown option '%s' before the command (see 'tsmine --help')", name);
        else
            cli_error("unknown command '%s' (see 'tsmine --help')", name);
        return EX_USAGE;
    }
    return dist_exit(run_command(cmd, argc - 1, argv + 1)); /* MPI: see dist.h */
}
