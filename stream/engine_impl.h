/* SPDX-License-Identifier: Apache-2.0 */
/* engine_impl.h - the engine object, shared by the files that implement engine.h
 * (engine.c: lifecycle, tick, queries; ingest.c; checkpoint.c). Internal. */
#ifndef TSS_ENGINE_IMPL_H
#define TSS_ENGINE_IMPL_H

#include "arena.h"
#include "passes.h"

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "registry.h"
#include "stream.h"

struct tss_engine {
    tss_engine_options opt;
    tsm_backend backend; /* resolved (never AUTO) */
    int threads;         /* T */
    tsm_ctx *wide;       /* the backend's ctx (CPU: T threads): every kernel of a round */
    tss_arena arena;     /* all streams' windows for the kernels (device memory on CUDA) */
    tss_registry reg;
    tss_stream **dirty; /* streams with staged samples, unordered */
    size_t ndirty, dirty_cap;
    size_t pending; /* staged samples in all */
    tss_engine_counters c;
    /* the passes in flight (engine.c): their streams (fly[0..nfly), creation order), the
     * thread that runs them and its CUDA ctx (overlap_passes) */
    tsm_ctx *side;
    int pass_sms; /* side confined to that many SMs (0: not; pass_sms_why) */
    char pass_sms_why[256];
    tss_passes *passes;
    tss_stream **fly;
    size_t nfly, fly_cap;
    /* The pass thread lives as long as the engine (its OpenMP team with it: a thread
     * per batch made libgomp build and tear down a team of `threads` each time, which
     * held up every join by milliseconds). */
    pthread_t thread;
    int have_thread;        /* thread was started (overlap_passes) */
    int threaded;           /* thread is running the passes in flight */
    pthread_mutex_t mu;     /* the next three */
    pthread_cond_t cv;      /* work for the thread, passes done, stop */
    int work, stop;         /* under mu: passes to run; the thread ends */
    atomic_int passes_done; /* set by the thread when it has finished them */
    /* streams that reached a pass point while passes were in flight (engine.c): they
     * take no samples until their passes are launched, so their windows stay those of
     * the pass point */
    tss_stream **wait;
    size_t nwait, wait_cap;
    double exec_secs; /* the last launch's passes (written by whoever ran them, read by the join) */
    double pass_cost; /* seconds of passes per unit of pass_work (engine.c), averaged over
                       * launches (0: none yet) */
    double fly_work;  /* the pass_work of the launch in flight */
    int device_lost;  /* a kernel failed with TSM_EDEVICE (sticky) */
    char device_msg[256]; /* its message, repeated by every later tick */
    /* TSMINE_TEST_FAULT (test_fault.h, test only): the tick after fault_after ticks with
     * work fails as on a sticky device error (fault_trap: a real one, by a trapping
     * kernel); -1 = off */
    long long fault_after;
    int fault_trap;
    uint64_t ticks_with_work; /* ticks that had staged samples */
    /* lifetime.c: the streams by idleness, oldest first (0: cold, 1: warm), and when
     * the next tick looks for expired ones */
    tss_stream *oldest[2], *newest[2];
    double next_expiry;
};

/* Puts s on the dirty list (once); 0 or -1 when out of memory. */
int tssi_engine_mark_dirty(tss_engine *e, tss_stream *s);
/* Joins the passes in flight (engine.c); emit = 0 drops their alerts (destroy). 0, or
 * -1 with the message in err. */
int tssi_engine_join(tss_engine *e, int emit, char *err, unsigned errlen);
/* Room on the list of streams waiting for their passes for `more` streams. */
int tssi_engine_reserve_wait(tss_engine *e, size_t more);
/* Takes s off the streams waiting for their passes (its window restarts). */
void tssi_engine_unwait(tss_engine *e, tss_stream *s);
/* Room on the dirty list for `more` streams, so that marking cannot fail later. */
int tssi_engine_reserve_dirty(tss_engine *e, size_t more);
/* Hands what s's rounds queued (s->out) to the callback now, then ends the burst. */
void tssi_engine_emit_queued(tss_engine *e, tss_stream *s);

/* lifetime.c: the engine's clocks (options.now, options.wall_ns, or the system's). */
double tssi_engine_now(const tss_engine *e);
int64_t tssi_engine_wall_ns(const tss_engine *e);
/* s accepted a batch now (or was created or restored): it becomes the newest on its
 * list (cold until it has delivered its warm-up). O(1). */
void tssi_engine_touch(tss_engine *e, tss_stream *s);
/* The table is full: removes the stream limits.when_full allows, if any. 1 if there
 * is room now, else 0. */
int tssi_engine_make_room(tss_engine *e);
/* Removes the streams idle past limits.idle_expiry_s (at most once a second). */
void tssi_engine_expire(tss_engine *e);

#endif
