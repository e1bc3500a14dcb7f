/* SPDX-License-Identifier: Apache-2.0 */
/* online_slices.h - how the CUDA backend of the online left-NN (online.cu) cuts a
 * call into passes, slices and chunks, on the host: plain C, so that the CPU tests
 * check it too (tests/online_test.c). Internal (ob_ names, static functions).
 *
 * A pass takes at most OB_PASS new samples of every job (a job with more is advanced
 * over the samples done and goes again in the next pass, so a pass holds at most one
 * exact refresh of the QT row); a slice is a run of a pass's jobs whose chunk rows
 * fit OB_ROWS_BYTES (at least one job); a chunk is one thread block of the rows
 * launch, up to chunks_of(nnew) per job. The slices' jobs, row offsets and chunk
 * tables go into one buffer at the offsets plan_slices chose (host and device
 * alike). */
#ifndef TSM_ONLINE_SLICES_H
#define TSM_ONLINE_SLICES_H

#include "dot.h" /* TSM_QT_REFRESH */
#include "online.h"

#include <stddef.h>
#include <stdint.h>

#define OB_C          128            /* rows per chunk (one block): divides OB_PASS */
#define OB_PASS       TSM_QT_REFRESH /* new samples per job and pass: one exact row at most */
#define OB_ROWS_BYTES (256ull << 20) /* chunk rows of one slice */

/* A block of the rows launch: job q's chunk c. */
typedef struct {
    uint32_t q, c;
} ob_chunk;

/* Where job n of a slice keeps its chunk rows (in doubles from the rows' start), and
 * the index of its pass's x[0] in the job's own x (added to the neighbours found). */
typedef struct {
    uint64_t row;
    int64_t shift;
} ob_place;

/* One slice of one pass: n jobs (advanced), their chunks; byte offsets into the
 * call's scratch (host and device alike). */
typedef struct {
    size_t at_jobs, at_off, at_chunks, n, nchunks;
} ob_slice;

static inline size_t ob_align(size_t b) {
    return (b + 255) & ~(size_t)255;
}

/* Job jb after `done` of its new samples: the window moved on over them. */
static inline tsm_online_job advance(const tsm_online_job *jb, uint32_t done) {
    tsm_online_job a = *jb;
    const uint64_t f = (uint64_t)jb->fill + done;
    const uint32_t fill = f < jb->window ? (uint32_t)f : jb->window;
    a.pos0 = (uint32_t)((jb->pos0 + (f - fill)) % jb->cap);
    a.fill = fill;
    a.nn += done, a.nn_index += done;
    if (a.mag)
        a.mag += done, a.mag_index += done;
    a.nnew = jb->nnew - done < OB_PASS ? jb->nnew - done : OB_PASS;
    return a;
}

/* Chunks of a job with nnew new samples in a pass, at most: the direct rows fall every
 * OB_C rows, plus one at the exact refresh (its period is not a multiple of OB_C),
 * plus chunk 0. */
static inline size_t chunks_of(uint32_t nnew) {
    return (nnew + OB_C - 1) / OB_C + 2;
}

static inline size_t row_bytes(const tsm_online_job *jb) {
    return chunks_of(jb->nnew) * ((size_t)jb->window - jb->m + 1) * sizeof(double);
}

/* Cuts the call into passes and slices (sl: room for njobs * passes entries) and
 * returns how many; *bytes: the layout's size, *maxrows: the largest slice's rows. */
static inline size_t plan_slices(const tsm_online_job *jobs, size_t njobs, ob_slice *sl,
                                 size_t *bytes, size_t *maxrows, size_t *maxjobs) {
    size_t ns = 0, at = 0;
    *maxrows = *maxjobs = 0;
    for (uint32_t done = 0;; done += OB_PASS) {
        size_t q = 0, any = 0;
        while (q < njobs) {
            ob_slice s = {0, 0, 0, 0, 0};
            size_t rb = 0;
            for (; q < njobs; q++) {
                if (done && jobs[q].nnew <= done)
                    continue;
                const tsm_online_job a = advance(&jobs[q], done);
                if (s.n && rb + row_bytes(&a) > OB_ROWS_BYTES)
                    break;
                s.n++, s.nchunks += chunks_of(a.nnew), rb += row_bytes(&a);
            }
            if (s.n == 0)
                break;
            s.at_jobs = at, at += ob_align(s.n * sizeof(tsm_online_job));
            s.at_off = at, at += ob_align(s.n * sizeof(ob_place));
            s.at_chunks = at, at += ob_align((s.nchunks ? s.nchunks : 1) * sizeof(ob_chunk));
            *maxrows = rb > *maxrows ? rb : *maxrows;
            *maxjobs = s.n > *maxjobs ? s.n : *maxjobs;
            sl[ns++] = s, any = 1;
        }
        if (!any)
            break;
    }
    *bytes = at;
    return ns;
}

/* Fills the host side of the slices in the order plan_slices cut them. */
static inline void fill_slices(const tsm_online_job *jobs, size_t njobs, const ob_slice *sl,
                               size_t ns, unsigned char *h) {
    size_t s = 0, q = 0;
    uint32_t done = 0;
    for (; s < ns; s++) {
        tsm_online_job *jj = (tsm_online_job *)(h + sl[s].at_jobs);
        ob_place *off = (ob_place *)(h + sl[s].at_off);
        uint64_t o = 0;
        ob_chunk *ch = (ob_chunk *)(h + sl[s].at_chunks);
        size_t n = 0, c = 0;
        while (n < sl[s].n) {
            if (q == njobs)
                q = 0, done += OB_PASS; /* the next pass */
            if (!(done && jobs[q].nnew <= done)) {
                jj[n] = advance(&jobs[q], done);
                off[n].row = o;
                off[n].shift = (int64_t)jobs[q].fill + done - jj[n].fill;
                o += row_bytes(&jj[n]) / sizeof(double);
                for (uint32_t k = 0; k < chunks_of(jj[n].nnew); k++)
                    ch[c++] = (ob_chunk){(uint32_t)n, k};
                n++;
            }
            q++;
        }
    }
}

#endif
