/* SPDX-License-Identifier: Apache-2.0 */
/* guard.h - a thread that keeps hostile peers to a bounded share of the daemon's memory
 * and descriptors where libzmq's own options cannot (issue 17 items 1 and 9;
 * daemon/README.md, "Hostile peers").
 *
 * libzmq bounds each frame (ZMQ_MAXMSGSIZE) and each connection's queue in whole
 * messages (ZMQ_RCVHWM), but it keeps the frames of a multipart message that has not
 * ended out of the reader's sight and without any limit: one peer streaming frames with
 * MORE set grew the daemon by +514 MB in 0.4 s, and 1-byte frames cost 64 bytes each
 * (a 32-fold amplification; issue 17). It neither limits nor reports connections one
 * by one, and accepts until the descriptors run out. So, every TSD_GUARD_TICK_NS, the
 * thread reads the process's resident and virtual size, and now and then (at once when
 * memory grew, a descriptor was opened, descriptors run short or memory is over
 * budget) scans the accepted
 * connections (peers.h) and compares what each TCP peer has sent with what the daemon
 * has read from it (the readers report every frame, tsd_guard_note):
 *  - a peer that holds more unread bytes than its socket allows (peer_limit: the ingest
 *    queue of limits.peer_buffer plus slack; the control queue; for alerts, a burst of
 *    subscriptions), or an unfinished message larger than any message its socket
 *    accepts while the daemon has read everything else (unfinished_limit, checked once
 *    the reader has found the socket empty since the last look, tsd_guard_emptied), is
 *    cut (peers.h: shutdown, libzmq frees what it queued) and counted;
 *  - above the memory budget (resident bytes), or near RLIMIT_AS, the peers holding the
 *    most are cut, malloc gives freed memory back, and `pressure` is raised: ingest then
 *    refuses new streams and new connections are cut, until memory is back under 90 %
 *    of the budget;
 *  - per socket, connections beyond its share of max_connections are cut, the newest
 *    first, so that a reserve of descriptors stays free for control clients,
 *    checkpoints and /metrics.
 * Every cut is logged at limits.log_rate with the peer, the socket and the reason.
 *
 * Threads: tsd_guard_note and tsd_guard_emptied are called by the daemon's readers (the
 * main thread); they only touch atomics. The rest is the guard thread's, read through
 * tsd_guard_counters_get and tsd_guard_pressure. */
#ifndef TSD_GUARD_H
#define TSD_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "daemon/guard/sockets.h"

/* How often the thread looks at the process's memory and descriptors. */
#define TSD_GUARD_TICK_NS 5000000ull

/* The address space the guard keeps free under an address-space limit as (what libzmq,
 * which aborts when an allocation fails, may still need): an eighth, at least 8 MiB. */
static inline uint64_t tsd_guard_as_margin(uint64_t as) {
    return as / 8 > (8ull << 20) ? as / 8 : 8ull << 20;
}

typedef struct {
    uint64_t peer_limit[TSD_SOCK_KINDS];       /* unread bytes a peer may hold (alerts: a burst
                                                * of subscription bytes) */
    uint64_t unfinished_limit[TSD_SOCK_KINDS]; /* the largest unfinished message a peer may
                                                * hold once the socket was emptied; 0: none */
    uint64_t memory_budget;                    /* resident bytes; 0: no budget */
    uint64_t address_space;                    /* RLIMIT_AS; 0: unlimited */
    uint64_t nofile;                           /* RLIMIT_NOFILE in force */
    uint32_t max_connections; /* peer connections over all sockets; 0: what the descriptors
                               * allow, less a reserve (tsd_guard_start shares them out) */
    int curve;                /* the sockets speak CURVE (a frame costs 33 more bytes) */
    uint32_t log_rate;
} tsd_guard_limits;

typedef struct {
    uint64_t rss, vm;                     /* resident and virtual bytes, last look */
    uint64_t memory_budget;               /* in force */
    uint64_t fds;                         /* descriptors open at the last scan */
    uint64_t connections[TSD_SOCK_KINDS]; /* peers connected at the last scan */
    uint64_t max_peers[TSD_SOCK_KINDS];   /* their limits */
    uint64_t cut_memory;                  /* peers cut for holding too much */
    uint64_t cut_connections;             /* peers cut beyond their socket's share */
    uint64_t pressure;                    /* 1 while memory is over budget */
    uint64_t pressure_episodes;           /* times it went over */
    uint64_t scans;                       /* connection scans done */
} tsd_guard_counters;

typedef struct tsd_guard tsd_guard;

/* Starts the thread over the endpoints the sockets are bound to. Logs the limits in
 * force. 0, or -1 with err. */
int tsd_guard_start(tsd_guard **out, const tsd_guard_limits *lim, const tsd_bound *bound,
                    size_t n_bound, char *err, size_t errlen);
/* Stops the thread and frees it; *g_p = NULL (no-op on NULL). */
void tsd_guard_stop(tsd_guard **g_p);

/* A reader got frame from a peer of a bound socket: counts its bytes on the wire against
 * the peer's descriptor (ZMQ_SRCFD). Frames of connected sockets (ingest.subscribe)
 * carry a descriptor too and are counted harmlessly. O(1); g may be NULL. */
void tsd_guard_note(tsd_guard *g, const zmq_msg_t *frame);
/* A reader found the socket of that kind empty (no whole message left) at a moment
 * after since_ns (tsd_now_ns(): a time taken before it looked). */
void tsd_guard_emptied(tsd_guard *g, tsd_sock_kind kind, uint64_t since_ns);

/* 1 while memory is over budget: refuse what would take more (new streams). */
int tsd_guard_pressure(const tsd_guard *g);

/* Whether a new stream that will take `bytes` may be created now: 0 under pressure,
 * and 0 when the process's size (re-read at most every TSD_GUARD_ADMIT_NS) is over the
 * budget, or with the bytes of every stream admitted since the last tsd_guard_settled
 * would come within the guard's room of the address-space limit, so that a burst of new
 * streams between two of the guard's looks cannot run the address space out (under
 * ulimit -v, libzmq aborts when an allocation fails). O(1): a clock read, at most every
 * TSD_GUARD_ADMIT_NS a read of /proc/self/statm. For the main thread (user = the
 * guard), asked only for streams the engine does not know. */
#define TSD_GUARD_ADMIT_NS 1000000ull
int tsd_guard_admit(void *user, uint64_t bytes);
/* After a tick (main thread): the streams admitted so far have their memory now, the
 * process's size shows it. */
void tsd_guard_settled(tsd_guard *g);

/* The counters; zeros when g is NULL. */
void tsd_guard_counters_get(const tsd_guard *g, tsd_guard_counters *out);

#endif
