/* SPDX-License-Identifier: Apache-2.0 */
/* client.c - the option table and help of the daemon companions (replay, alerts,
 * status; parsed by cli_getopt), and the sockets and message helpers they share with
 * tsmine-loadgen. */
#include "lib/client.h"

#include "lib/alert_json.h"
#include "cli.h"
#include "lib/curve_key.h"
#include "lib/emit.h"

#include <errno.h>
#include <getopt.h> /* optind */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <zmq.h>

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

void *client_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                    const char *what) {
    return client_secure_socket(zctx, type, endpoint, flags, linger_ms, NULL, what);
}

/* Makes s a CURVE client with the keys of c (before it connects). */
static int set_curve(void *s, const client_curve *c) {
    return zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, c->server_key, sizeof c->server_key) ||
           zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, c->public_key, sizeof c->public_key) ||
           zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, c->secret_key, sizeof c->secret_key);
}

const char *client_curve_hint(const client_curve *curve) {
    return curve && curve->on ? "; with CURVE: is this key in the daemon's allow-list, and "
                                "--server-key the daemon's public key?"
                              : "";
}

void *client_secure_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                           const client_curve *curve, const char *what) {
    return client_monitored_socket(zctx, type, endpoint, flags, linger_ms, curve, what, 0, NULL);
}

/* Attaches a monitor of `events` to s (before it connects): a PAIR connected to the
 * inproc endpoint libzmq publishes them on, named uniquely within the process. */
static void *monitor_of(void *zctx, void *s, int events) {
    static unsigned serial;
    char where[64];
    snprintf(where, sizeof where, "inproc://tsmine-client-monitor-%u", serial++);
    if (zmq_socket_monitor(s, where, events) != 0)
        return NULL;
    void *m = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    if (m &&
        (zmq_setsockopt(m, ZMQ_LINGER, &zero, sizeof zero) != 0 || zmq_connect(m, where) != 0)) {
        zmq_close(m);
        m = NULL;
    }
    if (!m)
        zmq_socket_monitor(s, NULL, 0);
    return m;
}

void *client_monitored_socket(void *zctx, int type, const char *endpoint, int flags, int linger_ms,
                              const client_curve *curve, const char *what, int events,
                              void **monitor) {
    if (monitor)
        *monitor = NULL;
    void *s = zmq_socket(zctx, type);
    if (!s) {
        cli_error("%s: cannot create a socket: %s", what, zmq_strerror(zmq_errno()));
        return NULL;
    }
    if (curve && curve->on && set_curve(s, curve) != 0) {
        cli_error("%s: CURVE: %s", what, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return NULL;
    }
    int immediate = (flags & CLIENT_IMMEDIATE) != 0, never = -1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_setsockopt(s, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    if (flags & CLIENT_ONCE)
        zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &never, sizeof never);
    if (monitor && !(*monitor = monitor_of(zctx, s, events))) {
        cli_error("%s: cannot monitor a socket: %s", what, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return NULL;
    }
    if (((flags & CLIENT_BIND) ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint)) != 0) {
        cli_error("%s: %s: %s", what, endpoint, zmq_strerror(zmq_errno()));
        if (monitor) {
            zmq_close(*monitor);
            *monitor = NULL;
        }
        zmq_close(s);
        return NULL;
    }
    return s;
}

int client_monitor_event(void *monitor, long wait_ms) {
    zmq_pollitem_t item = {.socket = monitor, .events = ZMQ_POLLIN};
    if (zmq_poll(&item, 1, wait_ms) <= 0)
        return 0;
    uint16_t event = 0;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    for (int frame = 0, more = 1; more; frame++) { /* the event and value, then the address */
        if (zmq_msg_recv(&msg, monitor, 0) < 0)
            break;
        if (frame == 0 && zmq_msg_size(&msg) >= sizeof event)
            memcpy(&event, zmq_msg_data(&msg), sizeof event);
        more = zmq_msg_more(&msg);
    }
    zmq_msg_close(&msg);
    return event;
}

Tsmine__V1__ControlReply *client_control(void *zctx, const char *endpoint, int command,
                                         const char *stream_id, long timeout_ms,
                                         const client_curve *curve, const char *what, int *rc) {
    return client_control_watch(zctx, endpoint, command, stream_id, timeout_ms, curve, what, NULL,
                                rc);
}

Tsmine__V1__ControlReply *client_control_watch(void *zctx, const char *endpoint, int command,
                                               const char *stream_id, long timeout_ms,
                                               const client_curve *curve, const char *what,
                                               void *watch, int *rc) {
    *rc = EX_UNAVAILABLE;
    void *sock = client_secure_socket(zctx, ZMQ_REQ, endpoint, 0, 0, curve, what);
    if (!sock)
        return NULL;
    Tsmine__V1__ControlRequest req = TSMINE__V1__CONTROL_REQUEST__INIT;
    req.schema_version = 1;
    req.command = (Tsmine__V1__ControlRequest__Command)command;
    req.stream_id = (char *)(stream_id ? stream_id : "");
    size_t len = tsmine__v1__control_request__get_packed_size(&req);
    uint8_t *buf = malloc(len ? len : 1);
    int timeout = timeout_ms ? (int)timeout_ms : -1;
    zmq_setsockopt(sock, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_pollitem_t items[2] = {{.socket = sock, .events = ZMQ_POLLIN},
                               {.socket = watch, .events = ZMQ_POLLIN}};
    Tsmine__V1__ControlReply *r = NULL;
    int ready = -1;
    if (buf && zmq_send(sock, buf, tsmine__v1__control_request__pack(&req, buf), 0) >= 0) {
        double end = cli_now() + 1e-3 * (double)timeout_ms;
        for (int wait = timeout;;) { /* a signal (EINTR) waits again for what is left */
            ready = zmq_poll(items, watch ? 2 : 1, wait);
            if (ready >= 0 || zmq_errno() != EINTR)
                break;
            if (timeout >= 0 && (wait = (int)(1e3 * (end - cli_now()))) <= 0) {
                ready = 0;
                break;
            }
        }
    }
    if (ready > 0 && !(items[0].revents & ZMQ_POLLIN)) { /* watch first: give up, unsaid */
        *rc = 0;
        goto out;
    }
    if (ready <= 0) {
        cli_error("%s: %s: no reply within %ld ms (is tsmined running, with its control "
                  "socket there?%s)",
                  what, endpoint, timeout_ms, client_curve_hint(curve));
        goto out;
    }
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock, 0) >= 0)
        r = tsmine__v1__control_reply__unpack(NULL, zmq_msg_size(&msg), zmq_msg_data(&msg));
    if (!r) {
        cli_error("%s: %s: the reply (%zu bytes) does not decode as a ControlReply", what, endpoint,
                  zmq_msg_size(&msg));
        *rc = EX_PROTOCOL;
    }
    zmq_msg_close(&msg);
out:
    free(buf);
    zmq_close(sock);
    return r;
}

size_t client_pack_batch(const char *stream_id, uint64_t first_seq, const int64_t *ts_ns,
                         int64_t first_ts_ns, int64_t period_ns, const double *values, size_t n,
                         uint8_t **buf, size_t *cap) {
    Tsmine__V1__SampleBatch b = TSMINE__V1__SAMPLE_BATCH__INIT;
    b.schema_version = 1;
    b.stream_id = (char *)stream_id;
    b.first_seq = first_seq;
    if (ts_ns) {
        b.n_timestamps_ns = n;
        b.timestamps_ns = (int64_t *)ts_ns;
    } else {
        b.first_timestamp_ns = first_ts_ns;
        b.period_ns = period_ns;
    }
    b.n_values = n;
    b.values = (double *)values;
    size_t need = tsmine__v1__sample_batch__get_packed_size(&b);
    if (need > *cap) {
        uint8_t *p = realloc(*buf, need);
        if (!p)
            return 0;
        *buf = p;
        *cap = need;
    }
    return tsmine__v1__sample_batch__pack(&b, *buf);
}

const char *client_alert_kind_name(int kind) {
    return tsm_alert_kind_name(kind);
}

void client_print_double(FILE *out, double x) {
    char buf[40];
    if (isfinite(x)) {
        emit_double(buf, sizeof buf, x);
        fputs(buf, out);
    } else {
        fputs("null", out);
    }
}

void client_print_alert(FILE *out, const Tsmine__V1__Alert *a) {
    char buf[TSM_ALERT_JSON_MAX];
    tsm_alert_json(buf, sizeof buf, a);
    fprintf(out, "%s\n", buf);
}

int64_t client_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
