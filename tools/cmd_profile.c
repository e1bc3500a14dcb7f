/* cmd_profile.c - `tsmine profile`: the matrix profile or left profile (tsm_mp; over
 * MPI ranks through dist.h). */
#include "cli.h"
#include "commands.h"
#include "dist.h"

#include <math.h>
#include <stdlib.h>
#include <sysexits.h>

/* Computes the (left) profile and prints one row per subsequence; undefined distances
 * (non-finite subsequence, or no eligible neighbour) print as null with neighbour -1. */
static int run(const cli_args *a, cli_session *s) {
    static const emit_field fields[] = {
        {"index", EMIT_INT}, {"distance", EMIT_DIST}, {"neighbor", EMIT_INT}};
    size_t N = s->stats->N;
    double *dist = malloc(N * sizeof *dist);
    int64_t *nbr = malloc(N * sizeof *nbr);
    if (!dist || !nbr) {
        free(dist);
        free(nbr);
        cli_error("out of memory for a profile of %zu subsequences", N);
        return EX_SOFTWARE;
    }
    int emit; /* under MPI (dist.h), rank 0 alone prints */
    tsm_status st = dist_profile(s->ctx, s->stats, a->excl, a->left, dist, nbr, a->verbose, &emit);
    if (st != TSM_OK || !emit) {
        free(dist);
        free(nbr);
        return st != TSM_OK ? cli_fail_status(s->ctx, st) : 0;
    }

    emitter e;
    emit_begin(&e, stdout, a->format, fields, sizeof fields / sizeof fields[0]);
    for (size_t i = 0; i < N; i++) {
        int defined = isfinite(dist[i]);
        emit_value row[] = {{.i = (int64_t)i}, {.d = dist[i]}, {.i = defined ? nbr[i] : -1}};
        emit_row(&e, row);
    }
    free(dist);
    free(nbr);
    return cli_emit_end(&e);
}

const cli_command cmd_profile = {
    .name = "profile",
    .synopsis = "-m M [--left] [--excl E] [OPTIONS] FILE",
    .summary = "the matrix profile (nearest-neighbour distance of every subsequence)",
    .description =
        "Prints, for every subsequence of length M, the distance to its nearest\n"
        "non-self-match and that neighbour's index (with --left, the nearest among the\n"
        "subsequences at least E before it). One line per subsequence:\n"
        "{\"index\":I,\"distance\":D,\"neighbor\":J}; \"distance\":null,\"neighbor\":-1 when\n"
        "undefined (the subsequence has a missing value, or no eligible neighbour).",
    .options = CLI_OPT_LEFT,
    .run = run,
};
