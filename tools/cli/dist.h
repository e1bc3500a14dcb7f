/* SPDX-License-Identifier: Apache-2.0 */
/* dist.h - the batch commands spread over MPI ranks (issue 21, DESIGN 5.5):
 * `mpirun -n R tsmine profile|discord|motif ...`, one rank per GPU or per node's
 * cores. Every rank reads the series and builds its statistics (O(n) each); the
 * pairs of the distance matrix are split over the ranks, the partial results are
 * reduced exactly to rank 0, and rank 0 alone prints: the output is byte for byte
 * that of the single-process run on the same backend.
 *
 * Each function here is the command's single-process path when the build has no MPI
 * (TSMINE_MPI=OFF or not found) or no MPI launcher started the process, so the
 * commands call them unconditionally. Under a launcher with one rank (`mpirun -n 1`)
 * they take the distributed path alone: the same output, and -v's timings as the
 * baseline of a scaling run. */
#ifndef TSMINE_DIST_H
#define TSMINE_DIST_H

#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "stats.h"

#include <stddef.h>
#include <stdint.h>

/* Starts MPI when an MPI launcher started this process (mpirun, mpiexec and srun set
 * their variables), and makes the rank's later CUDA ctxs use the GPU of its local
 * rank on the node. Call first in main, before any ctx exists; MPI is finalised at
 * exit. Nothing happens otherwise. */
void dist_init(int *argc, char ***argv);

/* The exit status of a command, returned as is, except that under a launcher a rank
 * that fails before its first exchange with the others (unreadable input, such as
 * standard input, which only rank 0 gets; bad arguments) aborts the whole job with
 * that status (MPI_Abort), so that the others do not wait for it forever. main
 * returns dist_exit(status) of every command. */
int dist_exit(int status);

/* Ranks of the run (1 when not distributed) and this process's rank (0 then). */
int dist_size(void);
int dist_rank(void);

/* The two-sided profile, or with left the left one, into dist and nbr (s->N each, as
 * tsm_mp writes them): tsm_mp itself when not distributed. *emit says whether this
 * process holds the result and prints it (rank 0). verbose: rank 0 prints the ranks'
 * timings as one JSON line on stderr. */
tsm_status dist_profile(tsm_ctx *ctx, const tsm_stats *s, size_t excl, int left, double *dist,
                        int64_t *nbr, int verbose, int *emit);

/* tsm_pd3_range and tsm_discords_topk (same arguments; verbose as above): PD3's
 * segments dealt to the ranks, the same discords with the same distances. Every rank
 * gets the result; rank 0 alone prints it (dist_rank). */
tsm_status dist_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                          tsm_discord **out, size_t *count, tsm_pd3_stats *counters, int verbose);
tsm_status dist_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                              size_t seglen, tsm_discord *out, size_t *count,
                              tsm_pd3_stats *counters, int verbose);

/* tsm_mk_motifs (same arguments; verbose as above): MK's offset loop shared by the
 * ranks, the same motifs with the same distances. Every rank gets the result. */
/* tsm_motifs_scan (same arguments; verbose as above): the bands of each search dealt
 * to the ranks, on their own backends, the best pair merged after each: the same
 * motifs with the same distances. Every rank gets the result. */
tsm_status dist_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, tsm_motif *out,
                            size_t *count, tsm_mk_stats *counters, int verbose);
tsm_status dist_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                          uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                          int verbose);

#endif
