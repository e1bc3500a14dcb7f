/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_profile.c - `tsmine profile`: the matrix profile or left profile (tsm_mp; over
 * MPI ranks through dist.h). */
#include "cli.h"
#include "commands.h"
#include "dist.h"
#include "lib/array_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* Prints one row per subsequence; undefined distances (non-finite subsequence, or no
 * eligible neighbour) print as null with neighbour -1. */
static int print_rows(const cli_args *a, const cli_session *s, const double *dist,
                      const int64_t *nbr, size_t N) {
    static const emit_field fields[] = {{"index", EMIT_INT},
                                        {"distance", EMIT_DIST},
                                        {"neighbor", EMIT_INT},
                                        {"timestamp", EMIT_TEXT},
                                        {"neighbor_timestamp", EMIT_TEXT}};
    emitter e;
    emit_begin(&e, stdout, a->format, fields, cli_nfields(s, sizeof fields / sizeof fields[0], 2));
    for (size_t i = 0; i < N; i++) {
        int64_t j = isfinite(dist[i]) ? nbr[i] : -1;
        emit_value row[] = {{.i = (int64_t)i},
                            {.d = dist[i]},
                            {.i = j},
                            {.s = series_time(&s->data, (int64_t)i)},
                            {.s = series_time(&s->data, j)}};
        emit_row(&e, row);
    }
    return cli_emit_end(&e);
}

/* Writes the distances to a->output and the neighbours beside it (OUT with ".neighbor"
 * before its extension) as .npy or raw float64 arrays, as the kernel left them:
 * +inf with neighbour -1 when there is no eligible neighbour, NaN with -1 for a
 * subsequence with a missing value. */
static int write_arrays(const cli_args *a, const double *dist, const int64_t *nbr, size_t N) {
    array_format fmt = a->arrays == SERIES_FMT_NPY ? ARRAY_NPY : ARRAY_F64;
    char *npath = array_companion(a->output, ".neighbor");
    if (!npath) {
        cli_error("out of memory");
        return EX_SOFTWARE;
    }
    int created = 0;
    const char *path = a->output;
    int rc = array_write_f64(path, fmt, dist, N, &created);
    if (rc == 0)
        path = npath, rc = array_write_i64(path, fmt, nbr, N, &created);
    if (rc != 0)
        cli_error("%s %s: %s", created ? "writing" : "cannot create", path, strerror(errno));
    if (rc == 0 && a->verbose)
        cli_error("profile: wrote %s and %s", a->output, npath);
    free(npath);
    return rc == 0 ? 0 : created ? EX_IOERR : EX_CANTCREAT;
}

/* Computes the (left) profile and prints or writes it. */
static int run(const cli_args *a, cli_session *s) {
    size_t N = s->stats->N;
    double *dist = malloc(N * sizeof *dist);
    int64_t *nbr = malloc(N * sizeof *nbr);
    if (!dist || !nbr) {
        free(dist);
        free(nbr);
        cli_error("out of memory for a profile of %zu subsequences", N);
        return EX_SOFTWARE;
    }
    double t0 = cli_now();
    int emit; /* under MPI (dist.h), rank 0 alone prints */
    tsm_status st = dist_profile(s->ctx, s->stats, a->excl, a->left, dist, nbr, a->verbose, &emit);
    int rc = st == TSM_OK ? 0 : cli_fail_status(s->ctx, st);
    double t1 = cli_now();
    cli_progress_end(s);
    if (rc == 0 && !emit) {
        free(dist);
        free(nbr);
        return 0;
    }
    if (rc == 0) {
        size_t defined = 0;
        for (size_t i = 0; i < N && !defined; i++)
            defined = isfinite(dist[i]);
        if (!defined)
            cli_say_empty("profile", a, s, "distances",
                          a->left ? "no subsequence has a left neighbour at least E before it"
                                  : "no two subsequences without a missing value");
        rc = a->arrays != SERIES_FMT_AUTO ? write_arrays(a, dist, nbr, N)
                                          : print_rows(a, s, dist, nbr, N);
    }
    if (rc == 0 && a->verbose)
        cli_error("profile: kernel %.3f s, output %.3f s", t1 - t0, cli_now() - t1);
    free(dist);
    free(nbr);
    return rc;
}

const cli_command cmd_profile = {
    .name = "profile",
    .synopsis = "-m M [--left] [--excl E] [--format npy|f64 -o OUT] [OPTIONS] FILE",
    .summary = "the matrix profile (nearest-neighbour distance of every subsequence)",
    .description =
        "Prints, for every subsequence of length M, the distance to its nearest\n"
        "non-self-match and that neighbour's index (with --left, the nearest among the\n"
        "subsequences at least E before it). One line per subsequence:\n"
        "{\"index\":I,\"distance\":D,\"neighbor\":J}; \"distance\":null,\"neighbor\":-1 when\n"
        "undefined (the subsequence has a missing value, or no eligible neighbour);\n"
        "\"timestamp\" and \"neighbor_timestamp\" when the input has a timestamp column.\n"
        "With --format npy or f64 it writes the distances (float64) to OUT and the\n"
        "neighbours to OUT with \".neighbor\" before its extension (int64 in .npy, float64\n"
        "in f64): +inf and -1 where there is no eligible neighbour, NaN and -1 where the\n"
        "subsequence has a missing value.",
    .options = CLI_OPT_LEFT | CLI_OPT_ARRAYS,
    .run = run,
};
