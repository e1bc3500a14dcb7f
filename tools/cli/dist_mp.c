/* SPDX-License-Identifier: Apache-2.0 */
/* dist_mp.c - `tsmine profile` over MPI ranks (dist.h): each rank runs its share of
 * the bands of diagonals (tsm_mp_split, tsm_mp_part), the partial bests are reduced to
 * rank 0 with the tie rule, and rank 0 finishes them (tsm_mp_finish): exactly tsm_mp's
 * profile.
 *
 * What a rank holds (n samples, N = n - m + 1 subsequences): the series and its
 * statistics (about 5 n doubles: t, mu, sigma, inv, kind), its partial bests (N
 * (corr, index) pairs per row and per column, 32 N bytes) plus tsm_mp_part's working
 * memory for its bands (the padded plan, 5 N doubles, and on the CPU 2 N pairs per
 * OpenMP thread; on a GPU the same per-device arrays as tsm_mp), and a reduction
 * buffer of DIST_CHUNK pairs. Rank 0 also holds the profile it prints (16 N bytes).
 * Nothing of size N^2 exists anywhere. */
#include "dist_mpi.h"

#include "dist.h"

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

/* Pairs per MPI_Reduce: MPI counts are int, and the buffers stay small. */
#define DIST_CHUNK ((size_t)1 << 20)

/* A partial best: correlation and index, merged by tsm_mp_beats. */
typedef struct {
    double v;
    int64_t i;
} best;

/* MPI_Op: inout[k] = the better of in[k] and inout[k] (commutative, associative: a
 * total order on (corr, index)). */
static void best_max(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const best *a = in;
    best *b = inout;
    for (int k = 0; k < *len; k++)
        if (tsm_mp_beats(a[k].v, a[k].i, b[k].v, b[k].i))
            b[k] = a[k];
}

/* The pair type and its merge, created once. */
static MPI_Datatype best_type(MPI_Op *op) {
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    static MPI_Op merge;
    if (type == MPI_DATATYPE_NULL) {
        int len[2] = {1, 1};
        MPI_Aint at[2] = {offsetof(best, v), offsetof(best, i)};
        MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT64_T};
        MPI_Datatype raw;
        MPI_Type_create_struct(2, len, at, types, &raw);
        MPI_Type_create_resized(raw, 0, sizeof(best), &type);
        MPI_Type_free(&raw);
        MPI_Type_commit(&type);
        MPI_Op_create(best_max, 1, &merge);
    }
    *op = merge;
    return type;
}

/* Merges every rank's (v, idx) arrays of N entries into rank 0's, in chunks of
 * DIST_CHUNK pairs (buf: 2 DIST_CHUNK of them). */
static void reduce_bests(double *v, int64_t *idx, size_t N, best *buf) {
    MPI_Op op;
    MPI_Datatype type = best_type(&op);
    best *send = buf, *recv = buf + DIST_CHUNK;
    for (size_t c0 = 0; c0 < N; c0 += DIST_CHUNK) {
        size_t len = N - c0 < DIST_CHUNK ? N - c0 : DIST_CHUNK;
        for (size_t k = 0; k < len; k++)
            send[k] = (best){v[c0 + k], idx[c0 + k]};
        MPI_Reduce(send, recv, (int)len, type, op, 0, MPI_COMM_WORLD);
        if (dist_mpi_rank() == 0)
            for (size_t k = 0; k < len; k++)
                v[c0 + k] = recv[k].v, idx[c0 + k] = recv[k].i;
    }
}

/* Pairs on bands [b0, b1). */
static double band_pairs(const tsm_ctx *ctx, size_t N, size_t excl, size_t b0, size_t b1) {
    double pairs = 0.0;
    for (size_t b = b0; b < b1; b++)
        pairs += (double)tsm_mp_band_pairs(ctx, N, excl, b);
    return pairs;
}

/* Each rank runs its bands (tsm_mp_split) with tsm_mp_part, the partial bests are
 * reduced to rank 0 (tie rule: larger correlation, then smaller index) and rank 0
 * finishes them: exactly tsm_mp's profile. All ranks must run the same backend (the
 * bands are its tile grid). */
tsm_status dist_mpi_profile(tsm_ctx *ctx, const tsm_stats *s, size_t excl, int left, double *dist,
                            int64_t *nbr, int verbose) {
    const double t0 = MPI_Wtime();
    const size_t N = s->N;
    dist_mpi_joined();
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    size_t nb = st == TSM_OK ? tsm_mp_bands(ctx, N, excl) : 0, b0 = 0, b1 = 0;
    unsigned long long bands[2] = {nb, ~(unsigned long long)nb}, agreed[2];
    MPI_Allreduce(bands, agreed, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (st == TSM_OK && agreed[0] != ~agreed[1])
        st = tsm_fail(ctx, TSM_EINVAL, "the ranks run different backends (--backend)");
    double *lc = malloc(N * sizeof *lc), *rc = left ? NULL : malloc(N * sizeof *rc);
    int64_t *lj = malloc(N * sizeof *lj), *rj = left ? NULL : malloc(N * sizeof *rj);
    best *buf = malloc(2 * DIST_CHUNK * sizeof *buf);
    if (st == TSM_OK && (!lc || !lj || !buf || (!left && (!rc || !rj))))
        st = tsm_fail(ctx, TSM_ENOMEM,
                      "rank %d: out of memory for the partial profile of %zu "
                      "subsequences",
                      dist_mpi_rank(), N);
    if (st == TSM_OK) {
        tsm_mp_split(ctx, N, excl, (size_t)dist_mpi_rank(), (size_t)dist_mpi_size(), &b0, &b1);
        st = tsm_mp_part(ctx, s, excl, b0, b1, lc, lj, rc, rj);
    }
    const double t1 = MPI_Wtime();
    st = dist_mpi_agree(ctx, st);
    const double t2 = MPI_Wtime();
    if (st == TSM_OK) {
        reduce_bests(lc, lj, N, buf);
        if (!left)
            reduce_bests(rc, rj, N, buf);
    }
    const double t3 = MPI_Wtime();
    if (st == TSM_OK && dist_mpi_rank() == 0)
        st = left ? tsm_mp_finish(ctx, s, excl, lc, lj, NULL, NULL, NULL, NULL, dist, nbr)
                  : tsm_mp_finish(ctx, s, excl, lc, lj, rc, rj, dist, nbr, NULL, NULL);
    const double t4 = MPI_Wtime();
    free(lc), free(rc), free(lj), free(rj), free(buf);
    if (verbose) {
        double t[5] = {band_pairs(ctx, N, excl, b0, b1), t1 - t0, t2 - t1, t3 - t2,
                       dist_mpi_device()};
        dist_mpi_report("mpi_profile", ctx, s, excl, t, t4 - t0, t4 - t3);
    }
    return st;
}
