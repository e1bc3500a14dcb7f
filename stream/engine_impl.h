/* SPDX-License-Identifier: Apache-2.0 */
/* engine_impl.h - the engine object, shared by the files that implement engine.h
 * (engine.c: life cycle; tick.c; pass_thread.c; query.c; test_fault.c; ingest.c; lifetime.c;
 * checkpoint.c). Internal. */
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
    /* the passes in flight (pass_thread.c): their streams (fly[0..nfly), creation order), the
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
    /* streams that reached a pass point while passes were in flight (pass_thread.c): they
     * take no samples until their passes are launched, so their windows stay those of
     * the pass point */
    tss_stream **wait;
    size_t nwait, wait_cap;
    double exec_secs; /* the last launch's passes (written by whoever ran them, read by the join) */
    double pass_cost; /* seconds of passes per unit of pass_work (pass_thread.c), averaged over
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

/* engine.c: room for need entries in the stream list *list of capacity *cap (grown by
 * doubling); 0, or -1 when out of memory (the list unchanged). */
int tssi_reserve_streams(tss_stream ***list, size_t *cap, size_t need);

/* tick.c: */
/* Puts s on the dirty list (once); 0 or -1 when out of memory. */
int tssi_engine_mark_dirty(tss_engine *e, tss_stream *s);
/* Room on the dirty list for `more` streams, so that marking cannot fail later. */
int tssi_engine_reserve_dirty(tss_engine *e, size_t more);
/* Hands b's alerts (s's queue) to the callback, numbering each (seq) by s's count. */
void tssi_engine_emit(tss_engine *e, tss_stream *s, tss_alert_buf *b);
/* The end of a burst of emits (tss_engine_options.on_alerts_end). */
void tssi_engine_emitted(tss_engine *e);
/* Hands what s's rounds queued (s->out) to the callback now, then ends the burst. */
void tssi_engine_emit_queued(tss_engine *e, tss_stream *s);
/* Records a sticky device error: every later tick fails with its message. */
void tssi_engine_lose_device(tss_engine *e, const char *msg);

/* pass_thread.c: */
/* The context and the thread of the passes, for tss_engine_new (e->wide, backend and
 * threads set): with overlap_passes (the CUDA backend, or TSS_OVERLAP_ALWAYS) a second
 * ctx whose kernels yield to the rounds' and keep to a share of the SMs, and the thread
 * (without it, pthread_create having failed, the passes run at launch). 0, or -1 with
 * err (the caller destroys e->side and e->wide). */
int tssi_pass_thread_open(tss_engine *e, char *err, unsigned errlen);
/* Stops and joins the thread, if any (its passes joined before). */
void tssi_pass_thread_close(tss_engine *e);
/* Joins the passes in flight; emit = 0 drops their alerts (destroy). 0, or -1 with
 * the message in err. */
int tssi_engine_join(tss_engine *e, int emit, char *err, unsigned errlen);
/* Moves the passes on without waiting for them (block: waiting): joins those in flight
 * once they are done (without a pass thread: at once), then launches the waiting
 * streams' passes if none are in flight (joined at once without a pass thread). 0, or
 * -1 with the first failure in err. */
int tssi_engine_advance_passes(tss_engine *e, int block, char *err, unsigned errlen);
/* Room on the list of streams waiting for their passes for `more` streams. */
int tssi_engine_reserve_wait(tss_engine *e, size_t more);
/* Takes s off the streams waiting for their passes (its window restarts). */
void tssi_engine_unwait(tss_engine *e, tss_stream *s);

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
