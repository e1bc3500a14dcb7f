/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c - the option-table parser of every subcommand, and the option table, help,
 * run flow and exit codes of the batch subcommands. */
#include "cli.h"

#include "mk.h"
#include "pd3.h"
#include "period.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tsmine: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_fail_status(const tsm_ctx *ctx, tsm_status st) {
    const char *msg = ctx ? tsm_ctx_error(ctx) : "";
    cli_error("%s", msg && *msg ? msg : tsm_status_name(st));
    switch (st) {
    case TSM_OK: return 0;
    case TSM_EINVAL: return EX_USAGE;
    case TSM_EBACKEND:
    case TSM_EDEVICE: return EX_UNAVAILABLE;
    case TSM_ENOMEM:
    case TSM_EINTERNAL: break;
    }
    return EX_SOFTWARE;
}

int cli_input_status(series_status st, const char *err) {
    if (st == SERIES_OK)
        return 0;
    cli_error("%s", err);
    switch (st) {
    case SERIES_EOPEN: return EX_NOINPUT;
    case SERIES_EDATA: return EX_DATAERR;
    case SERIES_EUSAGE: return EX_USAGE;
    default: return EX_SOFTWARE;
    }
}

int cli_emit_end(emitter *e) {
    if (emit_end(e) != 0) {
        cli_error("writing the output: %s", strerror(errno));
        return EX_IOERR;
    }
    return 0;
}

void cli_progress_end(cli_session *s) {
    progress_end(&s->prog);
    if (s->ctx)
        tsm_ctx_set_progress(s->ctx, NULL, NULL);
}

size_t cli_nfields(const cli_session *s, size_t n, size_t timed) {
    return s->data.time_at ? n : n - timed;
}

void cli_say_empty(const char *cmd, const cli_args *a, const cli_session *s, const char *what,
                   const char *otherwise) {
    size_t N = s->stats->N;
    if (N <= a->excl)
        cli_error("%s: no %s: n = %zu values give %zu subsequence%s of length %zu, none a "
                  "non-self-match of another (|i - j| >= %zu)",
                  cmd, what, s->data.n, N, N == 1 ? "" : "s", a->m, a->excl);
    else if (s->stats->n_nonfinite == N)
        cli_error("%s: no %s: every subsequence of length %zu holds a missing value", cmd, what,
                  a->m);
    else
        cli_error("%s: no %s: %s", cmd, what, otherwise);
}

/* ---- Option tables ------------------------------------------------------------ */

static int takes(const cli_optable *t, const cli_option *o) {
    return (o->mask & t->accept) != 0;
}

/* The entry of key among the options the command takes, or NULL. */
static const cli_option *find_option(const cli_optable *t, int key) {
    for (size_t i = 0; i < t->n_options; i++)
        if (t->options[i].key == key && takes(t, &t->options[i]))
            return &t->options[i];
    return NULL;
}

/* The option's spelling for messages: "-m" or "--excl". */
static const char *spelling(const cli_option *o, char *buf, size_t len) {
    if (o->name)
        snprintf(buf, len, "--%s", o->name);
    else
        snprintf(buf, len, "-%c", o->key);
    return buf;
}

void cli_help(const cli_optable *t, const char *synopsis, const char *description) {
    printf("Usage: tsmine %s %s\n\n%s\n\nOptions:\n", t->command, synopsis, description);
    for (size_t i = 0; i < t->n_options; i++) {
        const cli_option *o = &t->options[i];
        if (!takes(t, o))
            continue;
        const char *sep = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
        char head[64];
        if (o->key < CLI_KEY_LONG && o->name)
            snprintf(head, sizeof head, "-%c, --%s%s%s", o->key, o->name, sep, arg);
        else if (o->name)
            snprintf(head, sizeof head, "--%s%s%s", o->name, sep, arg);
        else
            snprintf(head, sizeof head, "-%c%s%s", o->key, sep, arg);
        if (strlen(head) <= (size_t)t->help_width)
            printf("  %-*s  %s\n", t->help_width, head, o->help);
        else
            printf("  %s\n  %-*s  %s\n", head, t->help_width, "", o->help);
    }
}

int cli_getopt(const cli_optable *t, int argc, char **argv, cli_apply_fn apply, void *dest) {
    struct option longopts[CLI_MAX_OPTIONS + 1];
    char shortopts[2 * CLI_MAX_OPTIONS + 2];
    size_t nl = 0, ns = 0;
    if (t->n_options > CLI_MAX_OPTIONS) {
        cli_error("%s: %zu options, more than CLI_MAX_OPTIONS", t->command, t->n_options);
        return EX_SOFTWARE;
    }
    shortopts[ns++] = ':'; /* report a missing argument as ':' */
    for (size_t i = 0; i < t->n_options; i++) {
        const cli_option *o = &t->options[i];
        if (!takes(t, o))
            continue;
        if (o->name)
            longopts[nl++] = (struct option){o->name, o->has_arg, NULL, o->key};
        if (o->key < CLI_KEY_LONG) {
            shortopts[ns++] = (char)o->key;
            if (o->has_arg)
                shortopts[ns++] = ':';
        }
    }
    longopts[nl] = (struct option){NULL, 0, NULL, 0};
    shortopts[ns] = '\0';

    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const cli_option *o = find_option(t, c == '?' || c == ':' ? optopt : c);
        char sp[48];
        if (c == '?') {
            /* optopt is the unknown letter, 0 for an unknown or ambiguous long option,
             * or the key of a long option given an argument it does not take; getopt
             * has stepped past a long option, so argv[optind - 1] is its text. */
            if (!o && optopt > 0 && optopt < CLI_KEY_LONG)
                cli_error("%s: unknown option '-%c' (see 'tsmine %s --help')", t->command, optopt,
                          t->command);
            else
                cli_error("%s: unknown or misused option '%s' (see 'tsmine %s --help')", t->command,
                          argv[optind - 1], t->command);
            return EX_USAGE;
        }
        if (c == ':') { /* the option was the last argument: argv[optind - 1] */
            const char *text = argv[optind - 1];
            if (o && strncmp(text, "--", 2) == 0)
                text = spelling(o, sp, sizeof sp); /* its full name, also for --exc */
            else if (o) {
                snprintf(sp, sizeof sp, "-%c", o->key); /* as typed: -k, also in -vk */
                text = sp;
            }
            cli_error("%s: option '%s' needs an argument", t->command, text);
            return EX_USAGE;
        }
        if (c == 'h')
            return CLI_HELP;
        int st = apply(t, o, optarg, dest);
        if (st != 0)
            return st;
    }
    return 0;
}

int cli_parse_count(const cli_optable *t, const cli_option *o, const char *arg, uint64_t min,
                    uint64_t max, uint64_t *out) {
    char sp[48], *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (arg[0] >= '0' && arg[0] <= '9' && *end == '\0' && errno != ERANGE && v >= min && v <= max) {
        *out = v;
        return 0;
    }
    spelling(o, sp, sizeof sp);
    if (max == UINT64_MAX)
        cli_error("%s: %s: invalid value '%s' (need a whole number >= %" PRIu64 ")", t->command, sp,
                  arg, min);
    else
        cli_error("%s: %s: invalid value '%s' (need a whole number in [%" PRIu64 ", %" PRIu64 "])",
                  t->command, sp, arg, min, max);
    return EX_USAGE;
}

int cli_parse_input_format(const cli_optable *t, const char *arg, series_format *out) {
    if (series_format_parse(arg, out) == 0)
        return 0;
    cli_error("%s: --input-format: unknown format '%s' (csv, txt, npy or f64)", t->command, arg);
    return EX_USAGE;
}

/* ---- Batch subcommands ---------------------------------------------------------- */

#define CLI_OPT_COMMON (1u << 31) /* every command */
#define CLI_OPT_SERIES (1u << 30) /* every command that reads a series */
#define STR_(x)        #x
#define STR(x)         STR_(x)

/* -m auto (choose_m): m is the period found in [AUTO_M_MIN, min(AUTO_M_MAX, n / 4)],
 * else AUTO_M_DEFAULT (clamped to that range). docs/detection.md has the measurements
 * behind the rule m = period. */
#define AUTO_M_MIN     8
#define AUTO_M_MAX     2048
#define AUTO_M_DEFAULT 100

/* Keys of the options without a short form. */
enum {
    KEY_EXCL = CLI_KEY_LONG,
    KEY_FORMAT,
    KEY_BACKEND,
    KEY_INPUT_FORMAT,
    KEY_THREADS,
    KEY_LEFT,
    KEY_SEGLEN,
    KEY_REFS,
    KEY_SEED,
    KEY_KEY_WIDTH,
    KEY_PROGRESS,
    KEY_METHOD,
};

#define CLI_OPT_TEXT_FORMAT (1u << 29) /* --format json|csv: series commands without arrays */

/* Every option of every batch subcommand, once. */
static const cli_option options[] = {
    {NULL, 'm', 1, "M|auto", CLI_OPT_SERIES,
     "subsequence length (required): 3 <= M <= n, or auto (see below)"},
    {NULL, 'k', 1, "K", CLI_OPT_K, "how many results, best first (default 1)"},
    {NULL, 'r', 1, "R", CLI_OPT_R, "every discord with nn distance >= R, in index order"},
    {"left", KEY_LEFT, 0, NULL, CLI_OPT_LEFT, "left profile: neighbours j <= i - E only"},
    {"excl", KEY_EXCL, 1, "E", CLI_OPT_SERIES,
     "exclusion zone: i, j match only when |i-j| >= E (default M)"},
    {"seglen", KEY_SEGLEN, 1, "L", CLI_OPT_SEGLEN,
     "subsequences per PD3 segment (default " STR(TSM_PD3_SEGLEN_DEFAULT) ")"},
    {"refs", KEY_REFS, 1, "R", CLI_OPT_REFS,
     "reference subsequences for MK (default " STR(TSM_MK_REFS_DEFAULT) ")"},
    {"method", KEY_METHOD, 1, "auto|scan|mk", CLI_OPT_METHOD,
     "scan every pair, or MK's bounds (default auto: scan)"},
    {"seed", KEY_SEED, 1, "S", CLI_OPT_SEED,
     "seed for choosing the references at random (default fixed)"},
    {"output", 'o', 1, "OUT", CLI_OPT_OUTPUT,
     "result file: .u32, .u64 or text by extension (default: text on stdout)"},
    {"key-width", KEY_KEY_WIDTH, 1, "32|64", CLI_OPT_WIDTH,
     "key width (default: from .u32/.u64 names, else 64)"},
    {"output", 'o', 1, "OUT", CLI_OPT_ARRAYS, "result file (needed by --format npy and f64)"},
    {"format", KEY_FORMAT, 1, "json|csv", CLI_OPT_TEXT_FORMAT,
     "output: one JSON object per line (default), or CSV with a header"},
    {"format", KEY_FORMAT, 1, "json|csv|npy|f64", CLI_OPT_ARRAYS,
     "output: JSON lines (default), CSV, or arrays into -o OUT (see above)"},
    {"input-format", KEY_INPUT_FORMAT, 1, "csv|txt|npy|f64", CLI_OPT_SERIES,
     "input format (default: from FILE's extension; text for - and others)"},
    CLI_INPUT_OPTIONS(CLI_OPT_SERIES),
    {"backend", KEY_BACKEND, 1, "auto|cpu|cuda", CLI_OPT_COMMON, "compute backend (default auto)"},
    {"threads", KEY_THREADS, 1, "N", CLI_OPT_COMMON, "CPU threads (default: all)"},
    {"verbose", 'v', 0, NULL, CLI_OPT_COMMON, "report backend, sizes, work and timings on stderr"},
    {"progress", KEY_PROGRESS, 0, NULL, CLI_OPT_COMMON,
     "progress and ETA on stderr also when it is not a terminal"},
    {"quiet", 'q', 0, NULL, CLI_OPT_COMMON, "no progress line (default: on a terminal)"},
    {"help", 'h', 0, NULL, CLI_OPT_COMMON, "print this help and exit"},
};

/* The options cmd takes. */
static cli_optable table_of(const cli_command *cmd) {
    unsigned accept = CLI_OPT_COMMON | cmd->options;
    if (!(cmd->options & CLI_NO_SERIES))
        accept |= CLI_OPT_SERIES | (cmd->options & CLI_OPT_ARRAYS ? 0 : CLI_OPT_TEXT_FORMAT);
    return (cli_optable){cmd->name, options, sizeof options / sizeof options[0], accept, 22};
}

/* Prints the command's --help on stdout: synopsis, description, its options. */
static void usage(const cli_command *cmd) {
    cli_optable t = table_of(cmd);
    cli_help(&t, cmd->synopsis, cmd->description);
    if (!(cmd->options & CLI_NO_SERIES)) {
        printf("\n-m auto takes M = the series' dominant period by autocorrelation, looked for in\n"
               "[%d, min(%d, n/4)], or M = %d where it shows none; a line on stderr says which,\n"
               "e.g. \"tsmine: %s: -m auto: m = 96 (period 96)\".\n",
               AUTO_M_MIN, AUTO_M_MAX, AUTO_M_DEFAULT, cmd->name);
        printf("\nFILE is .csv/.txt, .npy (1-D float64/float32) or .f64 (raw little-endian "
               "float64);\n- reads standard input. Text is values separated by blanks on one "
               "or many lines,\nor rows of columns separated by ';', ',' or tabs (detected from "
               "the first row, or\n--delimiter): the values are the only column, the second of "
               "two, or --column's;\nthree or more columns need --column. A first row that is "
               "not a number is a\nheader; empty or nan is a missing value. Refused with exit "
               "65: a non-numeric value,\na decimal comma (unless --decimal-comma), rows of "
               "differing widths. A timestamp\ncolumn (named timestamp/time/date/datetime, or a "
               "non-numeric first column) adds\nthe timestamps of the subsequences to every "
               "result line.\n");
    } else {
        printf("\n");
    }
    printf("Exit status: 0 success, 64 usage or bad parameters, 65 bad input data, 66 cannot\n"
           "open input, 69 backend unavailable, 70 internal error%s.\n",
           cmd->options & (CLI_OPT_OUTPUT | CLI_OPT_ARRAYS)
               ? ",\n73 cannot create OUT, 74 write error"
               : "");
}

/* What parse_args collects: the arguments, and which defaults were overridden. */
typedef struct {
    cli_args *a;
    int have_m, have_excl;
} batch_parse;

/* Parses --delimiter: ",", ";", "tab" (or a tab), "space" (runs of blanks) or any
 * other single printable character but '"' and digits; 0 or EX_USAGE. */
static int parse_delimiter(const cli_optable *t, const char *arg, char *out) {
    if (strcmp(arg, "tab") == 0 || strcmp(arg, "\\t") == 0)
        arg = "\t";
    else if (strcmp(arg, "space") == 0 || strcmp(arg, "whitespace") == 0)
        arg = " ";
    unsigned char c = (unsigned char)arg[0];
    if (c && !arg[1] && c != '"' && c != '.' && c != '-' && c != '+' && !(c >= '0' && c <= '9') &&
        (c == '\t' || (c >= ' ' && c < 127))) {
        *out = (char)c;
        return 0;
    }
    cli_error("%s: --delimiter: invalid delimiter '%s' (one character, tab or space)", t->command,
              arg);
    return EX_USAGE;
}

int cli_apply_input(const cli_optable *t, const cli_option *o, const char *arg,
                    series_options *in) {
    switch (o->key) {
    case CLI_KEY_COLUMN:
        if (!*arg || strcmp(arg, "0") == 0) {
            cli_error("%s: --column: invalid column '%s' (a number from 1, or a header name)",
                      t->command, arg);
            return EX_USAGE;
        }
        in->column = arg;
        return 0;
    case CLI_KEY_DELIMITER: return parse_delimiter(t, arg, &in->delimiter);
    case CLI_KEY_DECIMAL_COMMA: in->decimal_comma = 1; return 0;
    }
    return 1;
}

int cli_check_input(const char *command, const series_options *in) {
    if (in->decimal_comma && in->delimiter == ',') {
        cli_error("%s: --decimal-comma needs a delimiter other than ','", command);
        return EX_USAGE;
    }
    return 0;
}

/* Applies one parsed option (cli_apply_fn; dest is a batch_parse). */
static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    batch_parse *p = dest;
    cli_args *a = p->a;
    uint64_t v = 0;
    switch (o->key) {
    case 'm':
        if (strcmp(arg, "auto") == 0) {
            a->auto_m = 1, p->have_m = 1;
            return 0;
        }
        /* fall through */
    case 'k':
    case KEY_EXCL:
    case KEY_SEGLEN:
    case KEY_REFS:
        if (cli_parse_count(t, o, arg, o->key == 'm' ? 0 : 1, SIZE_MAX, &v) != 0)
            return EX_USAGE;
        if (o->key == 'm')
            a->m = (size_t)v, p->have_m = 1;
        else if (o->key == 'k')
            a->k = (size_t)v, a->have_k = 1;
        else if (o->key == KEY_EXCL)
            a->excl = (size_t)v, p->have_excl = 1;
        else if (o->key == KEY_SEGLEN)
            a->seglen = (size_t)v;
        else
            a->refs = (size_t)v;
        return 0;
    case KEY_SEED:
        if (cli_parse_count(t, o, arg, 0, UINT64_MAX, &v) != 0)
            return EX_USAGE;
        a->seed = v;
        return 0;
    case KEY_THREADS:
        if (cli_parse_count(t, o, arg, 1, 4096, &v) != 0)
            return EX_USAGE;
        a->threads = (int)v;
        return 0;
    case 'r': {
        char *end;
        errno = 0;
        double r = strtod(arg, &end);
        if (end == arg || *end != '\0' || errno == ERANGE || !isfinite(r) || r < 0) {
            cli_error("%s: -r: invalid range '%s' (need a finite distance >= 0)", t->command, arg);
            return EX_USAGE;
        }
        a->r = r, a->have_r = 1;
        return 0;
    }
    case KEY_KEY_WIDTH:
        if (strcmp(arg, "32") != 0 && strcmp(arg, "64") != 0) {
            cli_error("%s: --key-width: invalid width '%s' (32 or 64)", t->command, arg);
            return EX_USAGE;
        }
        a->key_width = arg[0] == '3' ? 32 : 64;
        return 0;
    case 'o': a->output = arg; return 0;
    case KEY_LEFT: a->left = 1; return 0;
    case 'v': a->verbose = 1; return 0;
    case KEY_PROGRESS: a->progress = 1; return 0;
    case 'q': a->quiet = 1; return 0;
    case KEY_FORMAT:
        a->arrays = SERIES_FMT_AUTO;
        if (emit_format_parse(arg, &a->format) == 0)
            return 0;
        if ((t->accept & CLI_OPT_ARRAYS) && (strcmp(arg, "npy") == 0 || strcmp(arg, "f64") == 0)) {
            a->arrays = arg[0] == 'n' ? SERIES_FMT_NPY : SERIES_FMT_F64;
            return 0;
        }
        cli_error("%s: --format: unknown format '%s' (%s)", t->command, arg,
                  t->accept & CLI_OPT_ARRAYS ? "json, csv, npy or f64" : "json or csv");
        return EX_USAGE;
    case KEY_INPUT_FORMAT: return cli_parse_input_format(t, arg, &a->input.fmt);
    case CLI_KEY_COLUMN:
    case CLI_KEY_DELIMITER:
    case CLI_KEY_DECIMAL_COMMA: return cli_apply_input(t, o, arg, &a->input);
    case KEY_METHOD:
        if (strcmp(arg, "auto") && strcmp(arg, "scan") && strcmp(arg, "mk")) {
            cli_error("%s: --method: unknown method '%s' (auto, scan or mk)", t->command, arg);
            return EX_USAGE;
        }
        a->mk = strcmp(arg, "mk") == 0, a->scan = strcmp(arg, "scan") == 0;
        return 0;
    case KEY_BACKEND:
        if (tsm_backend_parse(arg, &a->backend) != 0) {
            cli_error("%s: --backend: unknown backend '%s' (auto, cpu or cuda)", t->command, arg);
            return EX_USAGE;
        }
        return 0;
    }
    return EX_SOFTWARE; /* an option in the table without a case: a bug */
}

/* Parses argv into a: the options, then FILE or the command's operands. Returns 0 to
 * go on, CLI_HELP after printing --help, or EX_USAGE after printing the error. */
static int parse_args(const cli_command *cmd, int argc, char **argv, cli_args *a) {
    cli_optable t = table_of(cmd);
    batch_parse p = {.a = a};
    *a = (cli_args){.k = 1, .seed = TSM_MK_SEED_DEFAULT};
    int rc = cli_getopt(&t, argc, argv, apply, &p);
    if (rc == CLI_HELP)
        usage(cmd);
    if (rc != 0)
        return rc;
    if (cmd->options & CLI_NO_SERIES) {
        int n = argc - optind;
        if (n != cmd->operands) {
            cli_error("%s: %s operands (see 'tsmine %s --help')", cmd->name,
                      n < cmd->operands ? "missing" : "too many", cmd->name);
            return EX_USAGE;
        }
        for (int q = 0; q < n && q < CLI_MAX_OPERANDS; q++)
            a->operand[q] = argv[optind + q];
        return 0;
    }
    if (!p.have_m) {
        cli_error("%s: missing -m M, the subsequence length (see 'tsmine %s --help')", cmd->name,
                  cmd->name);
        return EX_USAGE;
    }
    if (a->have_k && a->have_r) {
        cli_error("%s: -k and -r exclude each other", cmd->name);
        return EX_USAGE;
    }
    if (optind >= argc) {
        cli_error("%s: missing FILE (use - for standard input)", cmd->name);
        return EX_USAGE;
    }
    if (optind + 1 < argc) {
        cli_error("%s: unexpected argument '%s' (one FILE only)", cmd->name, argv[optind + 1]);
        return EX_USAGE;
    }
    a->file = argv[optind];
    if (cli_check_input(cmd->name, &a->input) != 0)
        return EX_USAGE;
    if (a->arrays != SERIES_FMT_AUTO && !a->output) {
        cli_error("%s: --format %s writes arrays: give -o OUT", cmd->name,
                  a->arrays == SERIES_FMT_NPY ? "npy" : "f64");
        return EX_USAGE;
    }
    if (a->output && a->arrays == SERIES_FMT_AUTO && (cmd->options & CLI_OPT_ARRAYS)) {
        cli_error("%s: -o OUT is for --format npy or f64 (text goes to standard output)",
                  cmd->name);
        return EX_USAGE;
    }
    if (!p.have_excl)
        a->excl = a->m, a->excl_is_m = 1;
    return 0;
}

int cli_auto_m(const char *command, tsm_ctx *ctx, const double *v, size_t n, size_t *m,
               uint32_t *period) {
    if (n < 4 * AUTO_M_MIN) {
        cli_error("%s: -m auto: %zu values are too few to choose m (need %d or more; give -m M)",
                  command, n, 4 * AUTO_M_MIN);
        return EX_USAGE;
    }
    uint32_t hi = n / 4 < AUTO_M_MAX ? (uint32_t)(n / 4) : AUTO_M_MAX, mm = 0;
    tsm_status st = tsm_auto_m(ctx, v, n, AUTO_M_MIN, hi, AUTO_M_DEFAULT, &mm, period);
    if (st != TSM_OK)
        return cli_fail_status(ctx, st);
    *m = mm;
    if (*period)
        cli_error("%s: -m auto: m = %u (period %u)", command, mm, *period);
    else
        cli_error("%s: -m auto: m = %u (no period found: default)", command, mm);
    return 0;
}

/* -m auto: sets a->m (and a->excl unless given) from the series (cli_auto_m). */
static int choose_m(const cli_command *cmd, cli_args *a, cli_session *s) {
    int rc = cli_auto_m(cmd->name, s->ctx, s->data.v, s->data.n, &a->m, &a->period);
    if (rc == 0 && a->excl_is_m)
        a->excl = a->m;
    return rc;
}

/* Reads the series, chooses m for -m auto, and builds ctx and statistics (only the ctx for a
 * CLI_NO_SERIES command); returns 0 or the exit status after printing why. */
static int session_open(const cli_command *cmd, cli_args *a, cli_session *s) {
    char err[512];
    int series = !(cmd->options & CLI_NO_SERIES);
    if (series) {
        int rc =
            cli_input_status(series_read_with(a->file, &a->input, &s->data, err, sizeof err), err);
        if (rc != 0)
            return rc;
    }

    const char *why = NULL;
    tsm_status st = tsm_ctx_new(&s->ctx, a->backend, &why);
    if (st != TSM_OK) {
        if (st == TSM_EBACKEND)
            cli_error("backend %s is unavailable: %s", tsm_backend_name(a->backend),
                      why ? why : "no reason given");
        else
            cli_error("cannot create the compute context: %s", why ? why : tsm_status_name(st));
        return st == TSM_EBACKEND ? EX_UNAVAILABLE : EX_SOFTWARE;
    }
    tsm_ctx_set_threads(s->ctx, a->threads);
    if (a->verbose)
        cli_error("backend %s, %d threads%s%s", tsm_backend_name(tsm_ctx_backend(s->ctx)),
                  tsm_ctx_threads(s->ctx), why ? "; " : "", why ? why : "");
    if (!series)
        return 0;
    if (a->auto_m) {
        int rc = choose_m(cmd, a, s);
        if (rc != 0)
            return rc;
    }

    double t0 = cli_now();
    st = tsm_stats_new(s->ctx, s->data.v, s->data.n, a->m, &s->stats);
    if (st != TSM_OK)
        return cli_fail_status(s->ctx, st);
    if (a->verbose)
        cli_error("%s: n = %zu values, m = %zu, %zu subsequences (%zu constant, %zu non-finite); "
                  "statistics %.3f s",
                  a->file, s->data.n, a->m, s->stats->N, s->stats->n_constant,
                  s->stats->n_nonfinite, cli_now() - t0);
    /* Check the exclusion zone here too, so every command rejects it the same way. */
    st = tsm_check_shape(s->ctx, s->data.n, a->m, a->excl);
    return st == TSM_OK ? 0 : cli_fail_status(s->ctx, st);
}

static void session_close(cli_session *s) {
    tsm_stats_destroy(&s->stats);
    tsm_ctx_destroy(&s->ctx);
    series_free(&s->data);
}

int cli_main(const cli_command *cmd, int argc, char **argv) {
    cli_args a;
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != 0)
        return rc == CLI_HELP ? 0 : rc;
    cli_session s = {0};
    rc = session_open(cmd, &a, &s);
    if (rc == 0) {
        double t0 = cli_now();
        progress_begin(&s.prog, cmd->name, a.progress, a.quiet);
        if (s.prog.on) /* no hook, no counting in the kernels */
            tsm_ctx_set_progress(s.ctx, progress_update, &s.prog);
        rc = cmd->run(&a, &s);
        cli_progress_end(&s);
        if (a.verbose && rc == 0)
            cli_error("%s: %.3f s", cmd->name, cli_now() - t0);
    }
    session_close(&s);
    return rc;
}
