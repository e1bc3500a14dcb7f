/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.h - shared test helpers: seeded series generators, the backend under
 * test, and comparisons of fast results with the brute-force reference.
 *
 * Every comparison states its tolerance: squared distances agree within
 * TU_D2_TOL(m) (absolute), neighbour and member indices agree exactly unless the
 * reference says the other choice is tied within that tolerance. Failures print the
 * seed of the case (rerun a case with TSM_TEST_SEED=<seed>). */
#ifndef TSM_TESTUTIL_H
#define TSM_TESTUTIL_H

#include "mk.h"
#include "pd3.h"
#include "tsm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define TU_D2_TOL(m) (1e-7 * (double)(m))

/* The seed of the current case, printed by every failure. */
extern uint64_t tu_seed;

/* Seed for a case: TSM_TEST_SEED from the environment if set, else base. */
uint64_t tu_case_seed(uint64_t base);

/* Whether TSM_TEST_QUICK asks for smaller cases (compute-sanitizer runs are slow). */
int tu_quick(void);

/* splitmix64 random numbers from tu_seed's state. */
void tu_rng_init(uint64_t seed);
double tu_uniform(void); /* [0, 1) */
double tu_normal(void);

/* Fills t with a random walk of n steps. */
void tu_random_walk(double *t, size_t n);
/* Overwrites t[at..at+len-1] with a burst of white noise of the given amplitude
 * around t[at]: an anomaly unlike any stretch of a random walk. */
void tu_plant_anomaly(double *t, size_t at, size_t len, double amplitude);
/* Sets t[at..at+len-1] to value (use NAN/INFINITY for non-finite stretches). */
void tu_fill(double *t, size_t at, size_t len, double value);

/* The ctx under test: backend from TSM_TEST_BACKEND (cpu, cuda, auto; default cpu).
 * When cuda is asked for and unavailable the test is skipped, visibly. */
tsm_ctx *tu_ctx(void);

/* Whether the backend under test exists here; prints "SKIP: backend ... unavailable:
 * REASON" (which ctest reports as a skip) when it does not. */
int tu_backend_available(void);

/* Runs only the cases whose name matches TSM_TEST_FILTER (a cmocka glob: '*', '?')
 * when it is set: tools/scripts/gpu-check splits a slow compute-sanitizer run of one program
 * into parallel processes by case. Call before running the group. */
void tu_apply_filter(void);

/* Runs a kernel test group on the backend under test, or skips the whole group
 * before any case allocates anything when that backend is unavailable. */
#define TU_RUN_GROUP(name, tests, setup, teardown)                                                 \
    (tu_apply_filter(),                                                                            \
     tu_backend_available() ? cmocka_run_group_tests_name(name, tests, setup, teardown) : 0)

/* Two-sided or left profile fast vs reference on the given series; fails with the seed. */
void tu_check_profile(const double *t, size_t n, size_t m, size_t excl, const double *dist,
                      const int64_t *index, const double *ref_dist, int left);

/* Range discords fast vs reference (ref from the reference profile). */
void tu_check_range_discords(const double *t, size_t m, size_t excl, const double *ref_dist,
                             size_t N, double r, const tsm_discord *got, size_t ngot);

/* Top-k discords fast vs reference. */
void tu_check_topk_discords(const double *t, size_t m, size_t excl, const double *ref_dist,
                            size_t N, const tsm_discord *want, size_t nwant, const tsm_discord *got,
                            size_t ngot);

/* Top-k motifs fast vs reference. */
void tu_check_motifs(const double *t, size_t m, size_t excl, const tsm_motif *want, size_t nwant,
                     const tsm_motif *got, size_t ngot);

/* A series made for tests: random walk with optional planted anomalies. Caller frees. */
double *tu_series(size_t n);

#endif
