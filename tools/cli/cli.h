/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h - what every subcommand of `tsmine` shares (DESIGN 6).
 *
 * First, the option-table parser of every subcommand, batch or daemon companion
 * (companion.h): a family of commands declares its options once in a cli_option table;
 * cli_getopt builds getopt_long's arguments from the entries a command takes, reports
 * unknown, misused and argument-less options as one "tsmine: CMD: ..." line with
 * EX_USAGE, and hands each option to the family's apply function; cli_help prints
 * the option list of a command's --help from the same table.
 *
 * Then the batch subcommands: the run flow (read series -> ctx -> stats -> command),
 * the mapping of failures to sysexits codes and the one-line error messages. A batch
 * subcommand is a cli_command: its name, help text, the subset of the optional
 * options it accepts, and a run function that gets the parsed arguments and a ready
 * session (series read, ctx and statistics built) and prints its results. A command
 * that does not work on a series (CLI_NO_SERIES: `tsmine sets`) takes no -m and its
 * own operands, and its session holds only the ctx. */
#ifndef TSMINE_CLI_H
#define TSMINE_CLI_H

#include "lib/emit.h"
#include "lib/progress.h"
#include "lib/series_io.h"
#include "stats.h"
#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Messages (every subcommand) ---------------------------------------------- */

/* Prints "tsmine: MESSAGE" as one line on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Maps the status of a series_io read to an exit status (0, EX_NOINPUT, EX_DATAERR
 * or EX_SOFTWARE), printing its message err when it failed. */
int cli_input_status(series_status st, const char *err);

/* Seconds on the monotonic clock. */
double cli_now(void);

/* ---- Option tables ------------------------------------------------------------ */

/* The first key of the options without a short letter. */
#define CLI_KEY_LONG 256

/* One option of a family's table. An option may appear twice with different masks
 * (and help) when its meaning depends on the command; no command may take both. */
typedef struct {
    const char *name; /* long name, or NULL for a short-only option */
    int key;          /* its short letter, or a key >= CLI_KEY_LONG; 'h' is --help */
    int has_arg;      /* 0 or 1 (a required argument) */
    const char *arg;  /* the argument's name in the help, NULL when it takes none */
    unsigned mask;    /* the commands that take it: see cli_optable.accept */
    const char *help; /* one line for --help */
} cli_option;

/* The options of one command: those of the table whose mask & accept is not 0. */
typedef struct {
    const char *command; /* its name: messages say "tsmine: COMMAND: ..." */
    const cli_option *options;
    size_t n_options; /* at most CLI_MAX_OPTIONS */
    unsigned accept;
    int help_width; /* width of the option column of --help */
} cli_optable;

#define CLI_MAX_OPTIONS 32

/* What cli_getopt returns when it met -h or --help (nothing printed). */
#define CLI_HELP (-1)

/* Applies option o of t's command, with its argument arg (NULL when it takes none),
 * to dest; returns 0, or an exit status after printing why (with cli_error). */
typedef int (*cli_apply_fn)(const cli_optable *t, const cli_option *o, const char *arg, void *dest);

/* Parses argv (argv[0] = the command's name) with getopt_long over the options t
 * takes, calling apply for each in order. Returns 0 with the operands left from
 * argv[optind], CLI_HELP, or EX_USAGE (or apply's status) after printing one line.
 * Uses getopt's globals (optind, optarg), so one parse at a time; O(table) work per
 * option. */
int cli_getopt(const cli_optable *t, int argc, char **argv, cli_apply_fn apply, void *dest);

/* Prints the head of the command's --help on stdout: "Usage: tsmine COMMAND
 * SYNOPSIS", the description, and one line (or two, for a long head) per option it
 * takes. The caller prints what follows (operands, defaults, exit status). */
void cli_help(const cli_optable *t, const char *synopsis, const char *description);

/* Parses o's argument as a whole decimal number in [min, max] into *out; returns 0,
 * or EX_USAGE after printing "tsmine: COMMAND: --OPTION: invalid value ...". */
int cli_parse_count(const cli_optable *t, const cli_option *o, const char *arg, uint64_t min,
                    uint64_t max, uint64_t *out);

/* Parses a series format for --input-format; returns 0, or EX_USAGE after printing
 * why. */
int cli_parse_input_format(const cli_optable *t, const char *arg, series_format *out);

/* The text input options of every command that reads a series (the batch commands
 * and plot): their keys, their table entries (taken by the commands in mask), and
 * their parser. */
enum { CLI_KEY_COLUMN = CLI_KEY_LONG + 128, CLI_KEY_DELIMITER, CLI_KEY_DECIMAL_COMMA };
/* clang-format off */
#define CLI_INPUT_OPTIONS(mask)                                                         \
    {"column", CLI_KEY_COLUMN, 1, "N|NAME", (mask),                                     \
     "text: the column of values, by number (1 first) or header name"},                 \
    {"delimiter", CLI_KEY_DELIMITER, 1, "C", (mask),                                    \
     "text: the column delimiter: , ; tab space or one character (default: detect)"},   \
    {"decimal-comma", CLI_KEY_DECIMAL_COMMA, 0, NULL, (mask),                           \
     "text: read 1,5 as 1.5 (refused otherwise)"}
/* clang-format on */
/* Applies o when it is one of CLI_INPUT_OPTIONS to in: 0, or EX_USAGE after printing
 * why; 1 when o is another option. */
int cli_apply_input(const cli_optable *t, const cli_option *o, const char *arg, series_options *in);
/* Checks the text input options together once parsed: 0, or EX_USAGE after printing
 * why. */
int cli_check_input(const char *command, const series_options *in);

/* -m auto: the subsequence length for the n values v, the dominant period by
 * autocorrelation (period > 0) or a default (period 0), said on stderr; 0, or an exit
 * status after printing why (too few values, a kernel failure). */
int cli_auto_m(const char *command, tsm_ctx *ctx, const double *v, size_t n, size_t *m,
               uint32_t *period);

/* ---- Batch subcommands ---------------------------------------------------------- */

/* Options a command may accept beyond the common ones (-m, --excl, --format,
 * --backend, --input-format, --threads, -v, --help). */
enum {
    CLI_OPT_K = 1u << 0,       /* -k K */
    CLI_OPT_R = 1u << 1,       /* -r R */
    CLI_OPT_LEFT = 1u << 2,    /* --left */
    CLI_OPT_SEGLEN = 1u << 3,  /* --seglen L */
    CLI_OPT_REFS = 1u << 4,    /* --refs R */
    CLI_OPT_SEED = 1u << 5,    /* --seed S */
    CLI_OPT_OUTPUT = 1u << 6,  /* -o, --output FILE */
    CLI_OPT_WIDTH = 1u << 7,   /* --key-width 32|64 */
    CLI_OPT_ARRAYS = 1u << 9,  /* --format npy|f64 with -o OUT: results as binary arrays */
    CLI_OPT_METHOD = 1u << 10, /* --method auto|scan|mk (motif) */
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
    int progress, quiet; /* --progress forces the progress line, -q silences it */
    /* -m auto: m is chosen from the series by tsm_auto_m once it is read (and excl with
     * it unless given); period is the period found then, 0 when the default was used. */
    int auto_m, excl_is_m;
    uint32_t period;
    uint64_t seed;
    int mk, scan; /* --method mk: MK; --method scan: the scan alone; neither: auto (motif) */
    tsm_backend backend;
    emit_format format;
    series_options input; /* --input-format, --column, --delimiter, --decimal-comma */
    /* --format npy|f64 (CLI_OPT_ARRAYS): SERIES_FMT_NPY or SERIES_FMT_F64; AUTO for text */
    series_format arrays;
} cli_args;

/* What a command runs on; built and freed by cli_main. */
typedef struct {
    series data;
    tsm_ctx *ctx;
    tsm_stats *stats;
    progress_line prog; /* fed by the ctx's progress hook while the command runs */
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

/* Reports a failed kernel call (the ctx's message) and returns its exit status:
 * EINVAL -> EX_USAGE (bad parameters for this data), EBACKEND/EDEVICE ->
 * EX_UNAVAILABLE, ENOMEM/EINTERNAL -> EX_SOFTWARE. */
int cli_fail_status(const tsm_ctx *ctx, tsm_status st);

/* How many of a command's n output fields to print when its last `timed` fields are
 * timestamps (series_time): all n when the series has timestamps, else n - timed. */
size_t cli_nfields(const cli_session *s, size_t n, size_t timed);

/* Says on stderr why a command found no `what` ("discords", "motif pairs"): no
 * subsequence has a non-self-match (n, m and excl given), or every one has a missing
 * value, else `otherwise`. The exit status stays 0: an empty result is a result. */
void cli_say_empty(const char *cmd, const cli_args *a, const cli_session *s, const char *what,
                   const char *otherwise);

/* Ends the progress line (clears it on a terminal): a command calls it once its
 * kernels are done, before it prints results. */
void cli_progress_end(cli_session *s);

/* Finishes output; returns 0, or reports the write error and returns EX_IOERR. */
int cli_emit_end(emitter *e);

#endif
