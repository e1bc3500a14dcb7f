/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_record.h - one stream's record in a checkpoint (internal): written and read
 * from one table of its parts (ckpt_record.c). checkpoint.c frames records into files;
 * ckpt_walk.c serialises the streams of the groups to write. */
#ifndef TSS_CKPT_RECORD_H
#define TSS_CKPT_RECORD_H

#include "ckpt_wire.h"
#include "stream.h"

/* The format written, and the oldest read (checkpoint.c says what changed). */
#define TSSI_CKPT_VERSION        6u
#define TSSI_CKPT_OLDEST_VERSION 4u

/* Serialises s's record (its creation index, then its state) into w, after what w
 * holds. Cost: a copy of the window and of the magnitude history (about 10 us at
 * W = 4096). */
void tssi_ckpt_record_put(tssi_ckbuf *w, const tss_stream *s);
/* Reads the record idx of a file of that group (TSS_CKPT_ALL: any) and version into a
 * new stream (*out), checking every field against the limits the engine keeps; 0, or
 * -1 with "checkpoint: stream IDX: what" in err. */
int tssi_ckpt_record_get(tssi_ckread *r, size_t idx, uint32_t group, uint32_t version,
                         tss_stream **out, char *err, unsigned errlen);

#endif
