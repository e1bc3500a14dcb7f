/* SPDX-License-Identifier: Apache-2.0 */
/* dist_mpi.c - what the distributed commands share (dist_mpi.h): MPI start-up with
 * one GPU per local rank, the end of a failed job, the agreement on a status and the
 * ranks' timings as JSON. The commands: dist_mp.c, dist_pd3.c, dist_mk.c. */
#include "dist_mpi.h"

#include "dist.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* MPI started; this rank reached an exchange; the ranks, this one, its local rank on
 * the node and its CUDA device (-1: none). */
static int g_active = 0, g_joined = 0, g_size = 1, g_rank = 0, g_local = 0, g_device = -1;

/* Whether an MPI launcher started this process (one rank or more): Open MPI's mpirun
 * (OMPI_COMM_WORLD_SIZE), MPICH's Hydra and Slurm's srun with PMI-1 or PMI-2
 * (PMI_SIZE), or any PMIx launcher, srun --mpi=pmix and Open MPI 5 included
 * (PMIX_RANK). A plain process in a Slurm allocation has none of them. */
static int launched_as_ranks(void) {
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v)
        v = getenv("PMI_SIZE");
    return (v && atoi(v) >= 1) || getenv("PMIX_RANK") != NULL;
}

/* MPI_Finalize at exit (atexit), unless something finalized already. */
static void finalize(void) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* Whether argv runs a distributed command on standard input ("-"), which only rank 0
 * gets (the others would read nothing, or block on MPICH's pipe). */
static int reads_stdin(int argc, char **argv) {
    static const char *const cmds[] = {"profile", "discord", "motif"};
    int dist = 0;
    for (size_t c = 0; argc > 1 && c < sizeof cmds / sizeof cmds[0]; c++)
        dist |= strcmp(argv[1], cmds[c]) == 0;
    for (int i = 2; dist && i < argc; i++)
        if (strcmp(argv[i], "-") == 0)
            return 1;
    return 0;
}

void dist_mpi_init(int *argc, char ***argv) {
    if (!launched_as_ranks())
        return;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return;
    atexit(finalize);
    g_active = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    if (g_size > 1 && reads_stdin(*argc, *argv)) {
        if (g_rank == 0)
            fprintf(stderr,
                    "tsmine: %s: standard input reaches rank 0 only: under MPI give "
                    "the series as a file that every rank can read\n",
                    (*argv)[1]);
        exit(EX_USAGE);
    }
    /* The local rank among the ranks that share this node picks its GPU. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_local);
    MPI_Comm_free(&node);
    if (tsm_cuda_select(g_local, &g_device) != TSM_OK)
        g_device = -1;
}

void dist_mpi_joined(void) {
    g_joined = 1;
}

void dist_mpi_exit(int status) {
    if (!g_active || status == 0 || g_joined)
        return;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
}

int dist_mpi_active(void) {
    return g_active;
}

int dist_mpi_size(void) {
    return g_size;
}
int dist_mpi_rank(void) {
    return g_rank;
}

int dist_mpi_device(void) {
    return g_device;
}

/* The worst status over the ranks (TSM_OK = 0 is the least), so that all ranks fail
 * together; a rank that did not fail itself says which did. Also the point where the
 * faster ranks wait for the slower. */
tsm_status dist_mpi_agree(tsm_ctx *ctx, tsm_status st) {
    int mine[2] = {(int)st, st != TSM_OK ? g_rank : -1}, worst[2];
    MPI_Allreduce(mine, worst, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst[0] != TSM_OK && st == TSM_OK)
        return tsm_fail(ctx, (tsm_status)worst[0], "rank %d of %d failed (see its message)",
                        worst[1], g_size);
    return st;
}

void dist_mpi_report(const char *bench, const tsm_ctx *ctx, const tsm_stats *s, size_t excl,
                     const double t[5], double total, double finish) {
    double *all = g_rank == 0 ? malloc((size_t)g_size * 5 * sizeof *all) : NULL;
    MPI_Gather(t, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (g_rank != 0 || !all)
        return;
    static const char *const names[] = {"pairs", "compute", "wait", "comm", "device"};
    double pairs = 0.0, comm = 0.0;
    for (int r = 0; r < g_size; r++)
        pairs += all[5 * r], comm = all[5 * r + 3] > comm ? all[5 * r + 3] : comm;
    fprintf(stderr,
            "{\"bench\":\"%s\",\"backend\":\"%s\",\"ranks\":%d,\"n\":%zu,\"m\":%zu,"
            "\"excl\":%zu,\"threads\":%d,\"seconds\":%.6f,\"finish\":%.6f,\"pairs\":%.0f,"
            "\"pairs_per_s\":%.6g,\"comm_share\":%.4f",
            bench, tsm_backend_name(tsm_ctx_backend(ctx)), g_size, s->n, s->m, excl,
            tsm_ctx_threads(ctx), total, finish, pairs, total > 0 ? pairs / total : 0.0,
            total > 0 ? comm / total : 0.0);
    for (int f = 0; f < 5; f++) {
        fprintf(stderr, ",\"rank_%s\":[", names[f]);
        for (int r = 0; r < g_size; r++)
            fprintf(stderr, f == 0 || f == 4 ? "%s%.0f" : "%s%.6f", r ? "," : "", all[5 * r + f]);
        fprintf(stderr, "]");
    }
    fprintf(stderr, "}\n");
    free(all);
}
