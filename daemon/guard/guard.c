/* SPDX-License-Identifier: Apache-2.0 */
/* guard.c - the guard thread (guard.h): memory and descriptor budgets enforced by
 * cutting peers. */
#include "daemon/guard/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"
#include "daemon/guard/peers.h"

#define MIB (1ull << 20)
/* A scan of the connections at least this often, and at once when the resident size grew
 * by GROWTH_BYTES since the last one; never more than 1/SCAN_DUTY of the thread's time. */
#define SCAN_NS      200000000ull
#define GROWTH_BYTES (4 * MIB)
#define SCAN_DUTY    50
/* Over budget: cut the largest holder (at least SHED_MIN unread bytes) at most once per
 * SHED_PAUSE_NS, the time libzmq takes to free what it held (asynchronously, in its I/O
 * thread) and malloc_trim to give it back. */
#define SHED_MIN      (256 * 1024ull)
#define SHED_PAUSE_NS 100000000ull
/* After a cut, malloc_trim every TRIM_EVERY_NS for TRIM_FOR_NS: libzmq frees what the
 * peer held when its I/O thread and the socket's reader get to it, seconds later on a
 * loaded machine, and a trim that finds nothing to give back says nothing about the next. */
#define TRIM_EVERY_NS 100000000ull
#define TRIM_FOR_NS   20000000000ull
/* The most a peer sends before its first message: the ZMTP greeting (64 bytes), READY
 * or CURVE's HELLO and INITIATE (a few hundred). */
#define HANDSHAKE_MAX 4096u
/* A subscriber may send SUB_RATE bytes per second on average (subscriptions,
 * ZMTP heartbeats) and bursts of peer_limit[alerts]: what it sends lands in libzmq's
 * subscription trie, about 40 bytes per byte of prefix. */
#define SUB_RATE 256.0
/* Descriptors kept free for control clients, checkpoints and /metrics. */
#define RESERVE_MIN 16

/* A connection followed from one look to the next. */
typedef struct {
    tsd_peer p;
    uint64_t seen_ns;            /* first sight */
    uint64_t read0, cons0, tx0;  /* at first sight: bytes libzmq had read, read by the daemon,
                                  * sent to the peer */
    uint64_t read_prev;          /* bytes libzmq had read at the previous look */
    uint64_t look_prev;          /* the end of the previous look; 0: first sight */
    uint64_t read_mark, mark_ns; /* bytes libzmq had read at the end of a look that the
                                  * reader has not yet found the socket empty after */
    double level;                /* alerts: the burst bucket, bytes */
    uint64_t held;               /* unread bytes now (alerts: bytes sent since first sight) */
    int cut;
} tracked;

struct tsd_guard {
    tsd_guard_limits lim;
    uint32_t max_peers[TSD_SOCK_KINDS];
    int fd_line; /* the lowest descriptor number of the reserve */
    tsd_peers *peers;
    int statm; /* /proc/self/statm, kept open */
    long page;
    _Atomic uint64_t *ledger; /* per descriptor: wire bytes the daemon read from it */
    size_t ledger_n;
    _Atomic uint64_t emptied[TSD_SOCK_KINDS]; /* when a reader last found the socket empty */
    atomic_int pressure;
    /* tsd_guard_admit's (the main thread's): when it last looked, what it found, and
     * the bytes of the new streams it admitted since the last tsd_guard_settled */
    uint64_t admit_ns, admit_rss, admit_vm, admit_pending;

    pthread_mutex_t mu; /* count, stop */
    pthread_cond_t wake;
    int stop;
    tsd_guard_counters count;
    pthread_t thread;

    /* the thread's own */
    tracked *t;
    size_t nt, cap_t;
    tracked *next;
    size_t cap_next;
    tsd_peer *scan;
    size_t cap_scan;
    /* scan_cost: the thread's CPU time in the last scan (not wall time, which on a loaded
     * machine counts the time the thread waited for a core and would space scans out
     * just when a peer floods) */
    uint64_t scan_end, scan_cost, rss_at_scan, shed_after, pressure_since;
    uint64_t trim_next, trim_until; /* malloc_trim after cuts */
    int lowest_free;                /* the lowest free descriptor at the last look */
    tsd_ratelimit limit;
};

/* Bytes on the wire of a frame of size bytes: ZMTP's flags and length (1 or 8 bytes),
 * and CURVE's MESSAGE command around it (name, nonce, MAC and flags: 33 bytes). */
static uint64_t wire_bytes(size_t size, int curve) {
    const uint64_t body = (uint64_t)size + (curve ? 33 : 0);
    return body + (body > 255 ? 9 : 2);
}

void tsd_guard_note(tsd_guard *g, const zmq_msg_t *frame) {
    if (!g)
        return;
    const int fd = zmq_msg_get(frame, ZMQ_SRCFD);
    if (fd >= 0 && (size_t)fd < g->ledger_n)
        atomic_fetch_add_explicit(&g->ledger[fd], wire_bytes(zmq_msg_size(frame), g->lim.curve),
                                  memory_order_relaxed);
}

void tsd_guard_emptied(tsd_guard *g, tsd_sock_kind kind, uint64_t since_ns) {
    if (g && since_ns > atomic_load_explicit(&g->emptied[kind], memory_order_relaxed))
        atomic_store_explicit(&g->emptied[kind], since_ns, memory_order_release);
}

int tsd_guard_pressure(const tsd_guard *g) {
    return g ? atomic_load_explicit(&g->pressure, memory_order_relaxed) : 0;
}

/* Whether resident (rss) and virtual (vm) sizes are over the budget or too near the
 * address-space limit (as_room: what libzmq may still need to allocate). */
static int over_limits(const tsd_guard *g, uint64_t rss, uint64_t vm) {
    const uint64_t budget = g->lim.memory_budget, as = g->lim.address_space;
    const uint64_t as_room = tsd_guard_as_margin(as);
    return (budget && rss > budget) || (as && vm + as_room > as);
}

static void memory(const tsd_guard *g, uint64_t *rss, uint64_t *vm);

int tsd_guard_admit(void *user, uint64_t bytes) {
    tsd_guard *g = user;
    if (atomic_load_explicit(&g->pressure, memory_order_relaxed))
        return 0;
    const uint64_t now = tsd_now_ns();
    if (now - g->admit_ns >= TSD_GUARD_ADMIT_NS) {
        memory(g, &g->admit_rss, &g->admit_vm);
        g->admit_ns = now;
    }
    /* what was admitted since the last tick may not be allocated yet (rings and
     * regions come at the stream's first round): counted on top of the fresh size
     * against the address-space limit, which is hard (libzmq aborts); the budget is
     * soft (going over it is a pressure episode: shedding and a checkpoint) */
    const uint64_t pending = g->admit_pending + bytes;
    if (over_limits(g, g->admit_rss, g->admit_vm + pending))
        return 0;
    g->admit_pending = pending;
    return 1;
}

void tsd_guard_settled(tsd_guard *g) {
    if (g) {
        g->admit_pending = 0;
        g->admit_ns = 0; /* the next admission looks afresh */
    }
}

void tsd_guard_counters_get(const tsd_guard *g, tsd_guard_counters *out) {
    memset(out, 0, sizeof *out);
    if (!g)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&g->mu);
    *out = g->count;
    pthread_mutex_unlock((pthread_mutex_t *)&g->mu);
}

/* Resident and virtual bytes of the process (/proc/self/statm, re-read in place). */
static void memory(const tsd_guard *g, uint64_t *rss, uint64_t *vm) {
    char buf[128];
    ssize_t n = pread(g->statm, buf, sizeof buf - 1, 0);
    unsigned long long size = 0, res = 0;
    if (n > 0) {
        buf[n] = '\0';
        sscanf(buf, "%llu %llu", &size, &res);
    }
    *vm = size * (uint64_t)g->page;
    *rss = res * (uint64_t)g->page;
}

/* 1 when the reserve of descriptors is being eaten into: the lowest free descriptor
 * at or above fd_line is not fd_line itself (descriptors are handed out lowest first).
 * Not tried above 65536 descriptors (the kernel would grow the table to fd_line): the
 * periodic scans count them there. */
static int descriptors_short(const tsd_guard *g) {
    if (g->fd_line > (1 << 16))
        return 0;
    int fd = fcntl(g->statm, F_DUPFD_CLOEXEC, g->fd_line);
    if (fd >= 0)
        close(fd);
    return fd != g->fd_line;
}

/* 1 when the lowest free descriptor moved since the last look: one was opened (a peer
 * connected: the sooner the guard sees it, the less it holds unseen) or closed. */
static int descriptors_moved(tsd_guard *g) {
    int fd = fcntl(g->statm, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0)
        close(fd);
    const int moved = fd != g->lowest_free;
    g->lowest_free = fd;
    return moved;
}

/* Logs a cut at the rate limit. */
static void say(tsd_guard *g, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(tsd_guard *g, int prio, const char *fmt, ...) {
    uint64_t suppressed;
    if (!tsd_ratelimit_allow(&g->limit, tsd_now_ns(), &suppressed))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (suppressed)
        tsd_log(prio, "%s (%llu more guard messages not logged)", line,
                (unsigned long long)suppressed);
    else
        tsd_log(prio, "%s", line);
}

/* Cuts t's connection, counting it under *counter (a field of g->count: mu held);
 * says why. A connection is cut once: libzmq closes it soon after. */
static void cut(tsd_guard *g, tracked *t, uint64_t *counter, const char *why) {
    if (t->cut)
        return;
    t->cut = 1;
    if (tsd_peer_cut(&t->p) != 0)
        return; /* gone meanwhile */
    (*counter)++;
    if (counter == &g->count.cut_memory) { /* give back what libzmq frees */
        const uint64_t now = tsd_now_ns();
        g->trim_next = now + TRIM_EVERY_NS / 5;
        g->trim_until = now + TRIM_FOR_NS;
    }
    say(g, TSD_LOG_WARNING, "guard: disconnected %s peer %s: %s", tsd_sock_kind_name(t->p.kind),
        t->p.addr, why);
}

/* Carries what was known of each connection over to this scan's list (both in
 * descriptor order; the same descriptor and inode is the same connection) and works out
 * what each holds: the larger of two lower bounds of its unread bytes, since the
 * connection began (what libzmq read, less the handshake, less what the daemon read
 * from that descriptor number, earlier connections included) and since the guard first
 * saw it. */
static int follow(tsd_guard *g, size_t n, uint64_t now) {
    if (n > g->cap_next) {
        tracked *bigger = realloc(g->next, n * sizeof *bigger);
        if (!bigger)
            return -1;
        g->next = bigger;
        g->cap_next = n;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        const tsd_peer *c = &g->scan[i];
        while (j < g->nt && g->t[j].p.fd < c->fd)
            j++;
        tracked *x = &g->next[i];
        const uint64_t read = c->rx > c->inq ? c->rx - c->inq : 0;
        const uint64_t cons = (size_t)c->fd < g->ledger_n
                                  ? atomic_load_explicit(&g->ledger[c->fd], memory_order_relaxed)
                                  : 0;
        if (j < g->nt && g->t[j].p.fd == c->fd && g->t[j].p.ino == c->ino) {
            *x = g->t[j];
        } else {
            memset(x, 0, sizeof *x);
            x->seen_ns = now;
            x->read0 = x->read_prev = x->read_mark = read;
            x->mark_ns = now;
            x->cons0 = cons;
            x->tx0 = c->tx;
        }
        x->p = *c;
        const uint64_t sent = read > HANDSHAKE_MAX ? read - HANDSHAKE_MAX : 0;
        if (c->kind == TSD_SOCK_ALERTS) { /* what it sent stays in the trie: all of it */
            const double dt = x->look_prev ? 1e-9 * (double)(now - x->look_prev) : 0;
            x->level = x->look_prev ? x->level + (double)(read - x->read_prev) - SUB_RATE * dt
                                    : (double)sent;
            x->level = x->level > 0 ? x->level : 0;
            x->held = sent;
        } else {
            const int64_t since = (int64_t)(read - x->read0) - (int64_t)(cons - x->cons0);
            const int64_t all = (int64_t)sent - (int64_t)cons;
            const int64_t h = since > all ? since : all;
            x->held = h > 0 ? (uint64_t)h : 0;
        }
    }
    tracked *swap = g->t;
    size_t cap = g->cap_t;
    g->t = g->next, g->cap_t = g->cap_next, g->nt = n;
    g->next = swap, g->cap_next = cap;
    return 0;
}

/* The per-peer rules (guard.h). */
static void per_peer(tsd_guard *g, tracked *x) {
    char why[200];
    const tsd_sock_kind k = x->p.kind;
    if (!x->p.tcp)
        return; /* ipc://: no byte counts; the memory budget still applies */
    if (k == TSD_SOCK_ALERTS) {
        if (x->level > (double)g->lim.peer_limit[k]) {
            snprintf(why, sizeof why, "sent %.0f bytes of subscriptions in a burst (limit %llu)",
                     x->level, (unsigned long long)g->lim.peer_limit[k]);
            cut(g, x, &g->count.cut_memory, why);
        }
        return;
    }
    if (x->held > g->lim.peer_limit[k]) {
        snprintf(why, sizeof why, "%llu bytes received and not yet read (limit %llu)",
                 (unsigned long long)x->held, (unsigned long long)g->lim.peer_limit[k]);
        cut(g, x, &g->count.cut_memory, why);
        return;
    }
    /* The reader found the socket empty after the mark: whatever libzmq had read from
     * this peer by the mark and the daemon has still not read is the start of a message
     * that has not ended (libzmq hands out whole messages only). ZMTP heartbeats are
     * never read by the daemon either; each is answered with a PONG of about its size,
     * hence the allowance of twice the bytes sent back (ingest only: nothing else goes
     * to an ingest peer). The mark then moves to this look. */
    const uint64_t emptied = atomic_load_explicit(&g->emptied[k], memory_order_acquire);
    const uint64_t lim = g->lim.unfinished_limit[k];
    if (lim && emptied > x->mark_ns) {
        const uint64_t read = x->p.rx > x->p.inq ? x->p.rx - x->p.inq : 0;
        const uint64_t since = read - x->read_mark;
        const uint64_t pongs = k == TSD_SOCK_INGEST ? 2 * (x->p.tx - x->tx0) : 0;
        const uint64_t old = x->held > since + pongs ? x->held - since - pongs : 0;
        x->mark_ns = 0; /* moved by look() */
        if (old > lim) {
            snprintf(why, sizeof why,
                     "a message of at least %llu bytes that does not end (frames with MORE "
                     "set; limit %llu)",
                     (unsigned long long)old, (unsigned long long)lim);
            cut(g, x, &g->count.cut_memory, why);
        }
    }
}

/* Orders candidates for a cut: the newest connection first (then the higher
 * descriptor). */
static int newest_first(const void *a, const void *b) {
    const tracked *x = *(tracked *const *)a, *y = *(tracked *const *)b;
    if (x->seen_ns != y->seen_ns)
        return x->seen_ns < y->seen_ns ? 1 : -1;
    return x->p.fd < y->p.fd ? 1 : -1;
}

/* Cuts, per socket, the newest connections beyond its share, and under pressure every
 * new one but control clients. mu held. */
static void shares(tsd_guard *g, int pressure) {
    tracked **v = malloc((g->nt ? g->nt : 1) * sizeof *v);
    if (!v)
        return;
    for (int k = 0; k < TSD_SOCK_KINDS; k++) {
        size_t n = 0, live = 0;
        for (size_t i = 0; i < g->nt; i++)
            if (g->t[i].p.kind == (tsd_sock_kind)k && !g->t[i].cut) {
                v[n++] = &g->t[i];
                live++;
            }
        g->count.connections[k] = live;
        qsort(v, n, sizeof *v, newest_first);
        for (size_t i = 0; i < n; i++) {
            const int over = live > g->max_peers[k];
            const int late = pressure && k != TSD_SOCK_CONTROL && !v[i]->look_prev &&
                             v[i]->seen_ns > g->pressure_since;
            if (!over && !late)
                break;
            char why[160];
            if (over)
                snprintf(why, sizeof why, "the %s socket has %zu connections, its share is %u",
                         tsd_sock_kind_name(k), live, g->max_peers[k]);
            else
                snprintf(why, sizeof why, "a new connection while memory is over budget");
            cut(g, v[i], &g->count.cut_connections, why);
            live--;
        }
        g->count.connections[k] = live;
    }
    free(v);
}

/* Over budget: cuts the connection holding the most, when it holds at least SHED_MIN.
 * mu held. */
static void shed(tsd_guard *g, uint64_t rss, uint64_t now) {
    if (now < g->shed_after)
        return;
    tracked *top = NULL;
    for (size_t i = 0; i < g->nt; i++)
        if (!g->t[i].cut && g->t[i].p.tcp && g->t[i].held >= SHED_MIN &&
            (!top || g->t[i].held > top->held))
            top = &g->t[i];
    if (!top)
        return;
    char why[200];
    snprintf(why, sizeof why,
             "holds the most (%llu bytes) while the daemon's memory (%llu MB) is over its "
             "budget (%llu MB)",
             (unsigned long long)top->held, (unsigned long long)(rss / MIB),
             (unsigned long long)(g->lim.memory_budget / MIB));
    cut(g, top, &g->count.cut_memory, why);
    g->shed_after = now + SHED_PAUSE_NS;
}

/* The calling thread's CPU time, ns. */
static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One look: memory and descriptors; a scan of the connections when due. */
static void look(tsd_guard *g) {
    const uint64_t now = tsd_now_ns();
    uint64_t rss, vm;
    memory(g, &rss, &vm);
    const uint64_t budget = g->lim.memory_budget, as = g->lim.address_space;
    const uint64_t as_room = tsd_guard_as_margin(as);
    const int over = over_limits(g, rss, vm);
    int pressure = atomic_load_explicit(&g->pressure, memory_order_relaxed);
    if (over && !pressure) {
        pressure = 1;
        g->pressure_since = now;
        say(g, TSD_LOG_WARNING,
            "guard: memory over budget (resident %llu MB of %llu MB, address space %llu MB of "
            "%llu MB): refusing new streams and connections, cutting the peers that hold the "
            "most",
            (unsigned long long)(rss / MIB), (unsigned long long)(budget / MIB),
            (unsigned long long)(vm / MIB), (unsigned long long)(as / MIB));
        pthread_mutex_lock(&g->mu);
        g->count.pressure_episodes++;
        pthread_mutex_unlock(&g->mu);
    } else if (pressure && !over && (!budget || rss < budget / 10 * 9) &&
               (!as || vm + 2 * as_room < as)) {
        pressure = 0;
        say(g, TSD_LOG_NOTICE, "guard: memory back under budget (resident %llu MB)",
            (unsigned long long)(rss / MIB));
    }
    atomic_store_explicit(&g->pressure, pressure, memory_order_relaxed);

    const int moved = descriptors_moved(g);
    const int due = now >= g->scan_end + SCAN_NS || rss > g->rss_at_scan + GROWTH_BYTES || over ||
                    pressure || moved || descriptors_short(g);
    if (due && now >= g->scan_end + g->scan_cost * SCAN_DUTY) {
        const uint64_t cpu0 = thread_cpu_ns();
        size_t fds = 0;
        const size_t n = tsd_peers_scan(g->peers, &g->scan, &g->cap_scan, &fds);
        const uint64_t scanned = tsd_now_ns();
        if (n != (size_t)-1 && follow(g, n, scanned) == 0) {
            pthread_mutex_lock(&g->mu);
            for (size_t i = 0; i < g->nt; i++)
                per_peer(g, &g->t[i]);
            shares(g, pressure);
            if (over)
                shed(g, rss, now);
            g->count.fds = fds;
            g->count.scans++;
            pthread_mutex_unlock(&g->mu);
            for (size_t i = 0; i < g->nt; i++) {
                tracked *x = &g->t[i];
                x->read_prev = x->p.rx > x->p.inq ? x->p.rx - x->p.inq : 0;
                x->look_prev = scanned;
                if (!x->mark_ns)
                    x->read_mark = x->read_prev, x->mark_ns = scanned;
            }
        }
        g->scan_end = tsd_now_ns();
        g->scan_cost = thread_cpu_ns() - cpu0;
        g->rss_at_scan = rss;
    }
    if (now < g->trim_until && now >= g->trim_next) { /* give back what libzmq freed */
        malloc_trim(0);
        g->trim_next = now + TRIM_EVERY_NS;
    }
    pthread_mutex_lock(&g->mu);
    g->count.rss = rss, g->count.vm = vm, g->count.pressure = (uint64_t)pressure;
    pthread_mutex_unlock(&g->mu);
}

/* The thread: a look every TSD_GUARD_TICK_NS until stopped. */
static void *run(void *arg) {
    tsd_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        pthread_mutex_unlock(&g->mu);
        look(g);
        pthread_mutex_lock(&g->mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)TSD_GUARD_TICK_NS;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (!g->stop && pthread_cond_timedwait(&g->wake, &g->mu, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Shares max_connections (or, when 0, what the descriptors allow less the reserve)
 * among the sockets: control 1/8 (4 to 64), alerts 1/4 (4 to 4096), ingest the rest. */
static void share_out(tsd_guard *g, size_t fds_now) {
    const uint64_t reserve = g->lim.nofile / 16 > RESERVE_MIN ? g->lim.nofile / 16 : RESERVE_MIN;
    g->fd_line = g->lim.nofile > reserve ? (int)(g->lim.nofile - reserve) : 0;
    uint64_t room = (uint64_t)g->fd_line > fds_now ? (uint64_t)g->fd_line - fds_now : 0;
    if (g->lim.max_connections && g->lim.max_connections < room)
        room = g->lim.max_connections;
    else if (g->lim.max_connections > room)
        tsd_log(TSD_LOG_WARNING,
                "guard: limits.max_connections = %u but the descriptor limit (%llu, %zu open) "
                "leaves room for %llu: using %llu",
                g->lim.max_connections, (unsigned long long)g->lim.nofile, fds_now,
                (unsigned long long)room, (unsigned long long)room);
    uint64_t c = room / 8, a = room / 4;
    c = c < 4 ? 4 : c > 64 ? 64 : c;
    a = a < 4 ? 4 : a > 4096 ? 4096 : a;
    g->max_peers[TSD_SOCK_CONTROL] = (uint32_t)c;
    g->max_peers[TSD_SOCK_ALERTS] = (uint32_t)a;
    g->max_peers[TSD_SOCK_INGEST] = room > c + a ? (uint32_t)(room - c - a) : 1;
    for (int k = 0; k < TSD_SOCK_KINDS; k++)
        g->count.max_peers[k] = g->max_peers[k];
}

int tsd_guard_start(tsd_guard **out, const tsd_guard_limits *lim, const tsd_bound *bound,
                    size_t n_bound, char *err, size_t errlen) {
    *out = NULL;
    tsd_guard *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "guard: out of memory");
        return -1;
    }
    g->lim = *lim;
    g->statm = -1;
    g->page = sysconf(_SC_PAGESIZE);
    g->ledger_n = lim->nofile < (1u << 20) ? (size_t)lim->nofile : (1u << 20);
    g->ledger = calloc(g->ledger_n, sizeof *g->ledger);
    tsd_ratelimit_init(&g->limit, lim->log_rate);
    if (!g->ledger) {
        snprintf(err, errlen, "guard: out of memory for %zu descriptors", g->ledger_n);
        goto fail;
    }
    if ((g->statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "guard: cannot open /proc/self/statm: %s", strerror(errno));
        goto fail;
    }
    if (tsd_peers_open(&g->peers, bound, n_bound, err, errlen) != 0)
        goto fail;
    size_t fds = 0;
    if (tsd_peers_scan(g->peers, &g->scan, &g->cap_scan, &fds) == (size_t)-1) {
        snprintf(err, errlen, "guard: cannot list the process's descriptors");
        goto fail;
    }
    share_out(g, fds);
    g->count.memory_budget = lim->memory_budget;
    memory(g, &g->count.rss, &g->count.vm);
    g->rss_at_scan = g->count.rss;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int rc = pthread_create(&g->thread, &attr, run, g);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "guard: cannot start its thread: %s", strerror(rc));
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->mu);
        goto fail;
    }
    tsd_log(TSD_LOG_INFO,
            "guard: memory budget %llu MB, %llu bytes unread per ingest peer; peers at most "
            "%u ingest, %u alerts, %u control (%llu descriptors, %zu open, from %d kept free)",
            (unsigned long long)(lim->memory_budget / MIB),
            (unsigned long long)lim->peer_limit[TSD_SOCK_INGEST], g->max_peers[TSD_SOCK_INGEST],
            g->max_peers[TSD_SOCK_ALERTS], g->max_peers[TSD_SOCK_CONTROL],
            (unsigned long long)lim->nofile, fds, g->fd_line);
    *out = g;
    return 0;
fail:
    tsd_peers_close(&g->peers);
    if (g->statm >= 0)
        close(g->statm);
    free(g->scan);
    free(g->ledger);
    free(g);
    return -1;
}

void tsd_guard_stop(tsd_guard **g_p) {
    tsd_guard *g = *g_p;
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->mu);
    tsd_peers_close(&g->peers);
    close(g->statm);
    free(g->t);
    free(g->next);
    free(g->scan);
    free(g->ledger);
    free(g);
    *g_p = NULL;
}
