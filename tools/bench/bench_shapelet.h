/* SPDX-License-Identifier: Apache-2.0 */
/* bench_shapelet.h - `tsmine-bench shapelet ...`: shapelet discovery timings
 * (bench_shapelet.c); bench.c hands over the arguments after "tsmine-bench". */
#ifndef TSMINE_BENCH_SHAPELET_H
#define TSMINE_BENCH_SHAPELET_H

/* Runs the shapelet benchmark with argv[0] = "shapelet"; returns the exit status. */
int bench_shapelet_main(int argc, char **argv);

#endif
