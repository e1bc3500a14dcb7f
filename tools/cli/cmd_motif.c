/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_motif.c - `tsmine motif`: top-k motif pairs by the scan of every pair
 * (tsm_motifs_scan, --method scan), by MK (tsm_mk_motifs, --method mk), or by the scan
 * then MK on near-exact repeats (the default, auto: tsm_motifs_auto's rule); over MPI
 * ranks through dist.h. */
#include "cli.h"
#include "commands.h"
#include "dist.h"

#include <inttypes.h>
#include <stdlib.h>
#include <sysexits.h>

/* Finds the top-k motif pairs and prints them best first, a < b. */
static int run(const cli_args *a, cli_session *s) {
    static const emit_field fields[] = {{"rank", EMIT_INT},
                                        {"a", EMIT_INT},
                                        {"b", EMIT_INT},
                                        {"distance", EMIT_DIST},
                                        {"a_timestamp", EMIT_TEXT},
                                        {"b_timestamp", EMIT_TEXT}};
    size_t k = a->k < s->stats->N ? a->k : s->stats->N; /* no more pairs than that */
    tsm_motif *found = malloc(k * sizeof *found);
    if (!found) {
        cli_error("out of memory for %zu motifs", k);
        return EX_SOFTWARE;
    }
    tsm_mk_stats counters = {0};
    size_t count = 0;
    /* auto: tsm_motifs_auto's rule (MK on series with constants, else the scan and MK
     * where it found near-exact repeats); every rank holds the same pairs, so all of
     * them decide alike under MPI */
    const int automatic = !a->mk && !a->scan;
    int by_mk = a->mk || (automatic && tsm_motifs_auto_mk(s->stats));
    tsm_status st = by_mk ? dist_mk_motifs(s->ctx, s->stats, a->excl, k, a->refs, a->seed, found,
                                           &count, &counters, a->verbose)
                          : dist_motifs_scan(s->ctx, s->stats, a->excl, k, found, &count, &counters,
                                             a->verbose);
    if (st == TSM_OK && !by_mk && automatic && tsm_motifs_near_exact(s->stats, found, count)) {
        by_mk = 1;
        st = dist_mk_motifs(s->ctx, s->stats, a->excl, k, a->refs, a->seed, found, &count,
                            &counters, a->verbose);
    }
    if (st != TSM_OK || dist_rank() != 0) { /* under MPI (dist.h), rank 0 alone prints */
        free(found);
        return st != TSM_OK ? cli_fail_status(s->ctx, st) : 0;
    }
    cli_progress_end(s);
    if (a->verbose && by_mk)
        cli_error("motif: MK%s: %zu found, %" PRIu64 " distances, %" PRIu64
                  " offsets, %zu references",
                  a->mk ? ""
                        : " (--method auto: near-exact repeats or constants, whose ties MK's "
                          "order decides)",
                  count, counters.distances, counters.offsets, counters.refs);
    else if (a->verbose) /* the scan: auto's choice, faster than MK on every series measured */
        cli_error("motif: scan of every pair (--method auto; --method mk for MK's bounds): %zu "
                  "found, %" PRIu64 " pairs",
                  count, counters.distances);

    if (count == 0)
        cli_say_empty("motif", a, s, "motif pairs", "no two subsequences without a missing value");

    emitter e;
    emit_begin(&e, stdout, a->format, fields, cli_nfields(s, sizeof fields / sizeof fields[0], 2));
    for (size_t i = 0; i < count; i++) {
        int64_t lo = found[i].a < found[i].b ? found[i].a : found[i].b;
        int64_t hi = found[i].a < found[i].b ? found[i].b : found[i].a;
        emit_value row[] = {{.i = (int64_t)i + 1},
                            {.i = lo},
                            {.i = hi},
                            {.d = found[i].distance},
                            {.s = series_time(&s->data, lo)},
                            {.s = series_time(&s->data, hi)}};
        emit_row(&e, row);
    }
    free(found);
    return cli_emit_end(&e);
}

const cli_command cmd_motif = {
    .name = "motif",
    .synopsis = "-m M [-k K] [--excl E] [OPTIONS] FILE",
    .summary = "top-k motif pairs (the most similar pairs of subsequences)",
    .description =
        "Prints the K closest pairs of subsequences of length M (|a-b| >= E), best first,\n"
        "each pair non-overlapping with the pairs before it. One line per pair:\n"
        "{\"rank\":1,\"a\":I,\"b\":J,\"distance\":D} with I < J, and \"a_timestamp\" and\n"
        "\"b_timestamp\" when the input has a timestamp column.\n"
        "\n"
        "--method scan scans every pair as the matrix profile does, keeping only the\n"
        "best pair: about half a profile per motif whatever the data. --method mk runs\n"
        "MK (Mueen-Keogh), whose cost depends on how well its bounds from --refs\n"
        "reference subsequences prune; it was slower on every series measured\n"
        "(docs/performance.md). --method auto (the default) takes MK on a series with\n"
        "constant stretches, else the scan, then MK when the scan's pairs are near-exact\n"
        "repeats (1 - correlation <= 1e-9), where many pairs tie and MK's order names\n"
        "the pair. They give the same motifs but for pairs\n"
        "whose distances tie to rounding, their distances by the same formula.",
    .options = CLI_OPT_K | CLI_OPT_REFS | CLI_OPT_SEED | CLI_OPT_METHOD,
    .run = run,
};
