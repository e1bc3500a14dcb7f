/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_detect.c - `tsmine detect`: the daemon's detection run offline over files
 * (DESIGN 5.3). The same stream engine as tsmined (stream/engine.h), no sockets: one
 * stream per file, named after the file's base name without its extension; sample k of
 * a file has sequence number k and timestamp k * period; missing values (empty, nan,
 * inf) are left out as `tsmine replay` leaves them out, so the engine sees the same gap
 * the daemon would. The alerts are printed as `tsmine alerts` prints them, so a
 * detection run and a daemon fed the same samples give the same lines (but alert_id,
 * numbered here from 1, and detected_at_ns, the wall clock).
 *
 *   tsmine detect [-c tsmined.conf] [--backend B] [--threads N] [--period-ns P]
 *                 [--scores FILE] FILE...
 *
 * With -c, each stream takes the parameters the configuration gives its id (streams
 * default and overrides) and the backend and threads it names; nothing else of it is
 * used. The files are processed one after the other, each in batches of 256 samples
 * (or of the stream's window, when shorter: the engine takes no more at once) with a
 * tick after each batch (the engine's alerts do not depend on the batching). */
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "engine.h"
#include "lib/alert_json.h" /* tsm_alert_view_name */
#include "lib/alert_msg.h"
#include "lib/client.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#define BATCH 256

enum { K_BACKEND = CLI_KEY_LONG, K_THREADS, K_PERIOD, K_SCORES, K_PROGRESS };

static const cli_option options[] = {
    {"config", 'c', 1, "FILE", 1, "stream settings, backend and threads from tsmined.conf FILE"},
    {"backend", K_BACKEND, 1, "auto|cpu|cuda", 1, "compute backend (default: the config's, auto)"},
    {"threads", K_THREADS, 1, "N", 1, "CPU threads (default: the config's, all cores)"},
    {"period-ns", K_PERIOD, 1, "P", 1, "sample k has timestamp k * P (default 1000000000)"},
    {"scores", K_SCORES, 1, "FILE", 1, "also write every subsequence's raw and calibrated score"},
    {"input-format", 'f', 1, "FMT", 1, "csv|txt|npy|f64 (default: by extension)"},
    {"verbose", 'v', 0, NULL, 1, "say what was chosen (m, backend) on stderr"},
    {"progress", K_PROGRESS, 0, NULL, 1,
     "progress and ETA on stderr also when it is not a terminal"},
    {"quiet", 'q', 0, NULL, 1, "no progress line (default: on a terminal)"},
    {"help", 'h', 0, NULL, 1, "print this help and exit"},
};

typedef struct {
    const char *config, *scores;
    const char *backend; /* NULL: the config's */
    int threads;         /* -1: the config's */
    int64_t period_ns;
    series_format input_format;
    int verbose, progress, quiet;
} detect_args;

static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    detect_args *a = dest;
    uint64_t v;
    switch (o->key) {
    case 'c': a->config = arg; return 0;
    case K_SCORES: a->scores = arg; return 0;
    case 'v': a->verbose = 1; return 0;
    case K_PROGRESS: a->progress = 1; return 0;
    case 'q': a->quiet = 1; return 0;
    case 'f': return cli_parse_input_format(t, arg, &a->input_format);
    case K_BACKEND:
        if (strcmp(arg, "auto") && strcmp(arg, "cpu") && strcmp(arg, "cuda")) {
            cli_error("detect: --backend: expected auto, cpu or cuda (got '%s')", arg);
            return EX_USAGE;
        }
        a->backend = arg;
        return 0;
    case K_THREADS:
        if (cli_parse_count(t, o, arg, 0, 1024, &v) != 0)
            return EX_USAGE;
        a->threads = (int)v;
        return 0;
    case K_PERIOD:
        if (cli_parse_count(t, o, arg, 1, INT64_MAX / ((int64_t)1 << 32), &v) != 0)
            return EX_USAGE;
        a->period_ns = (int64_t)v;
        return 0;
    }
    return EX_USAGE;
}

/* What the engine's callbacks share. */
typedef struct {
    const tsc_config *cfg;
    uint64_t next_id;
    FILE *scores;
    int write_failed;
} run_state;

static int params_for(void *user, const char *stream_id, tss_params *out) {
    const run_state *r = user;
    *out = tsc_stream_params_for(r->cfg, stream_id);
    return 0;
}

/* Prints one alert as `tsmine alerts` does (lib/client.c). */
static void on_alert(void *user, const char *stream_id, const tss_alert *al) {
    run_state *r = user;
    Tsmine__V1__Alert msg = TSMINE__V1__ALERT__INIT;
    tsm_alert_msg_fill(&msg, al);
    msg.alert_id = r->next_id++;
    msg.stream_id = (char *)stream_id;
    msg.detected_at_ns = client_realtime_ns();
    client_print_alert(stdout, &msg);
}

/* One --scores line: the subsequence (its start and m), each view and its neighbour,
 * each view's score, and the score the events follow with the view it comes from. */
static void on_score(void *user, const char *stream_id, const tss_scored *sc) {
    const char *view = tsm_alert_view_name(sc->view);
    run_state *r = user;
    fputs("{\"stream_id\":", r->scores);
    emit_json_string(r->scores, stream_id);
    fprintf(r->scores, ",\"start_seq\":%llu,\"m\":%u,\"raw\":", (unsigned long long)sc->start,
            sc->m);
    client_print_double(r->scores, sc->raw);
    fprintf(r->scores, ",\"neighbor_seq\":%llu,\"magnitude\":", (unsigned long long)sc->neighbor);
    client_print_double(r->scores, sc->magnitude);
    fprintf(r->scores, ",\"magnitude_neighbor_seq\":%llu,\"level\":",
            (unsigned long long)sc->magnitude_neighbor);
    client_print_double(r->scores, sc->level);
    fputs(",\"shape_score\":", r->scores);
    client_print_double(r->scores, sc->shape_score);
    fputs(",\"magnitude_score\":", r->scores);
    client_print_double(r->scores, sc->magnitude_score);
    fputs(",\"level_score\":", r->scores);
    client_print_double(r->scores, sc->level_score);
    fputs(",\"score\":", r->scores);
    client_print_double(r->scores, sc->score);
    fprintf(r->scores, ",\"view\":\"%s\"", view ? view : "none");
    if (fputs("}\n", r->scores) < 0)
        r->write_failed = 1;
}

/* The stream id of a file: its base name without the extension. */
static void stream_name(const char *path, char *out, size_t len) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    const char *base = strcmp(path, "-") == 0 ? "stdin" : basename(copy);
    snprintf(out, len, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

/* Feeds one file's finite runs to the engine as stream id, in batches of at most batch
 * samples, a tick after each, reporting the samples fed to pl. Returns 0 or an exit
 * status (after saying why). */
static int feed(tss_engine *e, const char *id, const series *s, int64_t period, size_t batch,
                progress_line *pl) {
    char err[512];
    for (size_t i = 0; i < s->n;) {
        if (!isfinite(s->v[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < s->n && j - i < batch && isfinite(s->v[j]))
            j++;
        tss_reject why =
            tss_engine_ingest(e, id, i, NULL, (int64_t)i * period, period, s->v + i, j - i);
        if (why != TSS_OK) {
            cli_error("detect: %s: samples %zu..%zu refused (%s)", id, i, j - 1,
                      tss_reject_name(why));
            return EX_DATAERR;
        }
        if (tss_engine_tick(e, err, sizeof err) != 0) {
            cli_error("detect: %s: %s", id, err);
            return EX_SOFTWARE;
        }
        i = j;
        progress_update(pl, id, i, s->n);
    }
    if (tss_engine_flush(e, err, sizeof err) != 0) {
        cli_error("detect: %s: %s", id, err);
        return EX_SOFTWARE;
    }
    return 0;
}

static void usage(const cli_optable *t) {
    cli_help(t, "[-c tsmined.conf] [OPTIONS] FILE...",
             "Runs tsmined's detection offline: one stream per FILE, named after its base\n"
             "name without the extension, sample k with sequence number k (missing values\n"
             "left out, as `tsmine replay` leaves them out: a gap). Prints the alerts as\n"
             "`tsmine alerts` prints them, one JSON line each; with no options the\n"
             "daemon's embedded defaults (subsequence auto, warmup 300, threshold 0.997),\n"
             "with -c those a configuration file gives each stream id. --scores writes\n"
             "one JSON line per scored subsequence, its views and their scores:\n"
             "{\"stream_id\":..,\"start_seq\":I,\"m\":M,\"raw\":D,\"neighbor_seq\":J,\n"
             "\"magnitude\":D2,\"magnitude_neighbor_seq\":J2,\"level\":L,\"shape_score\":C1,\n"
             "\"magnitude_score\":C2,\"level_score\":C3,\"score\":S,\"view\":\"magnitude\"}\n"
             "(score: the one the events follow, from view; null: none yet).");
    printf("\nInputs: .csv/.txt (the last column), .npy, .f64; see `tsmine discord --help`.\n"
           "Exit status: 0, 64 usage, 65 bad input data or configuration, 66 cannot open a\n"
           "file, 69 backend unavailable, 70 internal error, 74 output error.\n");
}

int detect_main(int argc, char **argv) {
    const cli_optable t = {"detect", options, sizeof options / sizeof options[0], 1, 22};
    detect_args a = {.threads = -1, .period_ns = 1000000000};
    int rc = cli_getopt(&t, argc, argv, apply, &a);
    if (rc == CLI_HELP) {
        usage(&t);
        return fflush(stdout) == 0 ? 0 : EX_IOERR;
    }
    if (rc != 0)
        return rc;
    if (optind >= argc) {
        cli_error("detect: no FILE (see 'tsmine detect --help')");
        return EX_USAGE;
    }
    static tsc_config cfg;
    char err[TSC_ERROR_LEN];
    tsc_defaults(&cfg);
    if (a.config && tsc_load(a.config, &cfg, err) != 0) {
        cli_error("detect: %s", err);
        return EX_DATAERR;
    }
    const char *backend = a.backend ? a.backend : cfg.backend;
    run_state st = {.cfg = &cfg, .next_id = 1};
    if (a.scores && !(st.scores = fopen(a.scores, "w"))) {
        cli_error("detect: %s: %s", a.scores, strerror(errno));
        return EX_CANTCREAT;
    }
    tss_engine_options opt = {
        .backend = strcmp(backend, "cpu") == 0    ? TSM_BACKEND_CPU
                   : strcmp(backend, "cuda") == 0 ? TSM_BACKEND_CUDA
                                                  : TSM_BACKEND_AUTO,
        .threads = a.threads >= 0 ? a.threads : cfg.threads,
        .max_streams = (uint32_t)(argc - optind) + 1,
        .on_alert = on_alert,
        .params_for = params_for,
        .on_score = st.scores ? on_score : NULL,
        .user = &st,
    };
    tss_engine *e = NULL;
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0) {
        cli_error("detect: %s", err);
        if (st.scores)
            fclose(st.scores);
        return EX_UNAVAILABLE;
    }
    progress_line pl;
    progress_begin(&pl, "detect", a.progress, a.quiet);
    for (int i = optind; i < argc && rc == 0; i++) {
        series s = {0};
        char id[TSS_MAX_ID + 1];
        rc = cli_input_status(series_read(argv[i], a.input_format, &s, err, sizeof err), err);
        if (rc != 0)
            break;
        stream_name(argv[i], id, sizeof id);
        const uint32_t window = tsc_stream_params_for(&cfg, id).window;
        rc = feed(e, id, &s, a.period_ns, window < BATCH ? window : BATCH, &pl);
        series_free(&s);
        if (rc == 0 && a.verbose) {
            tss_stream_info info;
            if (tss_engine_stream_find(e, id, &info) == 0)
                cli_error("detect: %s: %llu samples, m = %u%s (period %u), %llu events, backend %s",
                          id, (unsigned long long)info.samples, info.params.subsequence,
                          info.subsequence_auto ? " auto" : "", info.period,
                          (unsigned long long)info.events, tsm_backend_name(tss_engine_backend(e)));
        }
        if (fflush(stdout) != 0) {
            cli_error("detect: writing the output: %s", strerror(errno));
            rc = EX_IOERR;
        }
    }
    progress_end(&pl);
    tss_engine_destroy(&e);
    if (st.scores && (fclose(st.scores) != 0 || st.write_failed) && rc == 0) {
        cli_error("detect: writing %s failed", a.scores);
        rc = EX_IOERR;
    }
    return rc;
}
