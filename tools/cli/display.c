/* SPDX-License-Identifier: Apache-2.0 */
/* display.c - the display options of the companions that print for people
 * (display.h). */
#include "display.h"

#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

enum { OPT_FORMAT = 1u << 0, OPT_TIME = 1u << 1, OPT_TOP = 1u << 2 };

/* The commands that take display options, and which. */
static const struct {
    const char *name;
    unsigned takes;
} commands[] = {
    {"alerts", OPT_FORMAT | OPT_TIME},
    {"status", OPT_FORMAT | OPT_TOP},
    {"counters", OPT_FORMAT},
};

/* The options, for parsing and for --help. */
static const struct {
    const char *name, *arg, *help;
    unsigned mask;
} options[] = {
    {"format", "text|json", "text (for a person) or json (default: text on a terminal)",
     OPT_FORMAT},
    {"local", NULL, "text: times in local time (TZ), with its UTC offset", OPT_TIME},
    {"utc", NULL, "text: times in UTC (the default)", OPT_TIME},
    {"top", "N", "text: the N streams with most alerts (default 20; 0: all)", OPT_TOP},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static display_opts current = {DISPLAY_JSON, 0, DISPLAY_TOP_DEFAULT};

const display_opts *display_options(void) {
    return &current;
}

/* The companions' options that take a separate argument (companion.c's table): their
 * argument is passed on whatever it looks like. Short ones may end a cluster (-vs ID). */
static int takes_argument(const char *arg) {
    static const char *const longs[] = {"--endpoint",   "--stream",    "--count",
                                        "--timeout-ms", "--curve-key", "--server-key"};
    if (arg[0] == '-' && arg[1] == '-') {
        for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
            if (strcmp(arg, longs[i]) == 0)
                return 1;
        return 0;
    }
    size_t n = strlen(arg);
    return arg[0] == '-' && n >= 2 && strchr("esn", arg[n - 1]) != NULL &&
           strspn(arg + 1, "vesn") == n - 1;
}

/* Applies display option k with its argument (NULL when it takes none). Returns 0 or
 * EX_USAGE after saying why. */
static int apply(const char *command, size_t k, const char *arg) {
    char *end;
    switch (options[k].mask) {
    case OPT_FORMAT:
        if (strcmp(arg, "text") == 0 || strcmp(arg, "json") == 0) {
            current.format = arg[0] == 't' ? DISPLAY_TEXT : DISPLAY_JSON;
            return 0;
        }
        cli_error("%s: --format: unknown format '%s' (text or json)", command, arg);
        return EX_USAGE;
    case OPT_TIME: current.local = strcmp(options[k].name, "local") == 0; return 0;
    case OPT_TOP:
        errno = 0;
        unsigned long long v = strtoull(arg, &end, 10);
        if (end == arg || *end || errno || arg[0] == '-' || v > 1000000000ull) {
            cli_error("%s: --top: invalid value '%s' (a count of streams, 0 for all)", command,
                      arg);
            return EX_USAGE;
        }
        current.top = (size_t)v;
        return 0;
    }
    return EX_SOFTWARE;
}

/* Prints the display options cmd takes, after its --help. */
static void help(unsigned takes) {
    printf("\nOutput options (text is for a person and may change; scripts read json):\n");
    for (size_t k = 0; k < N_OPTIONS; k++) {
        if (!(options[k].mask & takes))
            continue;
        char head[64];
        snprintf(head, sizeof head, "--%s%s%s", options[k].name, options[k].arg ? " " : "",
                 options[k].arg ? options[k].arg : "");
        printf("  %-24s  %s\n", head, options[k].help);
    }
}

int display_client_main(const client_command *cmd, int argc, char **argv) {
    unsigned takes = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd->name, commands[i].name) == 0)
            takes = commands[i].takes;
    if (!takes)
        return client_main(cmd, argc, argv);
    current =
        (display_opts){isatty(STDOUT_FILENO) ? DISPLAY_TEXT : DISPLAY_JSON, 0, DISPLAY_TOP_DEFAULT};
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    if (!rest) {
        cli_error("%s: out of memory", cmd->name);
        return EX_SOFTWARE;
    }
    int n = 0, asked_help = 0, rc = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) { /* operands only from here: passed on as they are */
            while (i < argc)
                rest[n++] = argv[i++];
            break;
        }
        size_t k = N_OPTIONS;
        const char *value = NULL;
        for (size_t j = 0; a[0] == '-' && a[1] == '-' && j < N_OPTIONS; j++) {
            size_t len = strlen(options[j].name);
            if (!(options[j].mask & takes) || strncmp(a + 2, options[j].name, len) != 0)
                continue;
            if (a[2 + len] == '\0' || (a[2 + len] == '=' && options[j].arg)) {
                k = j;
                value = a[2 + len] == '=' ? a + 3 + len : NULL;
            }
        }
        if (k == N_OPTIONS) { /* the companion's own: passed on, with its argument */
            asked_help |= strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
            rest[n++] = argv[i];
            if (takes_argument(a) && i + 1 < argc)
                rest[n++] = argv[++i];
            continue;
        }
        if (options[k].arg && !value) {
            if (i + 1 >= argc) {
                cli_error("%s: option '--%s' requires an argument", cmd->name, options[k].name);
                rc = EX_USAGE;
                break;
            }
            value = argv[++i];
        }
        rc = apply(cmd->name, k, value);
    }
    rest[n] = NULL;
    if (rc == 0) {
        rc = client_main(cmd, n, rest);
        if (rc == 0 && asked_help) {
            help(takes);
            rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
        }
    }
    free(rest);
    return rc;
}
