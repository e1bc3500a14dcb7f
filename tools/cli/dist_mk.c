/* SPDX-License-Identifier: Apache-2.0 */
/* dist_mk.c - `tsmine motif` over MPI ranks (dist.h), both paths.
 *
 * The scan (the default): each rank scans the bands holding about 1 / ranks of the
 * pairs on its own backend (its GPU on CUDA: tsm_motifs_scan_part), and after each
 * search the best pair is merged over the ranks by one MPI_Allreduce, so every rank
 * takes the same greedy step and the motifs are the single-process ones, byte for byte.
 *
 * MK (--method mk): MK's offset loop with the
 * chunks of each batch cut into one contiguous range per rank (tsm_mk_motifs_part),
 * and after every batch the best pair merged over the ranks (MPI_Allreduce with the
 * motif order) and the live list gathered (MPI_Allgatherv), so that every chunk
 * starts every batch from the bsf it has in one process: the same motifs, the same
 * distances, byte for byte.
 *
 * MK in several parts needs the CPU backend; on CUDA rank 0 runs MK's whole search
 * on its GPU.
 *
 * Each rank holds the series and statistics, MK's R x N distances (R doubles and R
 * floats per subsequence) and its N-sized index arrays, as one process does. */
#include "dist_mpi.h"

#include <limits.h>
#include <stddef.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Time spent exchanging, this run; a scratch buffer for the gathered live list. */
static double g_comm;
static size_t *g_gather;
static size_t g_gather_cap;

/* MPI_Op: inout[k] = the earlier motif of in[k] and inout[k] (tsm_mk_before). */
static void motif_min(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const tsm_motif *a = in;
    tsm_motif *b = inout;
    for (int k = 0; k < *len; k++)
        if (tsm_mk_before(&a[k], &b[k]))
            b[k] = a[k];
}

/* tsm_mk_sync_fn over MPI_COMM_WORLD. */
static int sync_batch(void *user, tsm_motif *best, size_t *live, size_t *nlive, size_t cap) {
    (void)user;
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    static MPI_Op op;
    const double t0 = MPI_Wtime();
    const int size = dist_mpi_size();
    if (type == MPI_DATATYPE_NULL) {
        MPI_Type_contiguous((int)sizeof(tsm_motif), MPI_BYTE, &type);
        MPI_Type_commit(&type);
        MPI_Op_create(motif_min, 1, &op);
    }
    tsm_motif mine = *best;
    int rc = MPI_Allreduce(&mine, best, 1, type, op, MPI_COMM_WORLD);
    int counts[size], displs[size], n = *nlive <= INT_MAX ? (int)*nlive : -1;
    if (rc == MPI_SUCCESS)
        rc = MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    int fits = 1;
    for (int q = 0; q < size && rc == MPI_SUCCESS; q++) {
        fits &= counts[q] >= 0 && total <= INT_MAX;
        displs[q] = (int)total, total += counts[q] > 0 ? (size_t)counts[q] : 0;
    }
    fits &= total <= cap;
    if (fits && total > g_gather_cap) {
        size_t *grown = realloc(g_gather, total * sizeof *grown);
        fits = grown != NULL;
        if (grown)
            g_gather = grown, g_gather_cap = total;
    }
    int all_fit = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && all_fit) {
        _Static_assert(sizeof(size_t) == sizeof(uint64_t), "positions travel as MPI_UINT64_T");
        rc = MPI_Allgatherv(live, n, MPI_UINT64_T, g_gather, counts, displs, MPI_UINT64_T,
                            MPI_COMM_WORLD);
        if (total)
            memcpy(live, g_gather, total * sizeof *live);
        *nlive = total;
    }
    g_comm += MPI_Wtime() - t0;
    return rc != MPI_SUCCESS || !all_fit;
}

tsm_status dist_mpi_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                              uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                              int verbose) {
    const double t0 = MPI_Wtime();
    const int rank = dist_mpi_rank();
    g_comm = 0.0;
    dist_mpi_joined();
    tsm_mk_stats local = {0, 0, 0};
    tsm_status st;
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA) { /* rank 0 alone, on its GPU */
        *count = 0;
        st = rank == 0 ? tsm_mk_motifs(ctx, s, excl, k, refs, seed, out, count, &local) : TSM_OK;
    } else {
        st = tsm_mk_motifs_part(ctx, s, excl, k, refs, seed, (size_t)rank, (size_t)dist_mpi_size(),
                                sync_batch, NULL, out, count, &local);
    }
    st = dist_mpi_agree(ctx, st);
    if (counters)
        *counters = local;
    free(g_gather);
    g_gather = NULL, g_gather_cap = 0;
    if (verbose) {
        const double total = MPI_Wtime() - t0;
        double t[5] = {(double)local.distances, total - g_comm, 0.0, g_comm, dist_mpi_device()};
        dist_mpi_report("mpi_motif", ctx, s, excl, t, total, 0.0);
    }
    return st;
}

/* ---- The scan path (tsm_motifs_scan_part) ---------------------------------------- */

/* MPI_Op: inout[k] = the better pair of in[k] and inout[k] (tsm_mp_pair_beats). */
static void pair_max(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const tsm_mp_pair *a = in;
    tsm_mp_pair *b = inout;
    for (int k = 0; k < *len; k++)
        if (tsm_mp_pair_beats(&a[k], &b[k]))
            b[k] = a[k];
}

/* tsm_scan_sync_fn over MPI_COMM_WORLD: one MPI_Allreduce of the pair. */
static int sync_pair(void *user, tsm_mp_pair *best) {
    (void)user;
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    static MPI_Op op;
    const double t0 = MPI_Wtime();
    if (type == MPI_DATATYPE_NULL) {
        int len[3] = {1, 1, 1};
        MPI_Aint at[3] = {offsetof(tsm_mp_pair, corr), offsetof(tsm_mp_pair, a),
                          offsetof(tsm_mp_pair, b)};
        MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT64_T, MPI_INT64_T}, raw;
        MPI_Type_create_struct(3, len, at, types, &raw);
        MPI_Type_create_resized(raw, 0, sizeof(tsm_mp_pair), &type);
        MPI_Type_free(&raw);
        MPI_Type_commit(&type);
        MPI_Op_create(pair_max, 1, &op);
    }
    tsm_mp_pair mine = *best;
    const int rc = MPI_Allreduce(&mine, best, 1, type, op, MPI_COMM_WORLD);
    g_comm += MPI_Wtime() - t0;
    return rc != MPI_SUCCESS;
}

tsm_status dist_mpi_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                                int verbose) {
    const double t0 = MPI_Wtime();
    g_comm = 0.0;
    dist_mpi_joined();
    tsm_mk_stats local = {0, 0, 0};
    tsm_status st =
        tsm_motifs_scan_part(ctx, s, excl, k, (size_t)dist_mpi_rank(), (size_t)dist_mpi_size(),
                             sync_pair, NULL, out, count, &local);
    st = dist_mpi_agree(ctx, st);
    if (counters)
        *counters = local;
    if (verbose) {
        const double total = MPI_Wtime() - t0;
        double t[5] = {(double)local.distances, total - g_comm, 0.0, g_comm, dist_mpi_device()};
        dist_mpi_report("mpi_motif_scan", ctx, s, excl, t, total, 0.0);
    }
    return st;
}
