/* SPDX-License-Identifier: Apache-2.0 */
/* dist_pd3.c - `tsmine discord` over MPI ranks (dist.h): PD3's segments dealt
 * round-robin to the ranks (tsm_pd3_range_part), the Neighbor bitmap ANDed over the
 * ranks between the phases, and the range discords of all ranks gathered to every
 * rank, so that the top-k search (tsm_discords_topk_by) takes the same steps on all.
 * Exactly the single-process result: every segment computes what it computes alone.
 *
 * Why PD3 and not discords from the distributed profile: PD3 refutes most candidates
 * after a few rows, so a top-k search costs a small fraction of the profile's N^2 / 2
 * pairs (docs/performance.md has the measurement), and its distances are PD3's, so
 * the output is byte for byte the single-process one. On CUDA each rank's GPU runs
 * its own share of the device's segments, the bitmap crossing through the host.
 *
 * Each rank holds the series and statistics, PD3's per-subsequence bitmaps and
 * minima (about 18 N bytes) and the gathered discords. */
#include "dist_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

/* Time spent exchanging (sync and gather) and this rank's own distances, this run. */
static double g_comm;
static uint64_t g_own;

/* tsm_pd3_sync_fn: Neighbor ANDed over the ranks, in place, in int-sized chunks. */
static int sync_neighbor(void *user, uint8_t *neighbor, size_t N) {
    (void)user;
    const double t0 = MPI_Wtime();
    int rc = MPI_SUCCESS;
    for (size_t c0 = 0; c0 < N && rc == MPI_SUCCESS; c0 += INT_MAX / 2) {
        size_t len = N - c0 < INT_MAX / 2 ? N - c0 : INT_MAX / 2;
        rc = MPI_Allreduce(MPI_IN_PLACE, neighbor + c0, (int)len, MPI_UNSIGNED_CHAR, MPI_BAND,
                           MPI_COMM_WORLD);
    }
    g_comm += MPI_Wtime() - t0;
    return rc != MPI_SUCCESS;
}

/* Orders discords by index. */
static int by_index(const void *x, const void *y) {
    const tsm_discord *a = x, *b = y;
    return (a->index > b->index) - (a->index < b->index);
}

/* tsm_pd3_range_fn over all ranks: this rank's part, then every rank's discords on
 * every rank (MPI_Allgatherv), ordered by index; the counters sum the ranks' work. */
static tsm_status range_all(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                            void *user, tsm_discord **out, size_t *count, tsm_pd3_stats *counters) {
    (void)user;
    const int size = dist_mpi_size(), rank = dist_mpi_rank();
    tsm_discord *mine = NULL;
    size_t nmine = 0;
    tsm_pd3_stats local = {0};
    tsm_status st = tsm_pd3_range_part(ctx, s, excl, r, seglen, (size_t)rank, (size_t)size,
                                       sync_neighbor, NULL, &mine, &nmine, &local);
    *out = NULL, *count = 0;
    const double t0 = MPI_Wtime();
    int *counts = malloc(2 * (size_t)size * sizeof *counts), *displs = counts + size;
    if (st == TSM_OK && (!counts || nmine > INT_MAX))
        st = tsm_fail(ctx, TSM_ENOMEM, "rank %d: %zu range discords: too many to gather", rank,
                      nmine);
    st = dist_mpi_agree(ctx, st);
    if (st == TSM_OK) {
        int n = (int)nmine;
        MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
        size_t total = 0;
        for (int q = 0; q < size; q++)
            displs[q] = (int)total, total += (size_t)counts[q];
        MPI_Datatype type;
        MPI_Type_contiguous((int)sizeof(tsm_discord), MPI_BYTE, &type);
        MPI_Type_commit(&type);
        *out = total ? malloc(total * sizeof **out) : NULL;
        int ok = (!total || *out) && total <= INT_MAX, all_ok;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (all_ok) {
            MPI_Allgatherv(mine, n, type, *out, counts, displs, type, MPI_COMM_WORLD);
            if (total > 1)
                qsort(*out, total, sizeof **out, by_index);
            *count = total;
        } else {
            free(*out), *out = NULL;
            st = tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu gathered range discords", total);
        }
        MPI_Type_free(&type);
        uint64_t mine_d = local.distances, all_d = 0;
        g_own += mine_d;
        MPI_Allreduce(&mine_d, &all_d, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        local.distances = all_d;
        if (counters) {
            counters->distances += local.distances;
            counters->passes += local.passes;
            counters->candidates = local.candidates;
            counters->r = local.r;
        }
    }
    g_comm += MPI_Wtime() - t0;
    free(mine), free(counts);
    return st;
}

/* The ranks' timings of one search (collective), when verbose. */
static void report(const char *bench, tsm_ctx *ctx, const tsm_stats *s, size_t excl, double t0) {
    const double total = MPI_Wtime() - t0;
    double t[5] = {(double)g_own, total - g_comm, 0.0, g_comm, dist_mpi_device()};
    dist_mpi_report(bench, ctx, s, excl, t, total, 0.0);
}

tsm_status dist_mpi_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t seglen, tsm_discord **out, size_t *count,
                              tsm_pd3_stats *counters, int verbose) {
    const double t0 = MPI_Wtime();
    g_comm = 0.0, g_own = 0;
    dist_mpi_joined();
    tsm_status st = range_all(ctx, s, excl, r, seglen, NULL, out, count, counters);
    if (verbose)
        report("mpi_discord_range", ctx, s, excl, t0);
    return st;
}

tsm_status dist_mpi_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                  size_t seglen, tsm_discord *out, size_t *count,
                                  tsm_pd3_stats *counters, int verbose) {
    const double t0 = MPI_Wtime();
    g_comm = 0.0, g_own = 0;
    dist_mpi_joined();
    tsm_status st =
        tsm_discords_topk_by(ctx, s, excl, k, seglen, range_all, NULL, out, count, counters);
    if (verbose)
        report("mpi_discord_topk", ctx, s, excl, t0);
    return st;
}
