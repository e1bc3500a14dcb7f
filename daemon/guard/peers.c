/* SPDX-License-Identifier: Apache-2.0 */
/* peers.c - the daemon's accepted connections from /proc/self/fd and the socket API
 * (peers.h). */
#include "daemon/guard/peers.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A bound endpoint, parsed: a TCP port on an address ("" = any), or a Unix path. */
typedef struct {
    tsd_sock_kind kind;
    int unix_path;  /* 1: path below; 0: TCP */
    char host[64];  /* numeric, "" for a wildcard bind */
    unsigned port;  /* TCP */
    char path[108]; /* Unix: sun_path (abstract: a leading NUL) */
    size_t path_len;
} listener;

struct tsd_peers {
    DIR *fds; /* /proc/self/fd, kept open */
    listener *l;
    size_t n;
};

/* Parses "tcp://HOST:PORT" or "ipc://PATH" into *l; 0, or -1 for another transport. */
static int parse_bound(const tsd_bound *b, listener *l) {
    memset(l, 0, sizeof *l);
    l->kind = b->kind;
    const char *e = b->endpoint;
    if (strncmp(e, "tcp://", 6) == 0) {
        const char *h = e + 6, *colon = strrchr(h, ':');
        if (!colon)
            return -1;
        size_t hlen = (size_t)(colon - h);
        if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']')
            h++, hlen -= 2;
        if (hlen >= sizeof l->host)
            return -1;
        memcpy(l->host, h, hlen);
        l->host[hlen] = '\0';
        if (!strcmp(l->host, "*") || !strcmp(l->host, "0.0.0.0") || !strcmp(l->host, "::"))
            l->host[0] = '\0';
        l->port = (unsigned)strtoul(colon + 1, NULL, 10);
        return l->port ? 0 : -1;
    }
    if (strncmp(e, "ipc://", 6) == 0) {
        const char *path = e + 6;
        l->unix_path = 1;
        l->path_len = strlen(path);
        if (l->path_len == 0 || l->path_len >= sizeof l->path)
            return -1;
        memcpy(l->path, path, l->path_len);
        if (l->path[0] == '@') /* libzmq's notation of the abstract namespace */
            l->path[0] = '\0';
        return 0;
    }
    return -1;
}

int tsd_peers_open(tsd_peers **out, const tsd_bound *bound, size_t n, char *err, size_t errlen) {
    *out = NULL;
    tsd_peers *p = calloc(1, sizeof *p);
    if (p)
        p->l = calloc(n ? n : 1, sizeof *p->l);
    if (!p || !p->l) {
        snprintf(err, errlen, "peers: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_bound(&bound[i], &p->l[p->n]) == 0)
            p->n++;
    p->fds = opendir("/proc/self/fd");
    if (!p->fds) {
        snprintf(err, errlen, "peers: cannot list /proc/self/fd: %s", strerror(errno));
        goto fail;
    }
    *out = p;
    return 0;
fail:
    if (p)
        free(p->l);
    free(p);
    return -1;
}

void tsd_peers_close(tsd_peers **p_p) {
    tsd_peers *p = *p_p;
    if (!p)
        return;
    closedir(p->fds);
    free(p->l);
    free(p);
    *p_p = NULL;
}

/* The listener whose local address sa (of length len) is, or NULL. */
static const listener *match(const tsd_peers *p, const struct sockaddr_storage *sa, socklen_t len) {
    char host[INET6_ADDRSTRLEN] = "";
    unsigned port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
        port = ntohs(in->sin6_port);
    } else if (sa->ss_family != AF_UNIX) {
        return NULL;
    }
    const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
    size_t un_len = len > offsetof(struct sockaddr_un, sun_path)
                        ? (size_t)len - offsetof(struct sockaddr_un, sun_path)
                        : 0;
    for (size_t i = 0; i < p->n; i++) {
        const listener *l = &p->l[i];
        if (sa->ss_family == AF_UNIX) {
            /* a pathname's length may include its NUL; an abstract name's does not */
            size_t n = un_len && !l->path[0] ? un_len : strnlen(un->sun_path, un_len);
            if (l->unix_path && n == l->path_len && memcmp(un->sun_path, l->path, n) == 0)
                return l;
        } else if (!l->unix_path && l->port == port && (!l->host[0] || !strcmp(l->host, host))) {
            return l;
        }
    }
    return NULL;
}

/* "IP:PORT" of the peer of fd. */
static void peer_name(int fd, char *out, size_t len) {
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) == 0) {
        if (sa.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
        } else if (sa.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
        }
    }
    snprintf(out, len, "%s:%u", host, port);
}

/* Fills *c for descriptor fd when it is a connection accepted on one of the listeners;
 * 1 if so, else 0. */
static int inspect(const tsd_peers *p, int fd, tsd_peer *c) {
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) /* ENOTSOCK: not a socket */
        return 0;
    const listener *l = match(p, &sa, sl);
    if (!l)
        return 0;
    int listening = 0, type = 0;
    socklen_t ol = sizeof listening, tl = sizeof type;
    struct stat st;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) != 0 || listening ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
        fstat(fd, &st) != 0)
        return 0;
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->kind = l->kind;
    c->ino = (uint64_t)st.st_ino;
    c->tcp = sa.ss_family != AF_UNIX;
    if (!c->tcp) {
        snprintf(c->addr, sizeof c->addr, "ipc");
        return 1;
    }
    struct tcp_info ti;
    socklen_t il = sizeof ti;
    memset(&ti, 0, sizeof ti);
    int inq = 0;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &il) == 0 &&
        il >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        c->rx = ti.tcpi_bytes_received, c->tx = ti.tcpi_bytes_acked;
    else
        c->tcp = 0; /* a kernel older than 4.1: no byte count */
    if (ioctl(fd, SIOCINQ, &inq) == 0 && inq > 0)
        c->inq = (uint64_t)inq;
    peer_name(fd, c->addr, sizeof c->addr);
    return 1;
}

size_t tsd_peers_scan(tsd_peers *p, tsd_peer **out, size_t *cap, size_t *fds) {
    size_t n = 0;
    *fds = 0;
    rewinddir(p->fds);
    const int self = dirfd(p->fds);
    struct dirent *e;
    for (;;) {
        errno = 0;
        if (!(e = readdir(p->fds))) {
            if (errno)
                return (size_t)-1;
            break;
        }
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        const int fd = atoi(e->d_name);
        (*fds)++;
        tsd_peer c;
        if (fd == self || !inspect(p, fd, &c))
            continue;
        if (n == *cap) {
            size_t grown = *cap ? 2 * *cap : 64;
            tsd_peer *bigger = realloc(*out, grown * sizeof *bigger);
            if (!bigger)
                return (size_t)-1;
            *out = bigger;
            *cap = grown;
        }
        (*out)[n++] = c;
    }
    return n; /* the listing is in descriptor order */
}

int tsd_peer_cut(const tsd_peer *c) {
    struct stat st;
    if (fstat(c->fd, &st) != 0 || (uint64_t)st.st_ino != c->ino || !S_ISSOCK(st.st_mode))
        return -1;
    /* A TCP connection is reset and its receive queue purged (connect to AF_UNSPEC:
     * tcp_disconnect): after a mere shutdown, libzmq would still read and queue what
     * the kernel holds for it, up to several MB, 32 times that in empty frames. */
    struct sockaddr none = {.sa_family = AF_UNSPEC};
    if (c->tcp && connect(c->fd, &none, sizeof none) == 0)
        return 0;
    return shutdown(c->fd, SHUT_RDWR);
}
