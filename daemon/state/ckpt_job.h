/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_job.h - checkpoints that hold the main loop for well under a millisecond
 * (issue 18 item 6).
 *
 * The state directory holds one file per group of streams (tss_ckpt_group,
 * tsd_ckpt_group_name), each written crash-safely on its own (temporary file, fsync,
 * rename; state_files.h). A checkpoint rewrites only the groups in which a stream
 * changed since its last checkpoint or which lost a stream, so an idle daemon writes
 * nothing. The main loop looks at the streams and serialises the changed ones in steps
 * of TSD_CKPT_STEP_S (tss_ckpt_walk) between its other work; a writer thread of its own
 * adds the CRC, writes, fsyncs and renames each group's file, and one fsync of the
 * directory ends the checkpoint. The queue between them is bounded (TSD_CKPT_QUEUE
 * bytes): the walk waits for the writer rather than copy every window at once.
 * Crash safety: each file is complete or absent under its final name; a crash
 * mid-checkpoint leaves some groups at this checkpoint and the others at the one before,
 * each stream's record consistent in itself (streams are independent). */
#ifndef TSD_CKPT_JOB_H
#define TSD_CKPT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The longest a step holds the main loop (plus one stream's record). */
#define TSD_CKPT_STEP_S 0.00025
/* Bytes of records waiting for the writer at most. */
#define TSD_CKPT_QUEUE (16u << 20)

/* What the checkpoints did (the metrics and the log show it). */
typedef struct {
    uint64_t done, failures;    /* checkpoints finished, and those of which a file failed */
    uint64_t bytes, files;      /* written in all (files: written or removed) */
    double last_duration_s;     /* the last one, from its start to its last fsync */
    double last_stall_s;        /* the time its steps held the main loop, in all */
    double last_max_step_s;     /* its longest step */
    double last_max_step_cpu_s; /* the most CPU time of one of its steps */
    uint64_t last_records;      /* streams it wrote */
    uint64_t last_bytes;        /* bytes of the files it wrote */
    int64_t last_success_ns;    /* CLOCK_REALTIME of the last one that wrote every file */
    /* the last one's streams whose state is not on disk: those of the groups whose file
     * failed (all it wrote when the directory's fsync failed); last_all_failed: every
     * stream (out of memory mid-walk) */
    uint64_t last_failed_streams;
    int last_all_failed;
} tsd_ckpt_stats;

typedef struct tsd_ckpt_job tsd_ckpt_job;

/* A job writing into dir; starts its writer thread. 0, or -1 with err. */
int tsd_ckpt_job_open(const char *dir, tsd_ckpt_job **out, char *err, size_t errlen);
/* Waits for the writer (the checkpoint in progress is finished only by
 * tsd_ckpt_job_run), stops it and frees everything. */
void tsd_ckpt_job_close(tsd_ckpt_job **self_p);
/* The streams the file of group g holds (after the restore at start; -1 unknown). */
void tsd_ckpt_job_set_disk(tsd_ckpt_job *j, unsigned g, int64_t count);
/* Whether a checkpoint is in progress. */
int tsd_ckpt_job_busy(const tsd_ckpt_job *j);
/* Starts a checkpoint unless one is in progress; 0, or -1 when out of memory. */
int tsd_ckpt_job_start(tsd_ckpt_job *j);
/* Moves the checkpoint in progress on by one step of the main loop (nothing without
 * one). Returns 1 when it has just ended (tsd_ckpt_job_result says how), else 0.
 * *wait_ms: how soon it wants the next step (0: at once; more while it waits for a
 * pass to be joined or for the writer). */
int tsd_ckpt_job_step(tsd_ckpt_job *j, tss_engine *e, long *wait_ms);
/* Finishes the checkpoint in progress, if any, then writes a new one, all at once
 * (joining passes in flight): for SIGTERM and fatal errors. 0, or -1 (err). */
int tsd_ckpt_job_run(tsd_ckpt_job *j, tss_engine *e, char *err, size_t errlen);
/* The last checkpoint's outcome: 0, or -1 with its first error in err. */
int tsd_ckpt_job_result(const tsd_ckpt_job *j, char *err, size_t errlen);
void tsd_ckpt_job_stats(const tsd_ckpt_job *j, tsd_ckpt_stats *out);

#endif
