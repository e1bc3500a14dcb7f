/* SPDX-License-Identifier: Apache-2.0 */
/* dist.c - the entry points of dist.h: the distributed run (dist_mpi.c) when started
 * by an MPI launcher, else the single-process kernels; and the split of the profile's
 * bands over the ranks. */
#include "dist.h"

#ifdef TSMINE_HAVE_MPI
#include "dist_mpi.h"
#endif

void dist_init(int *argc, char ***argv) {
#ifdef TSMINE_HAVE_MPI
    dist_mpi_init(argc, argv);
#else
    (void)argc, (void)argv;
#endif
}

int dist_exit(int status) {
#ifdef TSMINE_HAVE_MPI
    dist_mpi_exit(status);
#endif
    return status;
}

int dist_size(void) {
#ifdef TSMINE_HAVE_MPI
    return dist_mpi_size();
#else
    return 1;
#endif
}

int dist_rank(void) {
#ifdef TSMINE_HAVE_MPI
    return dist_mpi_rank();
#else
    return 0;
#endif
}

/* The cut points are the first bands whose running pair count reaches q / ranks of
 * the total, for q = rank and rank + 1: the bands get shorter along the triangle, so
 * the first ranks take fewer of them. */
tsm_status dist_profile(tsm_ctx *ctx, const tsm_stats *s, size_t excl, int left, double *dist,
                        int64_t *nbr, int verbose, int *emit) {
    *emit = dist_rank() == 0;
#ifdef TSMINE_HAVE_MPI
    if (dist_mpi_active())
        return dist_mpi_profile(ctx, s, excl, left, dist, nbr, verbose);
#endif
    (void)verbose;
    return left ? tsm_mp(ctx, s, excl, NULL, NULL, dist, nbr)
                : tsm_mp(ctx, s, excl, dist, nbr, NULL, NULL);
}

tsm_status dist_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                          tsm_discord **out, size_t *count, tsm_pd3_stats *counters, int verbose) {
#ifdef TSMINE_HAVE_MPI
    if (dist_mpi_active())
        return dist_mpi_pd3_range(ctx, s, excl, r, seglen, out, count, counters, verbose);
#endif
    (void)verbose;
    return tsm_pd3_range(ctx, s, excl, r, seglen, out, count, counters);
}

tsm_status dist_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                              size_t seglen, tsm_discord *out, size_t *count,
                              tsm_pd3_stats *counters, int verbose) {
#ifdef TSMINE_HAVE_MPI
    if (dist_mpi_active())
        return dist_mpi_discords_topk(ctx, s, excl, k, seglen, out, count, counters, verbose);
#endif
    (void)verbose;
    return tsm_discords_topk(ctx, s, excl, k, seglen, out, count, counters);
}

tsm_status dist_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                          uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                          int verbose) {
#ifdef TSMINE_HAVE_MPI
    if (dist_mpi_active())
        return dist_mpi_mk_motifs(ctx, s, excl, k, refs, seed, out, count, counters, verbose);
#endif
    (void)verbose;
    return tsm_mk_motifs(ctx, s, excl, k, refs, seed, out, count, counters);
}

tsm_status dist_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, tsm_motif *out,
                            size_t *count, tsm_mk_stats *counters, int verbose) {
#ifdef TSMINE_HAVE_MPI
    if (dist_mpi_active())
        return dist_mpi_motifs_scan(ctx, s, excl, k, out, count, counters, verbose);
#endif
    (void)verbose;
    return tsm_motifs_scan(ctx, s, excl, k, out, count, counters);
}
