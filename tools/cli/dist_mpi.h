/* SPDX-License-Identifier: Apache-2.0 */
/* dist_mpi.h - the MPI side of dist.h (dist_mpi.c and the commands: dist_mp.c,
 * dist_pd3.c, dist_mk.c), built only with TSMINE_HAVE_MPI. */
#ifndef TSMINE_DIST_MPI_H
#define TSMINE_DIST_MPI_H

#include "mk.h"
#include "mp.h"
#include "pd3.h"

/* MPI_Init when started by an MPI launcher, with the rank's GPU; see dist_init. */
void dist_mpi_init(int *argc, char ***argv);
/* Whether MPI was started (then the commands take the distributed path, even alone). */
int dist_mpi_active(void);
/* dist_exit: MPI_Abort with status when it is not 0 and this rank never joined an
 * exchange; returns otherwise. */
void dist_mpi_exit(int status);
/* Marks that this rank reached the ranks' first exchange (each dist_mpi_* entry). */
void dist_mpi_joined(void);
int dist_mpi_size(void);
int dist_mpi_rank(void);
/* The CUDA device of this rank, -1 when none. */
int dist_mpi_device(void);

/* dist_profile under a launcher (dist_mp.c). */
tsm_status dist_mpi_profile(tsm_ctx *ctx, const tsm_stats *s, size_t excl, int left, double *dist,
                            int64_t *nbr, int verbose);

/* dist_pd3_range and dist_discords_topk under a launcher (dist_pd3.c). */
tsm_status dist_mpi_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t seglen, tsm_discord **out, size_t *count,
                              tsm_pd3_stats *counters, int verbose);
tsm_status dist_mpi_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                  size_t seglen, tsm_discord *out, size_t *count,
                                  tsm_pd3_stats *counters, int verbose);

/* dist_mk_motifs under a launcher (dist_mk.c). */
tsm_status dist_mpi_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                              uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                              int verbose);

/* dist_motifs_scan under a launcher (dist_mk.c). */
tsm_status dist_mpi_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                tsm_motif *out, size_t *count, tsm_mk_stats *counters, int verbose);

/* ---- Shared by the distributed commands (dist_mpi.c) ---- */

/* The worst status over the ranks (collective), so that all fail together; a rank
 * that did not fail itself records which rank did on ctx. */
tsm_status dist_mpi_agree(tsm_ctx *ctx, tsm_status st);

/* Collective: rank 0 prints the ranks' timings as one JSON line on stderr,
 * {"bench":BENCH,...,"seconds":total,"comm_share":..,"rank_pairs":[..],
 * "rank_compute":[..],"rank_wait":[..],"rank_comm":[..],"rank_device":[..]}; t is
 * this rank's {pairs (or distances), compute, wait (for the slowest rank), comm,
 * CUDA device or -1} and comm_share the largest comm over total. */
void dist_mpi_report(const char *bench, const tsm_ctx *ctx, const tsm_stats *s, size_t excl,
                     const double t[5], double total, double finish);

#endif
