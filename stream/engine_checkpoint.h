/* SPDX-License-Identifier: Apache-2.0 */
/* engine_checkpoint.h - the engine's checkpoints (stream/checkpoint.c): every stream's
 * state saved to and restored from versioned, checksummed files, whole
 * (tss_engine_save, tss_engine_load) or in groups written step by step (tss_ckpt_walk)
 * and read back together (tss_restore). The daemon (daemon.c, ckpt_job.c) and the tests
 * call it; the rest of the engine's contract is engine.h. (The daemon's own
 * daemon/state/state_files.h makes the files crash-safe around this format.) */
#ifndef TSS_ENGINE_CHECKPOINT_H
#define TSS_ENGINE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"

/* Checkpoint: writes every stream's window, sequence state, m, score history, events,
 * published spans and counters to f in a versioned, checksummed binary format
 * (stream/checkpoint.c). The caller makes it crash-safe (temporary file, fsync, rename). 0 or -1
 * with err. */
int tss_engine_save(tss_engine *e, FILE *f, char *err, unsigned errlen);
/* Restores a checkpoint written by tss_engine_save into an engine that has no
 * streams yet. Anything malformed (short, wrong magic or version, bad checksum,
 * impossible sizes) is refused with a message and leaves the engine empty; never
 * crashes on hostile bytes. A valid file with more streams than max_streams (the limit
 * was lowered) loads its first max_streams streams in creation order, those a daemon
 * running with that limit from the start would hold (a full engine refuses new
 * streams): the later ones are checked, then dropped (tss_engine_load_report counts
 * them). */
int tss_engine_load(tss_engine *e, FILE *f, char *err, unsigned errlen);

/* A stream record a restore set aside because another record of the stream was kept
 * (tss_load_report). */
#define TSS_LOAD_DUPS_NOTED 8
typedef struct {
    char id[TSS_MAX_ID + 1];
    uint32_t file, kept_file;           /* the files' groups (TSS_CKPT_ALL: every stream's) */
    uint64_t epoch, next_seq;           /* of the record set aside */
    uint64_t kept_epoch, kept_next_seq; /* of the record kept */
} tss_load_dup;

/* What a load says beside its status (tss_engine_load_report). */
typedef struct {
    int read_errno; /* reading f failed (an I/O error, not the content): its errno, else 0.
                     * The file may be good: a caller must not treat it as corrupt. */
    size_t dropped; /* loaded: valid streams left out, beyond max_streams */
    char first_dropped[TSS_MAX_ID + 1]; /* the first of them ("" when none) */
    /* Records of a stream read before (in the same file or another): of two records of
     * one stream the restore keeps the one of the later epoch, then of the higher
     * next_seq, then the one read first, and counts the other here. The first
     * TSS_LOAD_DUPS_NOTED are described in dup[] (file: its file's group, or
     * TSS_CKPT_ALL for a file of every stream). */
    size_t duplicates;
    tss_load_dup dup[TSS_LOAD_DUPS_NOTED];
} tss_load_report;
/* tss_engine_load, and *rep (NULL: not wanted) as above. f must be seekable (its size is
 * known before reading); it is read once, incrementally, each record checked as it
 * comes: the memory a load takes is that of the streams it builds, not the file's size,
 * and a file that is not a checkpoint is refused after its first bytes. */
int tss_engine_load_report(tss_engine *e, FILE *f, tss_load_report *rep, char *err,
                           unsigned errlen);

/* ---- Incremental checkpoints (the daemon's; stream/checkpoint.c) ----------------
 * The streams are split by a hash of their id into TSS_CKPT_GROUPS groups, one file
 * each, in the format of tss_engine_save (a group's file holds that group's streams).
 * A checkpoint writes only the groups in which a stream changed since it was last
 * serialised, or whose file holds another number of streams (one was removed): an idle
 * engine writes nothing. A walk does it in steps of bounded time between the caller's
 * other work: the engine is not touched between steps by anything but the caller's own
 * thread, and each stream's record is its state at the step that serialised it (streams
 * are independent: each one's record is consistent, a file's records need not be of one
 * instant). The records go to a sink (a writer thread) without their CRC: the sink
 * writes them with tss_ckpt_file_*. */
#define TSS_CKPT_GROUPS 256
#define TSS_CKPT_ALL    0xffffffffu /* tss_engine_save's file: every stream, any group */
/* The group of a stream id (FNV-1a of the id). */
unsigned tss_ckpt_group(const char *id);

/* Where a walk's records go (called on the caller's thread). */
typedef struct {
    /* may another record be queued now (the writer keeps up)? */
    int (*room)(void *user);
    /* one record of group g (n bytes at rec, malloc'ed: the sink frees it) */
    void (*record)(void *user, uint32_t g, void *rec, size_t n);
    /* group g's records are all there: count of them (0: the group is empty now) */
    void (*end)(void *user, uint32_t g, uint32_t count);
    void *user;
} tss_ckpt_sink;

typedef struct {
    uint64_t records, bytes; /* serialised so far */
    uint32_t groups;         /* groups to write (known once every stream was seen) */
    double held_s;           /* time spent in steps, in all */
    double max_held_s;       /* the longest step */
    double max_cpu_s;        /* the most CPU time of one step (its thread's: on a loaded
                              * machine a step may be preempted, its wall time longer) */
} tss_ckpt_walk_stats;

typedef struct tss_ckpt_walk tss_ckpt_walk;
/* A walk over every stream. disk[g]: the streams group g's file holds now (0: no
 * file; -1: unknown, the group is written). full: every group is written. 0 or -1. */
int tss_ckpt_walk_new(const int64_t *disk, int full, tss_ckpt_walk **out);
/* Goes on with the walk for about budget_s (at least one stream's record): first looks
 * at every stream (about 60 ns each), then serialises the streams of the groups to
 * write, group by group (sink->end after each), while sink->room allows. A stream whose
 * passes are in flight waits for their join (may_join: joins them now, up to about
 * TSS_PASS_BATCH_S). Returns 1 when done, 0 when more is left, -1 when out of memory. */
int tss_ckpt_walk_step(tss_engine *e, tss_ckpt_walk *w, double budget_s, int may_join,
                       const tss_ckpt_sink *sink);
const tss_ckpt_walk_stats *tss_ckpt_walk_stats_of(const tss_ckpt_walk *w);
void tss_ckpt_walk_destroy(tss_ckpt_walk **self_p);

/* Writes a file of records (tss_engine_save's format): begin, the records, end. */
typedef struct {
    FILE *f;
    uint32_t crc, count;
    uint64_t len;
    int failed;
} tss_ckpt_file;
void tss_ckpt_file_begin(tss_ckpt_file *cf, FILE *f, uint32_t group);
void tss_ckpt_file_record(tss_ckpt_file *cf, const void *rec, size_t n);
/* The record count, length and CRC; flushes. 0, or -1 when a write failed. */
int tss_ckpt_file_end(tss_ckpt_file *cf);

/* Restoring from several files: tss_restore_read each (their streams are kept aside;
 * a refused file's are dropped, the others stay), then tss_restore_finish keeps one
 * record of each stream (tss_load_report.duplicates: the rule) and hands them to the
 * engine in their creation order, the first max_streams of them (rep counts the
 * others); it fails only when out of memory. group: the file's group (TSS_CKPT_ALL: any); *count:
 * its records. */
typedef struct tss_restore tss_restore;
/* keep: the engine's max_streams (0: no limit): a restore holds about twice that many
 * streams at most, whatever the files hold. */
int tss_restore_new(size_t keep, tss_restore **out);
int tss_restore_read(tss_restore *rs, FILE *f, uint32_t group, uint32_t *count,
                     tss_load_report *rep, char *err, unsigned errlen);
int tss_restore_finish(tss_engine *e, tss_restore *rs, tss_load_report *rep, char *err,
                       unsigned errlen);
void tss_restore_destroy(tss_restore **self_p);

#endif
