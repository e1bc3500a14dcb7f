/* SPDX-License-Identifier: Apache-2.0 */
/* bench_shapelet.c - `tsmine-bench shapelet --data FILE... [OPTIONS]`: times one
 * shapelet discovery (tsm_shapelet_discover: every candidate of the whole training
 * set, the root node of a tree) per dataset, band w and backend, and prints one JSON
 * object per run:
 *
 *   {"bench":"shapelet_discovery","dataset":"GunPoint","backend":"cpu","threads":2,
 *    "n":50,"len":150,"min_len":3,"max_len":150,"step":1,"w":0,"candidates":C,
 *    "seconds":S,"gain":G,"series":I,"start":S0,"length":L}
 *
 * seconds is the best of --repeat runs. --series K takes the first K training series
 * only (a subset, for machines where the full search takes too long: the line's n
 * says which). */
#include "bench_shapelet.h"

#include "lib/ucr_io.h"
#include "shapelet.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#define MAX_ITEMS 16

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The dataset's name: the file name up to "_TRAIN" or the extension. */
static void dataset_name(const char *path, char *out, size_t len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t k = strcspn(base, ".");
    const char *tr = strstr(base, "_TRAIN");
    if (tr && (size_t)(tr - base) < k)
        k = (size_t)(tr - base);
    snprintf(out, len, "%.*s", (int)k, base);
}

static void usage(void) {
    printf("Usage: tsmine-bench shapelet --data FILE [--data FILE...] [OPTIONS]\n\n"
           "Times one exact shapelet discovery over every candidate of each labelled\n"
           "training set (.ts or .tsv) and prints one JSON object per run.\n\n"
           "  --data FILE       training set (repeatable, up to 16)\n"
           "  --w W             DTW band, 0 = Euclidean (repeatable; default: 0 and 3)\n"
           "  --backend B       auto, cpu or cuda (repeatable; default auto)\n"
           "  --threads T       CPU threads (default: all)\n"
           "  --min-len N       shortest candidate (default 3)\n"
           "  --max-len N       longest candidate (default: the series length)\n"
           "  --step N          length step (default 1)\n"
           "  --series K        only the first K training series (default: all)\n"
           "  --repeat R        runs per configuration, the best reported (default 1)\n");
}

/* Parses a whole number >= min; returns 0 or -1. */
static int count_arg(const char *s, size_t min, size_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || v < min)
        return -1;
    *out = (size_t)v;
    return 0;
}

int bench_shapelet_main(int argc, char **argv) {
    enum { O_DATA = 256, O_W, O_BACKEND, O_THREADS, O_MIN, O_MAX, O_STEP, O_SERIES, O_REPEAT };
    static const struct option longopts[] = {{"data", 1, NULL, O_DATA},
                                             {"w", 1, NULL, O_W},
                                             {"backend", 1, NULL, O_BACKEND},
                                             {"threads", 1, NULL, O_THREADS},
                                             {"min-len", 1, NULL, O_MIN},
                                             {"max-len", 1, NULL, O_MAX},
                                             {"step", 1, NULL, O_STEP},
                                             {"series", 1, NULL, O_SERIES},
                                             {"repeat", 1, NULL, O_REPEAT},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *data[MAX_ITEMS];
    size_t ws[MAX_ITEMS], nd = 0, nw = 0, nb = 0, threads = 0, min_len = 3, max_len = 0, step = 1,
                          series = 0, repeat = 1;
    tsm_backend backends[2];
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        size_t v = 0;
        int bad = 0;
        switch (c) {
        case O_DATA:
            bad = nd == MAX_ITEMS;
            if (!bad)
                data[nd++] = optarg;
            break;
        case O_W:
            bad = nw == MAX_ITEMS || count_arg(optarg, 0, &v);
            if (!bad)
                ws[nw++] = v;
            break;
        case O_BACKEND:
            bad = nb == 2 || tsm_backend_parse(optarg, &backends[nb]);
            nb += !bad;
            break;
        case O_THREADS: bad = count_arg(optarg, 1, &threads); break;
        case O_MIN: bad = count_arg(optarg, 3, &min_len); break;
        case O_MAX: bad = count_arg(optarg, 3, &max_len); break;
        case O_STEP: bad = count_arg(optarg, 1, &step); break;
        case O_SERIES: bad = count_arg(optarg, 2, &series); break;
        case O_REPEAT: bad = count_arg(optarg, 1, &repeat); break;
        case 'h': usage(); return 0;
        default: bad = 1;
        }
        if (bad) {
            fprintf(stderr, "tsmine-bench: shapelet: invalid or unknown option '%s'\n",
                    argv[optind - 1]);
            return EX_USAGE;
        }
    }
    if (nd == 0) {
        fprintf(stderr, "tsmine-bench: shapelet: give at least one --data FILE\n");
        return EX_USAGE;
    }
    if (nw == 0)
        ws[nw++] = 0, ws[nw++] = 3;
    if (nb == 0)
        backends[nb++] = TSM_BACKEND_AUTO;
    int rc = 0;
    for (size_t b = 0; b < nb && rc == 0; b++) {
        tsm_ctx *ctx = NULL;
        const char *why = NULL;
        if (tsm_ctx_new(&ctx, backends[b], &why) != TSM_OK) {
            fprintf(stderr, "tsmine-bench: backend %s is unavailable: %s\n",
                    tsm_backend_name(backends[b]), why ? why : "?");
            return EX_UNAVAILABLE;
        }
        tsm_ctx_set_threads(ctx, (int)threads);
        for (size_t d = 0; d < nd && rc == 0; d++) {
            ucr_set s;
            char err[512], name[128];
            if (ucr_read(data[d], UCR_FMT_AUTO, &s, err, sizeof err) != SERIES_OK) {
                fprintf(stderr, "tsmine-bench: %s\n", err);
                rc = EX_DATAERR;
                break;
            }
            const char **classes = NULL;
            size_t nc = 0;
            int *y = malloc(s.n * sizeof *y);
            if (!y || !s.label || ucr_classes(&s, &classes, &nc) != 0) {
                fprintf(stderr, "tsmine-bench: %s: unlabelled or out of memory\n", data[d]);
                rc = EX_DATAERR;
            }
            for (size_t j = 0; rc == 0 && j < s.n; j++)
                y[j] = ucr_class_index(classes, nc, s.label[j]);
            dataset_name(data[d], name, sizeof name);
            size_t n = series && series < s.n ? series : s.n;
            tsm_shapelet_data sd = {n, s.len, s.x, y, (int)nc};
            tsm_shapelet_opts so = {
                .min_len = min_len, .max_len = max_len ? max_len : s.len, .step = step};
            size_t cand = 0;
            for (size_t l = so.min_len; l <= so.max_len && l <= s.len; l += step)
                cand += n * (s.len - l + 1);
            for (size_t k = 0; k < nw && rc == 0; k++) {
                so.w = ws[k];
                double best = -1.0;
                tsm_shapelet sh = {0};
                for (size_t r = 0; r < repeat && rc == 0; r++) {
                    double t0 = seconds_now();
                    tsm_status st = tsm_shapelet_discover(ctx, &sd, &so, &sh);
                    double t = seconds_now() - t0;
                    if (st != TSM_OK) {
                        fprintf(stderr, "tsmine-bench: %s w=%zu: %s\n", name, so.w,
                                tsm_ctx_error(ctx));
                        rc = EX_SOFTWARE;
                    }
                    best = best < 0 || t < best ? t : best;
                }
                if (rc != 0)
                    break;
                printf("{\"bench\":\"shapelet_discovery\",\"dataset\":\"%s\",\"backend\":\"%s\","
                       "\"threads\":%d,\"n\":%zu,\"len\":%zu,\"min_len\":%zu,\"max_len\":%zu,"
                       "\"step\":%zu,\"w\":%zu,\"candidates\":%zu,\"seconds\":%.6f,\"gain\":%.9g,"
                       "\"series\":%zu,\"start\":%zu,\"length\":%zu}\n",
                       name, tsm_backend_name(tsm_ctx_backend(ctx)), tsm_ctx_threads(ctx), n, s.len,
                       so.min_len, so.max_len, step, so.w, cand, best, sh.split.gain, sh.series,
                       sh.start, sh.length);
                fflush(stdout);
            }
            free(classes);
            free(y);
            ucr_free(&s);
        }
        tsm_ctx_destroy(&ctx);
    }
    return rc;
}
