/* SPDX-License-Identifier: Apache-2.0 */
/* companion.h - the command line of the daemon companions of `tsmine` (replay, alerts,
 * status, keygen, the control requests; DESIGN 5.2, 6): a table of options parsed by
 * cli_getopt (cli.h), over the sockets and messages of lib/client.h.
 *
 * A companion is a client_command: its name, help, the options it takes and a run
 * function that gets the parsed arguments. Unlike the batch commands (cli.h) it talks
 * to a running tsmined instead of computing, so it has no -m, no backend and no
 * session; failures to reach the daemon exit with EX_UNAVAILABLE. */
#ifndef TSMINE_COMPANION_H
#define TSMINE_COMPANION_H

#include "lib/client.h"
#include "lib/series_io.h"

#include <stddef.h>
#include <stdint.h>

/* Options a companion may take beyond --endpoint, --timeout-ms, -v and --help. */
enum {
    CLIENT_OPT_STREAM_ID = 1u << 0,     /* -s ID, required */
    CLIENT_OPT_STREAM_PREFIX = 1u << 1, /* -s PREFIX */
    CLIENT_OPT_STREAM_ONE = 1u << 2,    /* -s ID, optional */
    CLIENT_OPT_REPLAY = 1u << 3,        /* --rate --batch --first-seq --period-ns ... FILE */
    CLIENT_OPT_COUNT = 1u << 4,         /* -n N */
    CLIENT_OPT_KEYGEN = 1u << 5,        /* the operand NAME (keygen; talks to no daemon) */
};

/* How replay sends non-finite samples. */
typedef enum {
    CLIENT_NONFINITE_GAP = 0, /* leave them out: their sequence numbers become a gap */
    CLIENT_NONFINITE_SEND,    /* send them: the daemon rejects the batches holding them */
} client_nonfinite;

/* Which timestamps replay sends. */
typedef enum {
    CLIENT_TIMESTAMPS_DEFAULT = 0, /* FILE's when it has a timestamp column (and no
                                    * --period-ns is given), else PERIOD */
    CLIENT_TIMESTAMPS_FILE,        /* the file's own */
    CLIENT_TIMESTAMPS_NOW,         /* the file's spacing, its first at the replay's start */
    CLIENT_TIMESTAMPS_PERIOD,      /* the replay's start + k * period */
} client_timestamps;

/* Parsed arguments, defaults applied. */
typedef struct {
    const char *endpoint;
    const char *stream; /* NULL when not given */
    const char *file;   /* replay's FILE ("-" is standard input); keygen's NAME */
    double rate;        /* samples per second; 0 = as fast as possible */
    size_t batch;       /* samples per message */
    uint64_t first_seq;
    int64_t period_ns;   /* 0 when not given */
    const char *control; /* replay: the daemon's control socket; NULL when not given */
    int resume;          /* replay: 1 --resume, 0 --no-resume, -1 neither (on when it can) */
    uint64_t count;      /* alerts: stop after this many; 0 = no limit */
    long timeout_ms;     /* < 0 when not given: the command's default */
    client_nonfinite nonfinite;
    client_timestamps timestamps;
    int hold_backwards; /* replay: a timestamp not after the one before is sent as that one */
    series_format input_format;
    int verbose;
    const char *curve_key_file, *server_key_file; /* NULL when not given */
    client_curve curve;                           /* read from those two files */
} client_args;

typedef struct client_command {
    const char *name;
    const char *synopsis;    /* after "tsmine NAME " */
    const char *summary;     /* one line, for `tsmine --help` */
    const char *description; /* paragraph for the command's --help */
    const char *endpoint;    /* default --endpoint; NULL: no daemon (no --endpoint etc.) */
    long timeout_ms;         /* default --timeout-ms (0 = none) */
    unsigned options;        /* CLIENT_OPT_* */
    /* Does the work; returns the exit status. */
    int (*run)(const client_args *a);
} client_command;

/* Parses argv (argv[0] = the command's name) and runs cmd; returns the exit status. */
int client_main(const client_command *cmd, int argc, char **argv);

#endif
