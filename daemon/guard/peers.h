/* SPDX-License-Identifier: Apache-2.0 */
/* peers.h - the connections peers made to tsmined's bound sockets, as the kernel sees
 * them (issue 17). libzmq neither limits nor reports its connections one by one, so
 * the guard (guard.h) finds them among the process's descriptors: every TCP or Unix
 * stream socket whose local address is one the daemon bound (sockets.h, tsd_bound),
 * with what TCP has received from the peer so far and what of it still waits in the
 * kernel. Cutting one resets it (a TCP connection is disconnected, connect(2) to
 * AF_UNSPEC, which also drops what the kernel still holds from the peer; a Unix one is
 * shut down): libzmq's I/O thread sees the connection end, drops it with everything it
 * queued for it (the frames of an unfinished multipart message included) and closes
 * the descriptor itself, so no descriptor is ever closed behind libzmq's back.
 *
 * Not thread-safe: one thread (the guard's) scans and cuts. */
#ifndef TSD_PEERS_H
#define TSD_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/guard/sockets.h"

/* One accepted connection. */
typedef struct {
    int fd;
    tsd_sock_kind kind; /* the socket it was accepted on */
    int tcp;            /* 1: TCP, with byte counts; 0: a Unix socket (ipc://), without */
    uint64_t ino;       /* the socket's inode: tells a reused descriptor number apart */
    uint64_t rx;        /* TCP bytes received from the peer (TCP_INFO tcpi_bytes_received) */
    uint64_t inq;       /* of those, not yet read by libzmq (SIOCINQ) */
    uint64_t tx;        /* TCP bytes sent to the peer and acknowledged (tcpi_bytes_acked) */
    char addr[64];      /* the peer's "IP:PORT" ("ipc" for a Unix socket), for logs */
} tsd_peer;

typedef struct tsd_peers tsd_peers;

/* Prepares to find the connections of the n endpoints in bound (tcp:// and ipc://; other
 * transports have no descriptors of their own and are skipped). Keeps /proc/self/fd open
 * so that a scan needs no free descriptor. 0, or -1 with err. */
int tsd_peers_open(tsd_peers **out, const tsd_bound *bound, size_t n, char *err, size_t errlen);
void tsd_peers_close(tsd_peers **p_p);

/* Lists the connections into *out (grown as needed, *cap its capacity), in descriptor
 * order; returns how many, or (size_t)-1 when the listing failed or memory ran out.
 * *fds: the process's open descriptors. Cost: one getsockname per descriptor, five
 * more system calls per connection. */
size_t tsd_peers_scan(tsd_peers *p, tsd_peer **out, size_t *cap, size_t *fds);

/* Cuts the connection of c, when its descriptor still holds that socket (same inode).
 * 0, or -1 when the descriptor was closed or reused meanwhile (nothing done). */
int tsd_peer_cut(const tsd_peer *c);

#endif
