/* SPDX-License-Identifier: Apache-2.0 */
/* process_stats.c - the process_* figures of /metrics (metrics.h). Linux. */
#include "daemon/ops/metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Entries of /proc/self/fd (its own descriptor included), 0 when it cannot be read. */
static uint64_t count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    uint64_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n > 0 ? n - 1 : 0;
}

void tsd_process_stats_get(int64_t started_realtime_ns, uint64_t known_fds,
                           tsd_process_stats *out) {
    *out = (tsd_process_stats){.start_time_s = (double)started_realtime_ns * 1e-9};
    const long page = sysconf(_SC_PAGESIZE);
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &resident) != 2)
            size = resident = 0;
        fclose(f);
    }
    out->virtual_bytes = (uint64_t)size * (uint64_t)page;
    out->resident_bytes = (uint64_t)resident * (uint64_t)page;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                     (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        out->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
    out->open_fds = known_fds ? known_fds : count_fds();
}
