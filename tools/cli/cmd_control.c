/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_control.c - the control requests that change tsmined's streams or configuration:
 * `tsmine reset`, `tsmine delete`, `tsmine recalibrate`, `tsmine reload`, `tsmine
 * checkpoint` (DESIGN 6).
 * Each sends one ControlRequest and prints the daemon's one-line answer. */
#include "cli.h"
#include "commands.h"
#include "companion.h"

#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <zmq.h>

/* Sends command (for a->stream, or "" with none) and prints the reply's message. */
static int request(const client_args *a, int command, const char *what) {
    if (a->stream && strlen(a->stream) > 255) {
        cli_error("%s: --stream: a stream id has at most 255 bytes", what);
        return EX_USAGE;
    }
    int rc = EX_UNAVAILABLE;
    void *zctx = zmq_ctx_new();
    if (!zctx)
        return rc;
    Tsmine__V1__ControlReply *r =
        client_control(zctx, a->endpoint, command, a->stream ? a->stream : "", a->timeout_ms,
                       &a->curve, what, &rc);
    if (r && !r->ok) {
        cli_error("%s: the daemon refused: %s", what, *r->error ? r->error : "no reason given");
        rc = EX_DATAERR;
    } else if (r) {
        printf("%s\n", r->message);
        rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
    }
    if (r)
        tsmine__v1__control_reply__free_unpacked(r, NULL);
    zmq_ctx_term(zctx);
    return rc;
}

static int run_reset(const client_args *a) {
    return request(a, TSMINE__V1__CONTROL_REQUEST__COMMAND__RESET_STREAM, "reset");
}

static int run_delete(const client_args *a) {
    return request(a, TSMINE__V1__CONTROL_REQUEST__COMMAND__DELETE_STREAM, "delete");
}

static int run_recalibrate(const client_args *a) {
    return request(a, TSMINE__V1__CONTROL_REQUEST__COMMAND__RECALIBRATE, "recalibrate");
}

static int run_reload(const client_args *a) {
    return request(a, TSMINE__V1__CONTROL_REQUEST__COMMAND__RELOAD, "reload");
}

static int run_checkpoint(const client_args *a) {
    return request(a, TSMINE__V1__CONTROL_REQUEST__COMMAND__CHECKPOINT, "checkpoint");
}

#define EXIT_STATUS                                                                                \
    "Exit status: 0, 64 usage, 65 the daemon refused (e.g. unknown stream), 69 no reply\n"         \
    "within --timeout-ms, 74 output error, 76 a reply that does not decode."
#define CONTROL_SYNOPSIS "[--endpoint E] [--timeout-ms T] [--curve-key K --server-key S]"

const client_command cmd_reset = {
    .name = "reset",
    .synopsis = "-s ID " CONTROL_SYNOPSIS,
    .summary = "make a stream's next batch start it over (a sender that restarted its numbering)",
    .description =
        "Asks tsmined to start stream ID over at its next batch, whatever that batch's\n"
        "sequence number and timestamps: a RESET alert, then a new window (the score\n"
        "history and the subsequence length stay). For a sender that restarted its\n"
        "numbering without a newer epoch, or one jammed by a batch far ahead.\n" EXIT_STATUS,
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .options = CLIENT_OPT_STREAM_ID,
    .run = run_reset,
};

const client_command cmd_delete = {
    .name = "delete",
    .synopsis = "-s ID " CONTROL_SYNOPSIS,
    .summary = "remove a stream and its state from tsmined",
    .description = "Asks tsmined to remove stream ID: its window, score history, counters and\n"
                   "samples not yet processed (counted as samples_dropped). A later batch of\n"
                   "that id starts a new stream.\n" EXIT_STATUS,
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .options = CLIENT_OPT_STREAM_ID,
    .run = run_delete,
};

const client_command cmd_recalibrate = {
    .name = "recalibrate",
    .synopsis = "[-s PREFIX] " CONTROL_SYNOPSIS,
    .summary =
        "restart the warm-up of tsmined's streams (all, or those whose id starts with PREFIX)",
    .description = "Asks tsmined to restart the score history (and an automatic subsequence\n"
                   "length) of every stream whose id starts with PREFIX (all without -s).\n"
                   "Prints how many.\n" EXIT_STATUS,
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 5000,
    .options = CLIENT_OPT_STREAM_PREFIX,
    .run = run_recalibrate,
};

const client_command cmd_reload = {
    .name = "reload",
    .synopsis = CONTROL_SYNOPSIS,
    .summary = "make tsmined re-read its configuration file (as SIGHUP does)",
    .description =
        "Asks tsmined to re-read its configuration file and prints what changed.\n"
        "A file that does not load keeps the running configuration (exit 65).\n" EXIT_STATUS,
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 10000,
    .run = run_reload,
};

const client_command cmd_checkpoint = {
    .name = "checkpoint",
    .synopsis = CONTROL_SYNOPSIS,
    .summary = "make tsmined write its checkpoint now (as SIGUSR1 does, but waiting for it)",
    .description =
        "Asks tsmined to write the state of every stream that changed since its last\n"
        "checkpoint to its state directory, and prints what it wrote once it is on disk\n"
        "(before a planned power cut, a backup or an upgrade). A checkpoint that fails\n"
        "(a full disk) exits 65 with the daemon's error.\n" EXIT_STATUS,
    .endpoint = CLIENT_CONTROL_DEFAULT,
    .timeout_ms = 60000,
    .run = run_checkpoint,
};
