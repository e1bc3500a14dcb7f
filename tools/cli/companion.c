/* SPDX-License-Identifier: Apache-2.0 */
/* companion.c - the command line of the daemon companions (replay, alerts, status,
 * keygen, the control requests): their option table and help, parsed by cli_getopt,
 * and the CURVE key files of --curve-key and --server-key. */
#include "companion.h"

#include "cli.h"
#include "lib/curve_key.h"

#include <errno.h>
#include <getopt.h> /* optind */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* Keys of the options without a short form. */
enum {
    KEY_FIRST_SEQ = CLI_KEY_LONG,
    KEY_PERIOD,
    KEY_NONFINITE,
    KEY_INPUT_FORMAT,
    KEY_TIMEOUT,
    KEY_RATE,
    KEY_CURVE_KEY,
    KEY_SERVER_KEY,
    KEY_CONTROL,
    KEY_RESUME,
    KEY_NO_RESUME,
    KEY_TIMESTAMPS,
    KEY_BACKWARDS
};

#define OPT_ALL  (1u << 31)
#define OPT_TALK (1u << 30) /* the commands that talk to a daemon (client_command.endpoint) */

/* Every option of every companion, once; --stream three times, as its meaning
 * depends on the command. */
static const cli_option options[] = {
    {"endpoint", 'e', 1, "E", OPT_TALK, "the daemon's socket (default below)"},
    {"stream", 's', 1, "ID", CLIENT_OPT_STREAM_ID, "the stream ID (required)"},
    {"stream", 's', 1, "PREFIX", CLIENT_OPT_STREAM_PREFIX,
     "only streams whose id starts with PREFIX"},
    {"stream", 's', 1, "ID", CLIENT_OPT_STREAM_ONE, "only this stream (default: all)"},
    {"rate", KEY_RATE, 1, "HZ", CLIENT_OPT_REPLAY,
     "samples per second (default: as fast as possible)"},
    {"batch", 'b', 1, "N", CLIENT_OPT_REPLAY, "samples per message (default 256, <= the window)"},
    {"first-seq", KEY_FIRST_SEQ, 1, "S", CLIENT_OPT_REPLAY,
     "sequence number of the first sample (default 0)"},
    {"timestamps", KEY_TIMESTAMPS, 1, "file|now|period", CLIENT_OPT_REPLAY,
     "the file's (the default), shifted to now, or k * P"},
    {"period-ns", KEY_PERIOD, 1, "P", CLIENT_OPT_REPLAY,
     "period: ns between them (default 1e9/HZ, else 1e9)"},
    {"backwards", KEY_BACKWARDS, 1, "refuse|hold", CLIENT_OPT_REPLAY,
     "repeats and steps back: refuse (default), or hold"},
    {"nonfinite", KEY_NONFINITE, 1, "gap|send", CLIENT_OPT_REPLAY,
     "NaN/Inf: leave out as a gap (default), or send"},
    {"input-format", KEY_INPUT_FORMAT, 1, "csv|txt|npy|f64", CLIENT_OPT_REPLAY,
     "input format (default: from the extension)"},
    {"control", KEY_CONTROL, 1, "E", CLIENT_OPT_REPLAY,
     "the control socket to ask where to resume (above)"},
    {"resume", KEY_RESUME, 0, NULL, CLIENT_OPT_REPLAY,
     "after a daemon restart, resend what it lost (default)"},
    {"no-resume", KEY_NO_RESUME, 0, NULL, CLIENT_OPT_REPLAY,
     "after a daemon restart, go on: what it lost is a gap"},
    {"count", 'n', 1, "N", CLIENT_OPT_COUNT, "exit after N alerts (default: no limit)"},
    {"timeout-ms", KEY_TIMEOUT, 1, "T", OPT_TALK, "give up after T ms without progress"},
    {"curve-key", KEY_CURVE_KEY, 1, "FILE", OPT_TALK,
     "CURVE: this client's NAME.key_secret (with --server-key)"},
    {"server-key", KEY_SERVER_KEY, 1, "FILE", OPT_TALK, "CURVE: the daemon's public key S.key"},
    {"verbose", 'v', 0, NULL, OPT_ALL, "report progress on stderr"},
    {"help", 'h', 0, NULL, OPT_ALL, "print this help and exit"},
};

/* The options cmd takes. */
static cli_optable table_of(const client_command *cmd) {
    return (cli_optable){cmd->name, options, sizeof options / sizeof options[0],
                         OPT_ALL | (cmd->endpoint ? OPT_TALK : 0) | cmd->options, 24};
}

/* Prints the command's --help on stdout. */
static void usage(const client_command *cmd) {
    cli_optable t = table_of(cmd);
    cli_help(&t, cmd->synopsis, cmd->description);
    if (cmd->endpoint)
        printf("\nDefault endpoint: %s. Default --timeout-ms: %ld%s.\n"
               "With --curve-key NAME.key_secret --server-key S.key (files of `tsmine keygen`)\n"
               "it connects as a CURVE client: encrypted, and admitted by a daemon with\n"
               "security.curve on only when NAME.key is in its allow-list (a refused key\n"
               "looks like no daemon: no reply within --timeout-ms).\n",
               cmd->endpoint, cmd->timeout_ms, cmd->timeout_ms ? "" : " (wait for ever)");
}

/* Applies one option (cli_apply_fn; dest is the client_args). */
static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    client_args *a = dest;
    uint64_t v;
    switch (o->key) {
    case 'e': a->endpoint = arg; return 0;
    case 's':
        if (!*arg && (t->accept & CLIENT_OPT_STREAM_ID)) {
            cli_error("%s: --stream: the stream id must not be empty", t->command);
            return EX_USAGE;
        }
        a->stream = arg;
        return 0;
    case KEY_RATE: {
        char *end;
        errno = 0;
        a->rate = strtod(arg, &end);
        if (end == arg || *end || errno == ERANGE || !isfinite(a->rate) || a->rate <= 0) {
            cli_error("%s: --rate: invalid rate '%s' (need samples per second > 0)", t->command,
                      arg);
            return EX_USAGE;
        }
        return 0;
    }
    case 'b':
        if (cli_parse_count(t, o, arg, 1, 1u << 24, &v))
            return EX_USAGE;
        a->batch = (size_t)v;
        return 0;
    case KEY_FIRST_SEQ:
        if (cli_parse_count(t, o, arg, 0, UINT64_MAX / 2, &v))
            return EX_USAGE;
        a->first_seq = v;
        return 0;
    case KEY_PERIOD:
        if (cli_parse_count(t, o, arg, 0, INT64_MAX / 2, &v))
            return EX_USAGE;
        a->period_ns = (int64_t)v;
        return 0;
    case 'n':
        if (cli_parse_count(t, o, arg, 1, UINT64_MAX, &v))
            return EX_USAGE;
        a->count = v;
        return 0;
    case KEY_TIMEOUT:
        if (cli_parse_count(t, o, arg, 0, 24u * 3600 * 1000, &v))
            return EX_USAGE;
        a->timeout_ms = (long)v;
        return 0;
    case KEY_NONFINITE:
        if (strcmp(arg, "gap") == 0)
            a->nonfinite = CLIENT_NONFINITE_GAP;
        else if (strcmp(arg, "send") == 0)
            a->nonfinite = CLIENT_NONFINITE_SEND;
        else {
            cli_error("%s: --nonfinite: unknown policy '%s' (gap or send)", t->command, arg);
            return EX_USAGE;
        }
        return 0;
    case KEY_TIMESTAMPS:
        if (strcmp(arg, "file") == 0)
            a->timestamps = CLIENT_TIMESTAMPS_FILE;
        else if (strcmp(arg, "now") == 0)
            a->timestamps = CLIENT_TIMESTAMPS_NOW;
        else if (strcmp(arg, "period") == 0)
            a->timestamps = CLIENT_TIMESTAMPS_PERIOD;
        else {
            cli_error("%s: --timestamps: unknown choice '%s' (file, now or period)", t->command,
                      arg);
            return EX_USAGE;
        }
        return 0;
    case KEY_BACKWARDS:
        if (strcmp(arg, "refuse") == 0 || strcmp(arg, "hold") == 0)
            a->hold_backwards = arg[0] == 'h';
        else {
            cli_error("%s: --backwards: unknown choice '%s' (refuse or hold)", t->command, arg);
            return EX_USAGE;
        }
        return 0;
    case KEY_INPUT_FORMAT: return cli_parse_input_format(t, arg, &a->input_format);
    case KEY_CONTROL: a->control = arg; return 0;
    case KEY_RESUME: a->resume = 1; return 0;
    case KEY_NO_RESUME: a->resume = 0; return 0;
    case KEY_CURVE_KEY: a->curve_key_file = arg; return 0;
    case KEY_SERVER_KEY: a->server_key_file = arg; return 0;
    case 'v': a->verbose = 1; return 0;
    }
    return EX_SOFTWARE; /* an option in the table without a case: a bug */
}

/* Reads one key file of --curve-key / --server-key; returns 0 or the exit status
 * (EX_NOINPUT, EX_DATAERR) after printing why. */
static int read_key(const char *command, const char *path, int secret, tsm_curve_key *k) {
    char err[1024];
    int rc = tsm_curve_key_read(path, secret, k, err, sizeof err);
    if (rc == 0)
        return 0;
    cli_error("%s: --%s: %s", command, secret ? "curve-key" : "server-key", err);
    return rc == TSM_CURVE_KEY_EOPEN ? EX_NOINPUT : EX_DATAERR;
}

/* The CURVE keys of --curve-key and --server-key into a->curve (both or neither). */
static int read_curve(const client_command *cmd, client_args *a) {
    if (!a->curve_key_file != !a->server_key_file) {
        cli_error("%s: --curve-key and --server-key go together (see 'tsmine %s --help')",
                  cmd->name, cmd->name);
        return EX_USAGE;
    }
    if (!a->curve_key_file)
        return 0;
    tsm_curve_key mine, server;
    int rc = read_key(cmd->name, a->curve_key_file, 1, &mine);
    if (rc == 0)
        rc = read_key(cmd->name, a->server_key_file, 0, &server);
    if (rc)
        return rc;
    a->curve.on = 1;
    memcpy(a->curve.public_key, mine.public_txt, sizeof a->curve.public_key);
    memcpy(a->curve.secret_key, mine.secret_txt, sizeof a->curve.secret_key);
    memcpy(a->curve.server_key, server.public_txt, sizeof a->curve.server_key);
    return 0;
}

/* Parses argv into a: the options, then replay's FILE or keygen's NAME, then the CURVE
 * keys. Returns 0 to go on, CLI_HELP after printing --help, or an exit status after
 * printing the error. */
static int parse_args(const client_command *cmd, int argc, char **argv, client_args *a) {
    cli_optable t = table_of(cmd);
    *a = (client_args){
        .endpoint = cmd->endpoint, .batch = 256, .timeout_ms = cmd->timeout_ms, .resume = -1};
    int rc = cli_getopt(&t, argc, argv, apply, a);
    if (rc == CLI_HELP)
        usage(cmd);
    if (rc)
        return rc;
    int want = (cmd->options & (CLIENT_OPT_REPLAY | CLIENT_OPT_KEYGEN)) ? 1 : 0;
    if (argc - optind != want) {
        if (want && optind >= argc && (cmd->options & CLIENT_OPT_KEYGEN))
            cli_error("%s: missing NAME (the key files are NAME.key and NAME.key_secret)",
                      cmd->name);
        else if (want && optind >= argc)
            cli_error("%s: missing FILE (use - for standard input)", cmd->name);
        else
            cli_error("%s: unexpected argument '%s' (see 'tsmine %s --help')", cmd->name,
                      argv[optind + want], cmd->name);
        return EX_USAGE;
    }
    if (want)
        a->file = argv[optind];
    if ((cmd->options & CLIENT_OPT_STREAM_ID) && !a->stream) {
        cli_error("%s: missing --stream ID", cmd->name);
        return EX_USAGE;
    }
    return read_curve(cmd, a);
}

int client_main(const client_command *cmd, int argc, char **argv) {
    client_args a;
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc)
        return rc == CLI_HELP ? 0 : rc;
    return cmd->run(&a);
}
