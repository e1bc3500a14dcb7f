/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_discord.c - `tsmine discord`: top-k discords (tsm_discords_topk), or with -r
 * every range discord (tsm_pd3_range); over MPI ranks through dist.h. */
#include "cli.h"
#include "commands.h"
#include "dist.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>

/* Finds the discords the arguments ask for and prints them with ranks 1.. (best
 * first for top-k, index order for a range). */
static int run(const cli_args *a, cli_session *s) {
    static const emit_field fields[] = {
        {"rank", EMIT_INT},     {"index", EMIT_INT},      {"distance", EMIT_DIST},
        {"neighbor", EMIT_INT}, {"timestamp", EMIT_TEXT}, {"neighbor_timestamp", EMIT_TEXT}};
    tsm_pd3_stats counters = {0};
    tsm_discord *found = NULL;
    size_t count = 0;
    tsm_status st;
    if (a->have_r) {
        st = dist_pd3_range(s->ctx, s->stats, a->excl, a->r, a->seglen, &found, &count, &counters,
                            a->verbose);
    } else {
        size_t k = a->k < s->stats->N ? a->k : s->stats->N; /* no more discords than that */
        found = malloc(k * sizeof *found);
        if (!found) {
            cli_error("out of memory for %zu discords", k);
            return EX_SOFTWARE;
        }
        st = dist_discords_topk(s->ctx, s->stats, a->excl, k, a->seglen, found, &count, &counters,
                                a->verbose);
    }
    if (st != TSM_OK || dist_rank() != 0) { /* under MPI (dist.h), rank 0 alone prints */
        free(found);
        return st != TSM_OK ? cli_fail_status(s->ctx, st) : 0;
    }
    cli_progress_end(s);
    if (a->verbose)
        cli_error("discord: %zu found, %" PRIu64 " distances, %" PRIu64 " passes, last r = %.17g",
                  count, counters.distances, counters.passes, counters.r);

    if (count == 0) {
        char why[96];
        snprintf(why, sizeof why, "no subsequence has a nearest-neighbour distance >= %.17g", a->r);
        cli_say_empty("discord", a, s, "discords", why);
    }

    emitter e;
    emit_begin(&e, stdout, a->format, fields, cli_nfields(s, sizeof fields / sizeof fields[0], 2));
    for (size_t i = 0; i < count; i++) {
        emit_value row[] = {{.i = (int64_t)i + 1},
                            {.i = found[i].index},
                            {.d = found[i].distance},
                            {.i = found[i].neighbor},
                            {.s = series_time(&s->data, found[i].index)},
                            {.s = series_time(&s->data, found[i].neighbor)}};
        emit_row(&e, row);
    }
    free(found);
    return cli_emit_end(&e);
}

const cli_command cmd_discord = {
    .name = "discord",
    .synopsis = "-m M [-k K | -r R] [--excl E] [OPTIONS] FILE",
    .summary = "top-k or range discords (the most anomalous subsequences)",
    .description =
        "Prints the K subsequences of length M farthest from their nearest non-self-match\n"
        "(chosen greedily, each a non-self-match of those before it), best first; with -r,\n"
        "every subsequence whose nearest-neighbour distance is >= R, in index order. One\n"
        "line per discord: {\"rank\":1,\"index\":I,\"distance\":D,\"neighbor\":J}, and\n"
        "\"timestamp\" and \"neighbor_timestamp\" when the input has a timestamp column.",
    .options = CLI_OPT_K | CLI_OPT_R | CLI_OPT_SEGLEN,
    .run = run,
};
