/* cli.h - what every batch subcommand of `tsmine` shares (DESIGN 6): the option
 * table and its parser, the run flow (read series -> ctx -> stats -> command), the
 * mapping of failures to sysexits codes and the one-line error messages.
 *
 * A subcommand is a cli_command: its name, help text, the subset of the optional
 * options it accepts, and a run function that gets the parsed arguments and a ready
 * session (series read, ctx and statistics built) and prints its results. A command
 * that does not work on a series (CLI_NO_SERIES: `tsmine sets`) takes no -m and its
 * own operands, and its session holds only the ctx. */
#ifndef TSMINE_CLI_H
#define TSMINE_CLI_H

#include "emit.h"
#include "series_io.h"
#include "stats.h"
#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

/* Options a command may accept beyond the common ones (-m, --excl, --format,
 * --backend, --input-format, --threads, -v, --help). */
enum {
    CLI_OPT_K = 1u << 0,      /* -k K */
    CLI_OPT_R = 1u << 1,      /* -r R */
    CLI_OPT_LEFT = 1u << 2,   /* --left */
    CLI_OPT_SEGLEN = 1u << 3, /* --seglen L */
    CLI_OPT_REFS = 1u << 4,   /* --refs R */
    CLI_OPT_SEED = 1u << 5,   /* --seed S */
    CLI_OPT_OUTPUT = 1u << 6, /* -o, --output FILE */
    CLI_OPT_WIDTH = 1u << 7,  /* --key-width 32|64 */
    /* Not an option: the command does not read a series. It takes none of -m, --excl,
     * --format, --input-format; its operands (cli_command.operands of them) are left
     * in cli_args.operand for it to read. */
    CLI_NO_SERIES = 1u << 8,
};

#define CLI_MAX_OPERANDS 3

/* Parsed arguments, defaults applied (excl = m unless given). */
typedef struct {
    const char *file;                      /* "-" is standard input */
    const char *operand[CLI_MAX_OPERANDS]; /* CLI_NO_SERIES commands: their operands */
    const char *output;                    /* -o, NULL when not given */
    int key_width;                         /* --key-width: 32 or 64; 0 when not given */
    size_t m, excl, k, seglen, refs;
    double r;
    int have_k, have_r, left, threads, verbose;
    uint64_t seed;
    tsm_backend backend;
    emit_format format;
    series_format input_format;
} cli_args;

/* What a command runs on; built and freed by cli_main. */
typedef struct {
    series data;
    tsm_ctx *ctx;
    tsm_stats *stats;
} cli_session;

typedef struct cli_command {
    const char *name;
    const char *synopsis;    /* after "tsmine NAME ", e.g. "-m M [-k K] FILE" */
    const char *summary;     /* one line, for `tsmine --help` */
    const char *description; /* paragraph for the command's --help */
    unsigned options;        /* CLI_OPT_* it accepts, and CLI_NO_SERIES */
    int operands;            /* CLI_NO_SERIES: how many operands it takes */
    /* Computes and prints the results; returns an exit status (cli_fail_status for
     * kernel failures, cli_emit_end at the end of output). */
    int (*run)(const cli_args *a, cli_session *s);
} cli_command;

/* Runs cmd with argv[0] = the command's name; returns the process exit status. */
int cli_main(const cli_command *cmd, int argc, char **argv);

/* Prints "tsmine: MESSAGE" as one line on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a failed kernel call (the ctx's message) and returns its exit status:
 * EINVAL -> EX_USAGE (bad parameters for this data), EBACKEND/EDEVICE ->
 * EX_UNAVAILABLE, ENOMEM/EINTERNAL -> EX_SOFTWARE. */
int cli_fail_status(const tsm_ctx *ctx, tsm_status st);

/* Finishes output; returns 0, or reports the write error and returns EX_IOERR. */
int cli_emit_end(emitter *e);

/* Seconds on the monotonic clock. */
double cli_now(void);

#endif
