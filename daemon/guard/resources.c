/* SPDX-License-Identifier: Apache-2.0 */
/* resources.c - process limits and the guard's budgets (resources.h). */
#define _GNU_SOURCE /* pthread_setattr_default_np */
#include "daemon/guard/resources.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon/core/log.h"

#define MIB (1ull << 20)
/* The descriptor limit the soft limit is raised to, at most: beyond it the kernel's
 * table and the guard's ledger grow for nothing an edge machine needs. */
#define NOFILE_MAX 65536u
/* Thread stacks under an address-space limit; the daemon's threads use a few KiB. */
#define SMALL_STACK (1u << 20)
/* Threads started and stopped to check they can start: libzmq's two I/O threads and
 * its reaper, and one more. */
#define PROBE_THREADS 4

/* Address space one connection takes in libzmq with nothing queued (its engine, its
 * encoder's and decoder's buffers, its pipes): measured 65 KiB per idle ZMTP peer, with
 * a margin. */
#define PEER_ADDRESS_SPACE (96u * 1024)
/* Connections left to peers however little address space there is. */
#define PEERS_MIN 64u

/* A cgroup v2 memory limit of this process ("memory.high" or "memory.max"); 0 for none
 * or when unknown. */
static uint64_t cgroup_limit(const char *file) {
    char line[4096], path[4200];
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    uint64_t v = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/%s", line + 3, file);
        FILE *g = fopen(path, "re");
        char val[64] = "";
        if (g && fgets(val, sizeof val, g) && strncmp(val, "max", 3) != 0)
            v = strtoull(val, NULL, 10);
        if (g)
            fclose(g);
    }
    fclose(f);
    return v;
}

/* The probe threads' meeting point: each waits until all were started (or one failed). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int release;
} meeting;

static void *probe(void *arg) {
    meeting *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->release)
        pthread_cond_wait(&m->cv, &m->mu);
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Starts PROBE_THREADS threads with the default attributes, all alive at once, then
 * joins them; 0, or the error of the pthread_create that failed. */
static int threads_start(void) {
    meeting m = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t t[PROBE_THREADS];
    int started = 0, rc = 0;
    for (; started < PROBE_THREADS; started++)
        if ((rc = pthread_create(&t[started], NULL, probe, &m)) != 0)
            break;
    pthread_mutex_lock(&m.mu);
    m.release = 1;
    pthread_cond_broadcast(&m.cv);
    pthread_mutex_unlock(&m.mu);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return rc;
}

int tsd_resources_init(tsd_resources *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = rl.rlim_max < NOFILE_MAX ? rl.rlim_max : NOFILE_MAX;
        if (rl.rlim_cur < want) {
            rl.rlim_cur = want;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        r->nofile = rl.rlim_cur == RLIM_INFINITY ? NOFILE_MAX : (uint64_t)rl.rlim_cur;
    }
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        r->address_space = (uint64_t)rl.rlim_cur;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    r->ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    r->cgroup_high = cgroup_limit("memory.high");
    r->cgroup_max = cgroup_limit("memory.max");
    if (r->address_space) {
        /* One malloc arena: each further one reserves 64 MiB of address space (glibc's
         * HEAP_MAX), taken or not depending on how threads contend at start. */
        mallopt(M_ARENA_MAX, 1);
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, SMALL_STACK);
        pthread_setattr_default_np(&a);
        pthread_attr_destroy(&a);
        int rc = threads_start();
        if (rc != 0) {
            snprintf(err, errlen,
                     "cannot start a thread: %s: the address space is limited to %llu MB "
                     "(ulimit -v, LimitAS=), too little for the daemon's threads and memory; "
                     "raise it",
                     strerror(rc), (unsigned long long)(r->address_space / MIB));
            return -1;
        }
        tsd_log(TSD_LOG_INFO,
                "resources: address space limited to %llu MB: thread stacks of %u KiB, one "
                "malloc arena, new streams and connections refused near the limit",
                (unsigned long long)(r->address_space / MIB), SMALL_STACK / 1024);
    }
    return 0;
}

void tsd_resources_fit_descriptors(tsd_resources *r, uint64_t room, uint64_t open) {
    const uint64_t peers = room / 2 / PEER_ADDRESS_SPACE;
    const uint64_t want = open + (peers > PEERS_MIN ? peers : PEERS_MIN);
    struct rlimit rl;
    if (!r->address_space || !open || want >= r->nofile || getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    tsd_log(TSD_LOG_INFO,
            "resources: descriptors limited to %llu (%llu open): the connections libzmq can "
            "accept, %llu KiB of address space each, fit in half of the %llu MB left",
            (unsigned long long)want, (unsigned long long)open,
            (unsigned long long)(PEER_ADDRESS_SPACE / 1024), (unsigned long long)(room / MIB));
    r->nofile = want;
}

uint64_t tsd_resources_budget(const tsd_resources *r, const tsc_config *cfg) {
    if (cfg->memory_budget)
        return cfg->memory_budget;
    uint64_t b = r->ram / 2;
    if (r->cgroup_high && r->cgroup_high / 4 * 3 < b)
        b = r->cgroup_high / 4 * 3;
    if (r->cgroup_max && r->cgroup_max / 4 * 3 < b)
        b = r->cgroup_max / 4 * 3;
    return b;
}

void tsd_resources_guard_limits(const tsd_resources *r, const tsc_config *cfg, const tsd_sockets *s,
                                tsd_guard_limits *out) {
    memset(out, 0, sizeof *out);
    /* The largest frame each socket takes (its ZMQ_MAXMSGSIZE), and room for one such
     * frame being received and one decoded but not yet queued, plus libzmq's read
     * buffer: what a peer that behaves may hold beyond its queue. */
    const uint64_t slack = 64 * 1024;
    const uint64_t frame_in = 2 * cfg->max_message_size, frame_ctl = TSD_CONTROL_MAX_MSG;
    out->unfinished_limit[TSD_SOCK_INGEST] = 2 * frame_in + slack;
    out->peer_limit[TSD_SOCK_INGEST] = cfg->peer_buffer + 2 * frame_in + slack;
    out->unfinished_limit[TSD_SOCK_CONTROL] = 2 * frame_ctl + slack;
    out->peer_limit[TSD_SOCK_CONTROL] = (TSD_CONTROL_RCVHWM + 2) * frame_ctl + slack;
    out->peer_limit[TSD_SOCK_ALERTS] = 256 * 1024; /* a burst of subscriptions */
    out->memory_budget = tsd_resources_budget(r, cfg);
    out->address_space = r->address_space;
    out->nofile = r->nofile;
    out->max_connections = cfg->max_connections;
    out->curve = s->security != NULL;
    out->log_rate = cfg->log_rate_per_s;
}
