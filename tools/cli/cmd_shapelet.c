/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_shapelet.c - `tsmine shapelet train|predict|show`: a decision tree of shapelets
 * (kernels/shapelet_tree.h, DESIGN 4.4) trained on a labelled UCR set (.tsv or .ts,
 * lib/ucr_io.h), saved as a JSON model (lib/shapelet_model.h), applied to new data
 * and shown.
 *
 *   train   --train FILE [--test FILE] [--min-len N] [--max-len N] [--step N]
 *           [--dtw-window W] [--heuristic] [--logical] [--max-depth D] [--min-node N]
 *           [--budget-mb MB] [--seed S] [--backend B] [--threads N] [-o MODEL] [-v]
 *           [--progress | -q]
 *           progress on stderr (progress.h); last on stdout one JSON line
 *           {"train_accuracy":A,"test_accuracy":B,"seconds":S,"shapelets":K}
 *   predict --model MODEL DATA   one label per line, then {"accuracy":A} when DATA
 *                                has labels
 *   show    --model MODEL        the tree: each node's shapelet, source, threshold,
 *                                gain (--format json: one JSON object per node) */
#include "cmd_shapelet.h"

#include "cli.h"
#include "lib/shapelet_model.h"
#include "lib/ucr_io.h"
#include "shapelet_tree.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

enum {
    SH_TRAIN = 1u << 0,
    SH_PREDICT = 1u << 1,
    SH_SHOW = 1u << 2,
    SH_ALL = SH_TRAIN | SH_PREDICT | SH_SHOW,
};

enum {
    K_TRAIN = CLI_KEY_LONG,
    K_TEST,
    K_MIN_LEN,
    K_MAX_LEN,
    K_STEP,
    K_DTW,
    K_HEURISTIC,
    K_LOGICAL,
    K_MAX_DEPTH,
    K_MIN_NODE,
    K_BUDGET,
    K_SEED,
    K_BACKEND,
    K_THREADS,
    K_MODEL,
    K_FORMAT,
    K_INPUT_FORMAT,
    K_PROGRESS,
};

static const cli_option options[] = {
    {"train", K_TRAIN, 1, "FILE", SH_TRAIN, "labelled training set (.tsv or .ts), required"},
    {"test", K_TEST, 1, "FILE", SH_TRAIN, "labelled test set: reports test_accuracy"},
    {"min-len", K_MIN_LEN, 1, "N", SH_TRAIN, "shortest shapelet (default 3)"},
    {"max-len", K_MAX_LEN, 1, "N", SH_TRAIN, "longest shapelet (default: the series length)"},
    {"step", K_STEP, 1, "N", SH_TRAIN, "length step (default 1)"},
    {"dtw-window", K_DTW, 1, "W", SH_TRAIN, "Sakoe-Chiba band of DTW (default 0: Euclidean)"},
    {"heuristic", K_HEURISTIC, 0, NULL, SH_TRAIN, "heuristic split point (seed 003 4.3)"},
    {"logical", K_LOGICAL, 0, NULL, SH_TRAIN,
     "logical shapelets: a node may join two by AND/OR (seed 002)"},
    {"max-depth", K_MAX_DEPTH, 1, "D", SH_TRAIN, "deepest split level (default 0: no limit)"},
    {"min-node", K_MIN_NODE, 1, "N", SH_TRAIN, "smaller nodes become leaves (default 2)"},
    {"budget-mb", K_BUDGET, 1, "MB", SH_TRAIN, "distances held at once (default 64)"},
    {"seed", K_SEED, 1, "S", SH_TRAIN, "seed of the heuristic's shuffles (default 1)"},
    {"backend", K_BACKEND, 1, "B", SH_TRAIN | SH_PREDICT, "auto, cpu or cuda (default auto)"},
    {"threads", K_THREADS, 1, "N", SH_TRAIN | SH_PREDICT, "CPU threads (default: all)"},
    {"output", 'o', 1, "FILE", SH_TRAIN, "write the model to FILE"},
    {"model", K_MODEL, 1, "FILE", SH_PREDICT | SH_SHOW, "the model file, required"},
    {"format", K_FORMAT, 1, "F", SH_SHOW, "text (default) or json"},
    {"input-format", K_INPUT_FORMAT, 1, "F", SH_TRAIN | SH_PREDICT,
     "tsv or ts (default: by extension)"},
    {"verbose", 'v', 0, NULL, SH_ALL, "more messages on stderr"},
    {"progress", K_PROGRESS, 0, NULL, SH_TRAIN,
     "progress and ETA on stderr also when it is not a terminal"},
    {"quiet", 'q', 0, NULL, SH_TRAIN, "no progress line (default: on a terminal)"},
    {"help", 'h', 0, NULL, SH_ALL, "this help"},
};

typedef struct {
    const char *train, *test, *model, *output;
    uint64_t min_len, max_len, step, w, max_depth, min_node, budget_mb, seed;
    int heuristic, logical, threads, verbose, json, progress, quiet;
    tsm_backend backend;
    ucr_format input_format;
} sh_args;

/* Applies one option (cli_apply_fn; dest is the sh_args). */
static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    sh_args *a = dest;
    uint64_t v;
    switch (o->key) {
    case K_TRAIN: a->train = arg; return 0;
    case K_TEST: a->test = arg; return 0;
    case K_MODEL: a->model = arg; return 0;
    case 'o': a->output = arg; return 0;
    case K_HEURISTIC: a->heuristic = 1; return 0;
    case K_LOGICAL: a->logical = 1; return 0;
    case 'v': a->verbose = 1; return 0;
    case K_PROGRESS: a->progress = 1; return 0;
    case 'q': a->quiet = 1; return 0;
    case K_MIN_LEN: return cli_parse_count(t, o, arg, 3, SIZE_MAX, &a->min_len);
    case K_MAX_LEN: return cli_parse_count(t, o, arg, 3, SIZE_MAX, &a->max_len);
    case K_STEP: return cli_parse_count(t, o, arg, 1, SIZE_MAX, &a->step);
    case K_DTW: return cli_parse_count(t, o, arg, 0, SIZE_MAX, &a->w);
    case K_MAX_DEPTH: return cli_parse_count(t, o, arg, 0, 10000, &a->max_depth);
    case K_MIN_NODE: return cli_parse_count(t, o, arg, 2, SIZE_MAX, &a->min_node);
    case K_BUDGET: return cli_parse_count(t, o, arg, 1, 1u << 20, &a->budget_mb);
    case K_SEED: return cli_parse_count(t, o, arg, 0, UINT64_MAX, &a->seed);
    case K_THREADS:
        if (cli_parse_count(t, o, arg, 1, 4096, &v) != 0)
            return EX_USAGE;
        a->threads = (int)v;
        return 0;
    case K_BACKEND:
        if (tsm_backend_parse(arg, &a->backend) == 0)
            return 0;
        cli_error("%s: --backend: unknown backend '%s' (auto, cpu or cuda)", t->command, arg);
        return EX_USAGE;
    case K_FORMAT:
        if (strcmp(arg, "json") == 0 || strcmp(arg, "text") == 0) {
            a->json = strcmp(arg, "json") == 0;
            return 0;
        }
        cli_error("%s: --format: unknown format '%s' (text or json)", t->command, arg);
        return EX_USAGE;
    case K_INPUT_FORMAT:
        if (ucr_format_parse(arg, &a->input_format) == 0)
            return 0;
        cli_error("%s: --input-format: unknown format '%s' (tsv or ts)", t->command, arg);
        return EX_USAGE;
    }
    return EX_SOFTWARE;
}

/* A ctx for the wanted backend, with messages; NULL after printing why. *rc gets the
 * exit status. */
static tsm_ctx *open_ctx(const sh_args *a, int *rc) {
    tsm_ctx *ctx = NULL;
    const char *why = NULL;
    tsm_status st = tsm_ctx_new(&ctx, a->backend, &why);
    if (st != TSM_OK) {
        cli_error("backend %s is unavailable: %s", tsm_backend_name(a->backend),
                  why ? why : "no reason given");
        *rc = st == TSM_EBACKEND ? EX_UNAVAILABLE : EX_SOFTWARE;
        return NULL;
    }
    tsm_ctx_set_threads(ctx, a->threads);
    if (a->verbose)
        cli_error("shapelet: backend %s, %d threads%s%s", tsm_backend_name(tsm_ctx_backend(ctx)),
                  tsm_ctx_threads(ctx), why ? "; " : "", why ? why : "");
    *rc = 0;
    return ctx;
}

/* Labels of set s as class indices of classes (-1 for a label not among them). */
static int *class_indices(const ucr_set *s, const char *const *classes, size_t nc) {
    int *y = malloc(s->n * sizeof *y);
    if (y)
        for (size_t j = 0; j < s->n; j++)
            y[j] = s->label ? ucr_class_index(classes, nc, s->label[j]) : -1;
    return y;
}

/* Fraction of predictions equal to the labels. */
static double accuracy(const int *pred, const int *y, size_t n) {
    size_t ok = 0;
    for (size_t j = 0; j < n; j++)
        ok += pred[j] == y[j];
    return n ? (double)ok / (double)n : 0.0;
}

/* The search's progress hook (one search per tree node), fed to the progress line. */
static void search_progress(void *arg, size_t done, size_t total) {
    progress_update(arg, "search", done, total);
}

/* Predicts set s with the tree; labels into pred (s->n). Returns an exit status. */
static int predict_set(tsm_ctx *ctx, const tsm_stree *tree, const ucr_set *s, int *pred) {
    tsm_status st = tsm_stree_predict(ctx, tree, s->x, s->n, s->len, pred);
    return st == TSM_OK ? 0 : cli_fail_status(ctx, st);
}

/* Reads a set, printing the error; returns an exit status. */
static int read_set(const char *path, ucr_format fmt, ucr_set *s) {
    char err[512];
    return cli_input_status(ucr_read(path, fmt, s, err, sizeof err), err);
}

static int run_train(const sh_args *a) {
    if (!a->train) {
        cli_error("shapelet train: --train FILE is required (see 'tsmine shapelet train --help')");
        return EX_USAGE;
    }
    ucr_set tr = {0}, te = {0};
    tsm_ctx *ctx = NULL;
    tsm_stree *tree = NULL;
    const char **classes = NULL;
    size_t nc = 0;
    int *y = NULL, *yt = NULL, *pred = NULL;
    int rc = read_set(a->train, a->input_format, &tr);
    if (rc == 0 && a->test)
        rc = read_set(a->test, a->input_format, &te);
    if (rc != 0)
        goto done;
    if (!tr.label) {
        cli_error("%s: the training set has no class labels", a->train);
        rc = EX_DATAERR;
        goto done;
    }
    if (a->test && !te.label) {
        cli_error("%s: the test set has no class labels", a->test);
        rc = EX_DATAERR;
        goto done;
    }
    if (ucr_classes(&tr, &classes, &nc) != 0 || !(y = class_indices(&tr, classes, nc)) ||
        (a->test && !(yt = class_indices(&te, classes, nc))) ||
        !(pred = malloc((tr.n > te.n ? tr.n : te.n) * sizeof *pred))) {
        cli_error("out of memory");
        rc = EX_SOFTWARE;
        goto done;
    }
    if (!(ctx = open_ctx(a, &rc)))
        goto done;
    tsm_shapelet_data data = {tr.n, tr.len, tr.x, y, (int)nc};
    progress_line pl;
    progress_begin(&pl, "shapelet train", a->progress, a->quiet);
    tsm_shapelet_opts so = {.min_len = a->min_len,
                            .max_len = a->max_len ? a->max_len : tr.len,
                            .step = a->step,
                            .w = a->w,
                            .heuristic = a->heuristic,
                            .seed = a->seed,
                            .budget = (size_t)a->budget_mb << 20,
                            .progress = search_progress,
                            .progress_arg = &pl};
    tsm_stree_opts to = {.max_depth = a->max_depth, .min_node = a->min_node, .logical = a->logical};
    cli_error("shapelet train: %s: %zu series of length %zu, %zu classes; lengths %zu..%zu step "
              "%zu, w = %zu, backend %s",
              a->train, tr.n, tr.len, nc, so.min_len, so.max_len, so.step, so.w,
              tsm_backend_name(tsm_ctx_backend(ctx)));
    double t0 = cli_now();
    tsm_status st = tsm_stree_train(ctx, &data, &so, &to, &tree);
    double seconds = cli_now() - t0;
    progress_end(&pl);
    if (st != TSM_OK) {
        rc = cli_fail_status(ctx, st);
        goto done;
    }
    size_t shapelets = 0;
    for (size_t k = 0; k < tree->n_nodes; k++)
        shapelets += !tree->nodes[k].leaf + (tree->nodes[k].op != TSM_SHAPELET_SINGLE);
    cli_error("shapelet train: %zu nodes, %zu shapelets, %.3f s", tree->n_nodes, shapelets,
              seconds);
    if (a->output) {
        FILE *f = fopen(a->output, "w");
        shapelet_model m = {tree,       (char **)classes, tr.len,      so.min_len,
                            so.max_len, so.step,          a->heuristic};
        if (!f || shapelet_model_write(f, &m) != 0 || fclose(f) != 0) {
            cli_error("%s: cannot write the model", a->output);
            rc = EX_CANTCREAT;
            goto done;
        }
    }
    if ((rc = predict_set(ctx, tree, &tr, pred)) != 0)
        goto done;
    double acc_train = accuracy(pred, y, tr.n);
    printf("{\"train_accuracy\":%.6f", acc_train);
    if (a->test) {
        if ((rc = predict_set(ctx, tree, &te, pred)) != 0)
            goto done;
        printf(",\"test_accuracy\":%.6f", accuracy(pred, yt, te.n));
    }
    printf(",\"seconds\":%.6f,\"shapelets\":%zu}\n", seconds, shapelets);
    rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
done:
    free(pred), free(y), free(yt);
    free(classes);
    tsm_stree_destroy(&tree);
    tsm_ctx_destroy(&ctx);
    ucr_free(&tr), ucr_free(&te);
    return rc;
}

static int read_model(const char *path, shapelet_model *m) {
    char err[512];
    if (!path) {
        cli_error("shapelet: --model FILE is required");
        return EX_USAGE;
    }
    return cli_input_status(shapelet_model_read(path, m, err, sizeof err), err);
}

static int run_predict(const sh_args *a, const char *file) {
    shapelet_model m = {0};
    ucr_set s = {0};
    tsm_ctx *ctx = NULL;
    int *pred = NULL, *y = NULL;
    int rc = read_model(a->model, &m);
    if (rc == 0)
        rc = read_set(file, a->input_format, &s);
    if (rc != 0)
        goto done;
    if (!(pred = malloc(s.n * sizeof *pred)) ||
        !(y = class_indices(&s, (const char *const *)m.classes, (size_t)m.tree->n_classes))) {
        cli_error("out of memory");
        rc = EX_SOFTWARE;
        goto done;
    }
    if (!(ctx = open_ctx(a, &rc)) || (rc = predict_set(ctx, m.tree, &s, pred)) != 0)
        goto done;
    for (size_t j = 0; j < s.n; j++)
        printf("%s\n", m.classes[pred[j]]);
    if (s.label)
        printf("{\"accuracy\":%.6f}\n", accuracy(pred, y, s.n));
    rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
done:
    free(pred), free(y);
    tsm_ctx_destroy(&ctx);
    ucr_free(&s);
    shapelet_model_free(&m);
    return rc;
}

/* Prints node k and its subtree, indented by depth (text form). */
static void show_text(const shapelet_model *m, size_t k, int depth) {
    const tsm_stree_node *nd = &m->tree->nodes[k];
    if (nd->leaf) {
        printf("%*s[%zu] leaf: class %s (%zu training series)\n", 2 * depth, "", k,
               m->classes[nd->label], nd->n_train);
        return;
    }
    printf("%*s[%zu] shapelet from series %zu, start %zu, length %zu: distance <= %.6g -> [%zu], "
           "else [%zu]; gain %.6g, gap %.6g (%zu training series)\n",
           2 * depth, "", k, nd->series, nd->start, nd->length, nd->threshold, nd->left, nd->right,
           nd->gain, nd->gap, nd->n_train);
    printf("%*s    values:", 2 * depth, "");
    for (size_t i = 0; i < nd->length; i++)
        printf(" %.6g", nd->values[i]);
    printf("\n");
    if (nd->op != TSM_SHAPELET_SINGLE) {
        printf("%*s    %s shapelet from series %zu, start %zu, length %zu (distance: the %s of "
               "the two)\n",
               2 * depth, "", nd->op == TSM_SHAPELET_AND ? "AND" : "OR", nd->series2, nd->start2,
               nd->length2, nd->op == TSM_SHAPELET_AND ? "larger" : "smaller");
        printf("%*s    values:", 2 * depth, "");
        for (size_t i = 0; i < nd->length2; i++)
            printf(" %.6g", nd->values2[i]);
        printf("\n");
    }
    show_text(m, nd->left, depth + 1);
    show_text(m, nd->right, depth + 1);
}

static int run_show(const sh_args *a) {
    shapelet_model m = {0};
    int rc = read_model(a->model, &m);
    if (rc != 0)
        return rc;
    if (a->json) { /* one object per node, as in the model file */
        for (size_t k = 0; k < m.tree->n_nodes; k++) {
            shapelet_model_write_node(stdout, &m, k);
            putchar('\n');
        }
    } else {
        printf("shapelet tree: %zu nodes, %d classes, w = %zu, trained on series of length %zu "
               "(lengths %zu..%zu step %zu%s)\n",
               m.tree->n_nodes, m.tree->n_classes, m.tree->w, m.series_length, m.min_len, m.max_len,
               m.step, m.heuristic ? ", heuristic split" : "");
        show_text(&m, 0, 0);
    }
    rc = fflush(stdout) == 0 ? 0 : EX_IOERR;
    shapelet_model_free(&m);
    return rc;
}

static void usage(const cli_optable *t, const char *sub) {
    static const char *syn[] = {"--train FILE [--test FILE] [OPTIONS]", "--model FILE DATA",
                                "--model FILE"};
    static const char *desc[] = {
        "Trains a decision tree of shapelets (exact search over every subsequence of the "
        "training series, lengths --min-len..--max-len by --step; Euclidean or DTW with "
        "--dtw-window). Progress goes to stderr; last on stdout one JSON line "
        "{\"train_accuracy\":A,\"test_accuracy\":B,\"seconds\":S,\"shapelets\":K}. "
        "Inputs: UCR .tsv (label first) or sktime/aeon .ts.",
        "Prints the predicted class of each series of DATA, one per line, then "
        "{\"accuracy\":A} when DATA has labels.",
        "Prints the tree: each node's shapelet (values, source series and start), threshold, "
        "gain and separation gap."};
    int k = strcmp(sub, "train") == 0 ? 0 : strcmp(sub, "predict") == 0 ? 1 : 2;
    cli_help(t, syn[k], desc[k]);
    printf("\nExit status: 0 success, 64 usage, 65 bad input data, 66 cannot open input, 69 "
           "backend unavailable, 70 internal error.\n");
}

int shapelet_main(int argc, char **argv) {
    static const char *subs[] = {"train", "predict", "show"};
    static const unsigned masks[] = {SH_TRAIN, SH_PREDICT, SH_SHOW};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("Usage: tsmine shapelet train|predict|show [OPTIONS]\n\n"
               "Shapelet discovery and shapelet-tree classification of labelled series.\n"
               "Run 'tsmine shapelet SUBCOMMAND --help' for its options.\n");
        return argc < 2 ? EX_USAGE : 0;
    }
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(argv[1], subs[i]) == 0)
            k = i;
    if (k < 0) {
        cli_error("shapelet: unknown subcommand '%s' (train, predict or show)", argv[1]);
        return EX_USAGE;
    }
    char name[32];
    snprintf(name, sizeof name, "shapelet %s", subs[k]);
    cli_optable t = {name, options, sizeof options / sizeof options[0], masks[k], 20};
    sh_args a = {.min_len = 3, .step = 1, .min_node = 2, .budget_mb = 64, .seed = 1};
    int rc = cli_getopt(&t, argc - 1, argv + 1, apply, &a);
    if (rc == CLI_HELP) {
        usage(&t, subs[k]);
        return 0;
    }
    if (rc != 0)
        return rc;
    int operands = argc - 1 - optind;
    if (operands != (k == 1 ? 1 : 0)) {
        cli_error("%s: %s (see 'tsmine %s --help')", name,
                  k == 1 ? "expects one DATA file" : "takes no operands", name);
        return EX_USAGE;
    }
    if (k == 0)
        return run_train(&a);
    if (k == 1)
        return run_predict(&a, argv[1 + optind]);
    return run_show(&a);
}
