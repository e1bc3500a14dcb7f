/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_plot.c - `tsmine plot`: a PNG or SVG picture of a series with its top discords
 * and motif pairs (computed here with the same kernels as `tsmine discord|motif`), or
 * the results of discord/motif/profile/detect/alerts given as JSON lines (--from),
 * marked, the labelled anomaly windows of a windows file shaded (--windows), and the
 * (left) matrix profile beneath on the same axis (plot.h).
 *
 *   tsmine plot -m M [-k K] [--motifs K] [--left] [--from RESULTS] [--windows W]
 *               -o OUT.png|OUT.svg FILE
 *
 * It takes options the batch commands do not (--from, --windows, --motifs, -W, -H,
 * --title), so it parses its own table (cli_getopt) and calls tsmine.c's plot_main. */
#include "cli.h"
#include "commands.h"
#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "plot.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

enum {
    K_EXCL = CLI_KEY_LONG,
    K_MOTIFS,
    K_LEFT,
    K_NO_PROFILE,
    K_FROM,
    K_WINDOWS,
    K_TITLE,
    K_INPUT_FORMAT,
    K_BACKEND,
    K_THREADS,
};

#define DISCORDS_DEFAULT 3
#define MOTIFS_DEFAULT   1
#define WIDTH_DEFAULT    1200
#define HEIGHT_DEFAULT   600

static const cli_option options[] = {
    {NULL, 'm', 1, "M|auto", 1,
     "subsequence length (required): 3 <= M <= n, or auto (as in 'tsmine discord')"},
    {NULL, 'k', 1, "K", 1, "mark the top K discords (default 3; 0: none)"},
    {"motifs", K_MOTIFS, 1, "K", 1, "mark the top K motif pairs (default 1; 0: none)"},
    {"left", K_LEFT, 0, NULL, 1, "draw the left matrix profile (neighbours j <= i - E)"},
    {"no-profile", K_NO_PROFILE, 0, NULL, 1, "draw the series only (no O(n^2) profile to compute)"},
    {"excl", K_EXCL, 1, "E", 1, "exclusion zone (default M)"},
    {"from", K_FROM, 1, "RESULTS", 1, "mark these results (JSON lines; - is standard input)"},
    {"windows", K_WINDOWS, 1, "FILE", 1, "shade FILE's labelled windows (as 'tsmine score' takes)"},
    {"output", 'o', 1, "OUT", 1, "picture to write (required): .png or .svg"},
    {"width", 'W', 1, "PX", 1, "picture width (default 1200)"},
    {"height", 'H', 1, "PX", 1, "picture height (default 600)"},
    {"title", K_TITLE, 1, "TEXT", 1, "title line (default: FILE, n and m)"},
    {"input-format", K_INPUT_FORMAT, 1, "csv|txt|npy|f64", 1,
     "input format (default: by extension)"},
    CLI_INPUT_OPTIONS(1),
    {"backend", K_BACKEND, 1, "auto|cpu|cuda", 1, "compute backend (default auto)"},
    {"threads", K_THREADS, 1, "N", 1, "CPU threads (default: all)"},
    {"verbose", 'v', 0, NULL, 1, "report backend, timings and where the plot put things"},
    {"help", 'h', 0, NULL, 1, "print this help and exit"},
};

typedef struct {
    const char *file, *from, *windows, *output, *title;
    size_t m, excl, discords, motifs;
    int have_m, auto_m, have_excl, left, no_profile, verbose, threads, width, height;
    tsm_backend backend;
    series_options input; /* --input-format, --column, --delimiter, --decimal-comma */
} plot_args;

/* Applies one option (cli_apply_fn; dest is the plot_args). */
static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    plot_args *a = dest;
    uint64_t v = 0;
    switch (o->key) {
    case 'm':
        if (strcmp(arg, "auto") == 0) {
            a->auto_m = 1, a->have_m = 1;
            return 0;
        }
        /* fall through */
    case K_EXCL:
    case 'k':
    case K_MOTIFS:
        if (cli_parse_count(t, o, arg, o->key == K_EXCL ? 1 : 0, SIZE_MAX, &v) != 0)
            return EX_USAGE;
        if (o->key == 'm')
            a->m = (size_t)v, a->have_m = 1;
        else if (o->key == K_EXCL)
            a->excl = (size_t)v, a->have_excl = 1;
        else if (o->key == 'k')
            a->discords = (size_t)v;
        else
            a->motifs = (size_t)v;
        return 0;
    case 'W':
    case 'H':
        if (cli_parse_count(t, o, arg, 200, 20000, &v) != 0)
            return EX_USAGE;
        *(o->key == 'W' ? &a->width : &a->height) = (int)v;
        return 0;
    case K_THREADS:
        if (cli_parse_count(t, o, arg, 1, 4096, &v) != 0)
            return EX_USAGE;
        a->threads = (int)v;
        return 0;
    case K_LEFT: a->left = 1; return 0;
    case K_NO_PROFILE: a->no_profile = 1; return 0;
    case K_FROM: a->from = arg; return 0;
    case K_WINDOWS: a->windows = arg; return 0;
    case K_TITLE: a->title = arg; return 0;
    case 'o': a->output = arg; return 0;
    case 'v': a->verbose = 1; return 0;
    case K_INPUT_FORMAT: return cli_parse_input_format(t, arg, &a->input.fmt);
    case CLI_KEY_COLUMN:
    case CLI_KEY_DELIMITER:
    case CLI_KEY_DECIMAL_COMMA: return cli_apply_input(t, o, arg, &a->input);
    case K_BACKEND:
        if (tsm_backend_parse(arg, &a->backend) == 0)
            return 0;
        cli_error("plot: --backend: unknown backend '%s' (auto, cpu or cuda)", arg);
        return EX_USAGE;
    }
    return EX_SOFTWARE;
}

static void usage(const cli_optable *t) {
    cli_help(t,
             "-m M [-k K] [--motifs K] [--from RESULTS] [--windows W] [OPTIONS] -o OUT.png|OUT.svg "
             "FILE",
             "Draws the series of FILE with its top K discords (red) and top motif pairs\n"
             "(a colour per pair) marked, and its matrix profile beneath on the same axis,\n"
             "as a PNG or SVG picture (by OUT's extension). With --from, marks the results\n"
             "in RESULTS instead: the JSON lines of 'tsmine discord', 'motif', 'profile'\n"
             "(drawn as the profile) or 'detect' and 'alerts' (one stream's; anomaly events\n"
             "in orange) run on FILE with the same -m. With --windows, shades (green) the\n"
             "labelled anomaly windows of FILE in W, a windows file as 'tsmine score' reads\n"
             "it (NAB's combined_windows.json): the entry whose path FILE's ends in, or the\n"
             "only one named as FILE without folder and extension; FILE must have a\n"
             "timestamp column, and each window's bounds must be timestamps of its rows.");
    printf("\nFILE is read as by 'tsmine discord' (see its --help); - reads standard input.\n"
           "Exit status: 0 success, 64 usage or bad parameters, 65 bad input data, 66 cannot\n"
           "open input, 69 built without cairo or backend unavailable, 70 internal error,\n"
           "73 cannot write OUT.\n");
}

/* Parses argv into a; returns 0, CLI_HELP after printing the help, or EX_USAGE. */
static int parse_args(int argc, char **argv, plot_args *a) {
    const cli_optable t = {"plot", options, sizeof options / sizeof options[0], 1, 24};
    *a = (plot_args){.discords = DISCORDS_DEFAULT,
                     .motifs = MOTIFS_DEFAULT,
                     .width = WIDTH_DEFAULT,
                     .height = HEIGHT_DEFAULT};
    int rc = cli_getopt(&t, argc, argv, apply, a);
    if (rc == CLI_HELP)
        usage(&t);
    if (rc != 0)
        return rc;
    const char *why = !a->have_m          ? "missing -m M, the subsequence length"
                      : !a->output        ? "missing -o OUT.png or -o OUT.svg"
                      : optind >= argc    ? "missing FILE (use - for standard input)"
                      : optind + 1 < argc ? "one FILE only"
                                          : NULL;
    size_t len = a->output ? strlen(a->output) : 0;
    if (!why && !(len > 4 && (strcasecmp(a->output + len - 4, ".png") == 0 ||
                              strcasecmp(a->output + len - 4, ".svg") == 0)))
        why = "-o: OUT must end in .png or .svg";
    if (!why && a->from && strcmp(a->from, "-") == 0 && strcmp(argv[optind], "-") == 0)
        why = "FILE and --from cannot both be standard input";
    if (why) {
        cli_error("plot: %s (see 'tsmine plot --help')", why);
        return EX_USAGE;
    }
    a->file = argv[optind];
    return cli_check_input("plot", &a->input);
}

/* Marks the top discords and motif pairs of s (the kernels of `tsmine discord` and
 * `tsmine motif`, with their defaults) in f. Returns 0 or an exit status. */
static int find_marks(const plot_args *a, tsm_ctx *ctx, const tsm_stats *s, plot_figure *f) {
    size_t kd = a->discords < s->N ? a->discords : s->N, km = a->motifs < s->N ? a->motifs : s->N;
    size_t nd = 0, nm = 0;
    tsm_discord *d = malloc((kd ? kd : 1) * sizeof *d);
    tsm_motif *mo = malloc((km ? km : 1) * sizeof *mo);
    tsm_status st = d && mo ? TSM_OK : TSM_ENOMEM;
    if (st == TSM_OK && kd)
        st = tsm_discords_topk(ctx, s, a->excl, kd, 0, d, &nd, NULL);
    if (st == TSM_OK && km)
        st = tsm_motifs_auto(ctx, s, a->excl, km, 0, TSM_MK_SEED_DEFAULT, mo, &nm, NULL, NULL);
    int rc = st == TSM_OK ? 0 : cli_fail_status(ctx, st);
    for (size_t i = 0; rc == 0 && i < nd; i++)
        rc = plot_add_mark(f, PLOT_DISCORD, (int)i + 1, (uint64_t)d[i].index, a->m);
    for (size_t i = 0; rc == 0 && i < nm; i++) {
        rc = plot_add_mark(f, PLOT_MOTIF, (int)i + 1, (uint64_t)mo[i].a, a->m);
        rc = rc ? rc : plot_add_mark(f, PLOT_MOTIF, (int)i + 1, (uint64_t)mo[i].b, a->m);
    }
    if (rc < 0) {
        cli_error("plot: out of memory for the marks");
        rc = EX_SOFTWARE;
    }
    if (rc == 0 && nd + nm == 0 && kd + km > 0)
        cli_error("plot: no discord or motif to mark: %zu subsequences, none with a "
                  "non-self-match at |i-j| >= %zu",
                  s->N, a->excl);
    if (rc == 0 && a->verbose)
        cli_error("plot: %zu discords, %zu motif pairs", nd, nm);
    free(d);
    free(mo);
    return rc;
}

/* The profile beneath: the matrix profile, or the left one, into f->profile. */
static int find_profile(const plot_args *a, tsm_ctx *ctx, const tsm_stats *s, plot_figure *f) {
    int64_t *nbr = malloc(s->N * sizeof *nbr);
    f->profile = malloc(s->N * sizeof *f->profile);
    if (!nbr || !f->profile) {
        free(nbr);
        cli_error("plot: out of memory for a profile of %zu subsequences", s->N);
        return EX_SOFTWARE;
    }
    tsm_status st = a->left ? tsm_mp(ctx, s, a->excl, NULL, NULL, f->profile, nbr)
                            : tsm_mp(ctx, s, a->excl, f->profile, nbr, NULL, NULL);
    free(nbr);
    return st == TSM_OK ? 0 : cli_fail_status(ctx, st);
}

/* The compute context for --backend and --threads; NULL after saying why. */
static tsm_ctx *open_ctx(const plot_args *a, int *rc) {
    tsm_ctx *ctx = NULL;
    const char *why = NULL;
    tsm_status st = tsm_ctx_new(&ctx, a->backend, &why);
    if (st != TSM_OK) {
        cli_error("plot: backend %s is unavailable: %s", tsm_backend_name(a->backend),
                  why ? why : tsm_status_name(st));
        *rc = st == TSM_EBACKEND ? EX_UNAVAILABLE : EX_SOFTWARE;
        return NULL;
    }
    tsm_ctx_set_threads(ctx, a->threads);
    if (a->verbose)
        cli_error("plot: backend %s, %d threads", tsm_backend_name(tsm_ctx_backend(ctx)),
                  tsm_ctx_threads(ctx));
    return ctx;
}

/* Builds the figure of series d (marks, profile, title) and draws it; m is chosen
 * here for -m auto. */
static int plot_series(plot_args *a, const series *d) {
    int rc = 0;
    tsm_ctx *ctx = open_ctx(a, &rc);
    if (!ctx)
        return rc;
    uint32_t period;
    if (a->auto_m && (rc = cli_auto_m("plot", ctx, d->v, d->n, &a->m, &period)) != 0) {
        tsm_ctx_destroy(&ctx);
        return rc;
    }
    if (!a->have_excl)
        a->excl = a->m;
    tsm_stats *s = NULL;
    plot_figure f = {.v = d->v, .n = d->n, .m = a->m, .left = a->left};
    char title[512];
    double t0 = cli_now();
    tsm_status st = tsm_check_shape(ctx, d->n, a->m, a->excl);
    if (st == TSM_OK)
        st = tsm_stats_new(ctx, d->v, d->n, a->m, &s);
    if (st != TSM_OK)
        rc = cli_fail_status(ctx, st);
    if (rc == 0)
        rc = a->from ? plot_read_results(a->from, &f) : find_marks(a, ctx, s, &f);
    if (rc == 0 && a->windows)
        rc = plot_read_windows(a->windows, a->file, d, &f);
    if (rc == 0 && a->no_profile) { /* also none read with --from */
        free(f.profile);
        f.profile = NULL;
    } else if (rc == 0 && !f.profile) {
        rc = find_profile(a, ctx, s, &f);
    }
    if (rc == 0) {
        const char *base = strrchr(a->file, '/');
        snprintf(title, sizeof title, "%s   n = %zu, m = %zu", base ? base + 1 : a->file, d->n,
                 a->m);
        f.title = a->title ? a->title : title;
        plot_frame fr;
        if (a->verbose)
            cli_error("plot: computed in %.3f s", cli_now() - t0);
        rc = plot_draw(&f, a->output, a->width, a->height, &fr);
        if (rc == 0 && a->verbose)
            cli_error("plot: %s: %dx%d, sample i at x = %g + %g * i / %zu; series y %g..%g, "
                      "profile y %g..%g",
                      a->output, a->width, a->height, fr.x0, fr.x1 - fr.x0, d->n - 1, fr.series_y0,
                      fr.series_y1, fr.profile_y0, fr.profile_y1);
    }
    plot_figure_free(&f);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    return rc;
}

int plot_main(int argc, char **argv) {
    plot_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc == CLI_HELP ? (fflush(stdout) == 0 ? 0 : EX_IOERR) : rc;
    if (!plot_available())
        return plot_draw(NULL, a.output, a.width, a.height, NULL); /* says why */
    series d = {0};
    char err[512];
    rc = cli_input_status(series_read_with(a.file, &a.input, &d, err, sizeof err), err);
    if (rc == 0)
        rc = plot_series(&a, &d);
    series_free(&d);
    return rc;
}
