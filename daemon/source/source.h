/* SPDX-License-Identifier: Apache-2.0 */
/* source.h - the contract of a sample source (DESIGN 5.1): ZeroMQ (PULL, and SUB when
 * ingest.subscribe is set) and MQTT are each one file that fills one tsd_source_ops
 * table and exports nothing else, and one row of the registry (source.c) lists it. The
 * main loop (loop.c) polls the sources' items beside the control socket and calls
 * only the ops; optional hooks are NULL when unused. Every source hands what it reads
 * to the one ingest path (decode.h), whose counters are shared; a source's own
 * rejection reasons are declared in its row (reasons) and numbered by the registry
 * from TSD_REASON_SOURCES on, so that STATUS and /metrics list them whether it is open
 * or not.
 *
 * Life cycle: open at start (a row whose settings leave it off opens to NULL); after
 * every zmq_poll, drain with the revents of its items and a budget; at SIGTERM stop
 * (take no more), then finish (read what is already queued, before a deadline); reload
 * at every SIGHUP or RELOAD; counters whenever STATUS or /metrics look; close at the
 * end. All on the main thread, which owns the engine. */
#ifndef TSD_SOURCE_H
#define TSD_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "config.h"
#include "daemon/guard/guard.h"
#include "daemon/guard/security.h"
#include "daemon/guard/sockets.h"
#include "daemon/sink/sink.h" /* tsd_counter */
#include "daemon/source/decode.h"
#include "engine.h"

/* What a source may use to open. */
typedef struct {
    const tsc_config *cfg;
    const tsd_sockets *sock; /* the daemon's sockets (sockets.h) */
    int reason_base;         /* the number of its first reason (ops->reasons) */
} tsd_source_env;

/* Where a drain puts what it reads, and what it may know of the poll. */
typedef struct {
    tsd_ingest *ingest;
    tss_engine *engine;
    tsd_guard *guard;       /* NULL: none */
    tsd_security *security; /* NULL: no CURVE */
    uint64_t polled;        /* when zmq_poll was entered (tsd_now_ns) */
    int revents_valid;      /* 0 after an interrupted poll: revents were not filled in */
} tsd_source_ctx;

/* The most poll items of one source. */
#define TSD_SOURCE_ITEMS 2

typedef struct tsd_source_ops {
    const char *name;
    const char *const *reasons; /* its own rejection reasons ("json", ...), or NULL */
    size_t n_reasons;
    /* 0 with *self, or *self NULL when its settings leave it off; a sysexits code with
     * err otherwise (the daemon does not start). */
    int (*open)(void **self, const tsd_source_env *env, char *err, size_t errlen);
    /* Its poll items (at most TSD_SOURCE_ITEMS) into items; returns how many. */
    size_t (*poll_items)(void *self, zmq_pollitem_t *items);
    /* After every zmq_poll, with its items' revents: reads up to max messages into the
     * ingest path, stopping once max_staged samples wait in the engine; returns how
     * many, *more |= 1 when a bound stopped it (more may be waiting). */
    size_t (*drain)(void *self, const tsd_source_ctx *ctx, const zmq_pollitem_t *items, size_t max,
                    size_t max_staged, int *more);
    /* SIGTERM: take no more (senders keep what is not delivered). */
    void (*stop)(void *self);
    /* After stop: reads everything already queued into staging, until deadline_ns
     * (tsd_now_ns); returns the messages read, *unread = 1 when time ran out first. */
    size_t (*finish)(void *self, const tsd_source_ctx *ctx, uint64_t deadline_ns, int *unread);
    /* Optional: SIGHUP or RELOAD. */
    void (*reload)(void *self, const tsc_config *cfg);
    /* Optional: its counters (at most TSD_SINK_ROWS) into out; returns how many. */
    size_t (*counters)(void *self, tsd_counter out[]);
    void (*close)(void *self);
} tsd_source_ops;

/* An open source, and where its items sit in the loop's poll set. */
typedef struct {
    const tsd_source_ops *ops;
    void *self;
    size_t item, n_items; /* the loop's */
} tsd_source;

#define TSD_SOURCES_MAX 8

/* Opens every row of the registry in order; those that open to NULL are left out. 0
 * with out[0..*n), or a sysexits code with err (those opened are closed). */
int tsd_sources_open(tsd_source out[TSD_SOURCES_MAX], size_t *n, const tsd_source_env *env,
                     char *err, size_t errlen);
/* Closes the n sources; *n = 0. */
void tsd_sources_close(tsd_source *s, size_t *n);
/* Calls every source's reload hook. */
void tsd_sources_reload(const tsd_source *s, size_t n, const tsc_config *cfg);
/* Appends the counters of the n sources to out (at most max in all); returns how many. */
size_t tsd_sources_counters(const tsd_source *s, size_t n, tsd_counter *out, size_t max);

#endif
