/* dist_mpi.h - the MPI side of dist.h (dist_mpi.c), built only with TSMINE_HAVE_MPI. */
#ifndef TSMINE_DIST_MPI_H
#define TSMINE_DIST_MPI_H

#include "mp.h"

/* MPI_Init when launched as one of several ranks, with the rank's GPU; see dist_init. */
void dist_mpi_init(int *argc, char ***argv);
int dist_mpi_size(void);
int dist_mpi_rank(void);

/* dist_profile with more than one rank. */
tsm_status dist_mpi_profile(tsm_ctx *ctx, const tsm_stats *s, size_t excl, int left, double *dist,
                            int64_t *nbr, int verbose);

#endif
