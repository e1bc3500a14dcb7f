/* SPDX-License-Identifier: Apache-2.0 */
/* checkpoint.c - tss_engine_save / tss_engine_load: every stream's state in a
 * versioned, checksummed binary file; restoring from several such files.
 *
 * Layout (integers little-endian):
 *   "TSSCKPT\0"  u32 version (6)  u32 group  payload  u64 payload length  u32 CRC-32
 *   (IEEE, of everything before it: magic, version, group and payload)
 * payload = the stream records (ckpt_record.c: their layout and checks), in creation
 * order, then u32 their count. Versions read: 6, 5 and 4 (ckpt_record.c says what each
 * lacks and how its streams restore); only version 6 is written. Versions: 2 added
 * events and calibrated scores (issue 16); 3 epochs and resets (17); 4 groups (18); 5
 * the magnitude view's history and the event peak's views (DESIGN 5.3 rev. 3); 6 the
 * last subsequence's score as the events follow it (the layout of 5).
 *
 * Loading reads the file once, incrementally (the memory it takes is that of the
 * streams it builds, whatever the file's size): the header (size, magic, version)
 * first, then each record as it comes, field by field, then the length and checksum,
 * which decide before any field error whether the file is corrupt; it builds the
 * streams aside and hands them to the engine only when all of them are good. */
#include "engine_checkpoint.h"
#include "ckpt_record.h"
#include "ckpt_wire.h"
#include "engine_impl.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC     "TSSCKPT"
#define MAGIC_LEN 8
#define HEAD_LEN  (MAGIC_LEN + 8) /* magic, version, group */
#define TAIL_LEN  (8 + 4)

/* ---- writing: files of records ------------------------------------------------- */

static void file_put(tss_ckpt_file *cf, const void *p, size_t n) {
    if (!cf->failed && n && fwrite(p, 1, n, cf->f) != n)
        cf->failed = 1;
    cf->crc = tssi_ck_crc(cf->crc, p, n);
    cf->len += n;
}

void tss_ckpt_file_begin(tss_ckpt_file *cf, FILE *f, uint32_t group) {
    *cf = (tss_ckpt_file){.f = f};
    tssi_ckbuf h = {0};
    tssi_ck_put_bytes(&h, MAGIC, MAGIC_LEN);
    tssi_ck_put(&h, TSSI_CKPT_VERSION, 4);
    tssi_ck_put(&h, group, 4);
    cf->failed = h.failed;
    file_put(cf, h.p, h.n);
    free(h.p);
}

void tss_ckpt_file_record(tss_ckpt_file *cf, const void *rec, size_t n) {
    file_put(cf, rec, n);
    cf->count++;
}

int tss_ckpt_file_end(tss_ckpt_file *cf) {
    unsigned char b[12];
    for (int k = 0; k < 4; k++)
        b[k] = (unsigned char)(cf->count >> (8 * k));
    file_put(cf, b, 4);
    const uint64_t payload = cf->len - HEAD_LEN;
    const uint32_t crc = cf->crc;
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)(payload >> (8 * k));
    for (int k = 0; k < 4; k++)
        b[8 + k] = (unsigned char)(crc >> (8 * k));
    file_put(cf, b, 12);
    return cf->failed || fflush(cf->f) != 0 || ferror(cf->f) ? -1 : 0;
}

int tss_engine_save(tss_engine *e, FILE *f, char *err, unsigned errlen) {
    /* the launch in flight (at most about TSS_PASS_BATCH_S) changes the published spans
     * and MOTIF pairs: it publishes first; streams waiting for their passes are
     * saved at their pass point, and wait again once loaded */
    tssi_engine_join(e, 1, NULL, 0);
    tss_ckpt_file cf;
    tss_ckpt_file_begin(&cf, f, TSS_CKPT_ALL);
    tssi_ckbuf w = {0};
    for (size_t k = 0; k < e->reg.n && !w.failed; k++) {
        w.n = 0;
        tssi_ckpt_record_put(&w, e->reg.list[k]);
        if (!w.failed)
            tss_ckpt_file_record(&cf, w.p, w.n);
    }
    free(w.p);
    if (w.failed) {
        tssi_say(err, errlen, "checkpoint: out of memory");
        return -1;
    }
    if (tss_ckpt_file_end(&cf) != 0) {
        tssi_say(err, errlen, "checkpoint: write failed");
        return -1;
    }
    return 0;
}

/* The bytes from f's position to its end (f must be seekable: a regular file or a
 * memory stream); -1 when it cannot tell. f is left where it was. */
static int64_t bytes_left(FILE *f) {
    off_t at = ftello(f), end;
    if (at < 0 || fseeko(f, 0, SEEK_END) != 0)
        return -1;
    end = ftello(f);
    if (fseeko(f, at, SEEK_SET) != 0 || end < at)
        return -1;
    return (int64_t)(end - at);
}

/* ---- restoring: files of records into streams aside, then into the engine -------- */

/* A stream read aside, with the file it came from. */
typedef struct {
    tss_stream *s;
    uint32_t file; /* the file's group (TSS_CKPT_ALL: a file of every stream) */
    uint64_t read; /* the order in which it was read, over every file */
} restored;

struct tss_restore {
    restored *r; /* read so far, every file; r->s->index: the saved creation order */
    size_t n, cap;
    uint64_t reads;       /* records read so far */
    size_t keep;          /* streams kept at most (the first in creation order) */
    size_t dropped;       /* beyond keep, dropped already */
    uint64_t first_index; /* the first of those, in creation order */
    char first_id[TSS_MAX_ID + 1];
};

int tss_restore_new(size_t keep, tss_restore **out) {
    *out = calloc(1, sizeof **out);
    if (*out)
        (*out)->keep = keep ? keep : SIZE_MAX;
    return *out ? 0 : -1;
}

/* Orders streams by their saved creation index. */
static int by_index(const void *a, const void *b) {
    const tss_stream *x = ((const restored *)a)->s, *y = ((const restored *)b)->s;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Keeps the first rs->keep of the streams rs->r[from..n) in creation order and drops
 * the others, counting them in *dropped (and the first of them in *first, *first_id),
 * so that a restore holds about twice max_streams streams at most, whatever the files
 * hold (issue 17 item 6: 8,000 streams restored into max_streams = 10 in 12 MB). */
static void trim(tss_restore *rs, size_t from, size_t *dropped, uint64_t *first, char *first_id) {
    if (rs->n - from <= rs->keep)
        return;
    qsort(rs->r + from, rs->n - from, sizeof *rs->r, by_index);
    for (size_t k = from + rs->keep; k < rs->n; k++) {
        if (!(*dropped)++ || rs->r[k].s->index < *first) {
            *first = rs->r[k].s->index;
            snprintf(first_id, TSS_MAX_ID + 1, "%s", rs->r[k].s->id);
        }
        tss_stream_destroy(&rs->r[k].s);
    }
    rs->n = from + rs->keep;
}

void tss_restore_destroy(tss_restore **self_p) {
    if (*self_p) {
        tss_restore *r = *self_p;
        for (size_t k = 0; k < r->n; k++)
            tss_stream_destroy(&r->r[k].s);
        free(r->r);
        free(r);
        *self_p = NULL;
    }
}

/* Reads the stream records of the payload (r: over the payload after the header) into
 * rs, checking each as it comes, up to the record count that ends the payload; 0, or -1
 * with a message (rs then holds the records of this file read so far: the caller
 * drops them). */
static int r_streams(tssi_ckread *r, uint32_t group, uint32_t version, tss_restore *rs,
                     uint32_t *count, tss_restore *drop, char *err, unsigned errlen) {
    const size_t from = rs->n;
    uint32_t k = 0;
    for (; tssi_ck_left(r) > 4; k++) {
        tss_stream *s = NULL;
        if (rs->n == rs->cap) {
            size_t cap = rs->cap ? 2 * rs->cap : 64;
            restored *p = realloc(rs->r, cap * sizeof *p);
            if (!p) {
                tssi_say(err, errlen, "checkpoint: out of memory");
                return -1;
            }
            rs->r = p, rs->cap = cap;
        }
        if (tssi_ckpt_record_get(r, k, group, version, &s, err, errlen) != 0)
            return -1;
        rs->r[rs->n++] = (restored){s, group, rs->reads++};
        if (rs->n - from >= 2 * rs->keep && rs->keep < SIZE_MAX / 4) /* the file's own */
            trim(rs, from, &drop->dropped, &drop->first_index, drop->first_id);
    }
    *count = (uint32_t)tssi_ck_get(r, 4);
    if (r->bad || *count != k) {
        tssi_say(err, errlen, "checkpoint: %u stream records, the file says %u", k, *count);
        return -1;
    }
    return 0;
}

/* One pass over the file: the header (magic, version, group) first, then the payload
 * read incrementally, each stream record checked as it comes, every byte into the CRC;
 * a refused field stops the parsing but not the reading, so that the checksum, checked
 * at the end with the length, still decides whether the file is corrupt (the message
 * says so) or well-formed with content this build refuses. */
int tss_restore_read(tss_restore *rs, FILE *f, uint32_t group, uint32_t *count,
                     tss_load_report *rep, char *err, unsigned errlen) {
    const size_t had = rs->n;
    uint32_t n = 0;
    if (count)
        *count = 0;
    const int64_t len = bytes_left(f);
    if (len < 0) {
        tssi_say(err, errlen, "checkpoint: cannot tell the size of the input (not a file?)");
        return -1;
    }
    unsigned char head[HEAD_LEN], tail[TAIL_LEN] = {0};
    size_t got = len >= HEAD_LEN ? fread(head, 1, HEAD_LEN, f) : 0;
    if (got < HEAD_LEN && ferror(f)) {
        rep->read_errno = errno ? errno : EIO;
        tssi_say(err, errlen, "checkpoint: reading: %s", strerror(rep->read_errno));
        return -1;
    }
    if (len < HEAD_LEN + 4 + TAIL_LEN || got < HEAD_LEN || memcmp(head, MAGIC, MAGIC_LEN) != 0) {
        tssi_say(err, errlen, "checkpoint: not a tsmine stream checkpoint (%lld bytes)",
                 (long long)len);
        return -1;
    }
    tssi_ckread hr = {.p = head + MAGIC_LEN, .n = 8};
    const uint32_t version = (uint32_t)tssi_ck_get(&hr, 4),
                   file_group = (uint32_t)tssi_ck_get(&hr, 4);
    if (version < TSSI_CKPT_OLDEST_VERSION || version > TSSI_CKPT_VERSION) {
        tssi_say(err, errlen, "checkpoint: version %u, this build reads versions %u to %u", version,
                 TSSI_CKPT_OLDEST_VERSION, TSSI_CKPT_VERSION);
        return -1;
    }
    tssi_ckread r = {
        .f = f, .left = (uint64_t)len - HEAD_LEN - TAIL_LEN, .crc = tssi_ck_crc(0, head, HEAD_LEN)};
    char why[512] = "";
    int rc = -1;
    tss_restore drop = {0}; /* what this file's records dropped beyond keep */
    if (file_group != group && !(group == TSS_CKPT_ALL && file_group < TSS_CKPT_GROUPS))
        tssi_say(why, sizeof why, "checkpoint: a file of group %u where group %u was expected",
                 file_group, group);
    else
        rc = r_streams(&r, file_group, version, rs, &n, &drop, why, sizeof why);
    if (rc != 0)
        tssi_ck_drain(&r);
    if (!r.read_errno && fread(tail, 1, TAIL_LEN, f) < TAIL_LEN)
        r.read_errno = ferror(f) ? (errno ? errno : EIO) : 0;
    tssi_ckread tr = {.p = tail, .n = TAIL_LEN};
    const uint64_t payload = tssi_ck_get(&tr, 8);
    const uint32_t crc = (uint32_t)tssi_ck_get(&tr, 4);
    free(r.buf);
    if (r.read_errno) {
        rep->read_errno = r.read_errno;
        tssi_say(err, errlen, "checkpoint: reading: %s", strerror(r.read_errno));
        rc = -1;
    } else if (payload != (uint64_t)len - HEAD_LEN - TAIL_LEN || r.crc != crc) {
        tssi_say(err, errlen, "checkpoint: length or checksum mismatch (truncated or corrupt)");
        rc = -1;
    } else if (rc != 0) {
        tssi_say(err, errlen, "%s", why[0] ? why : "checkpoint: truncated");
    }
    if (rc != 0) { /* nothing of this file is kept */
        while (rs->n > had)
            tss_stream_destroy(&rs->r[--rs->n].s);
        return -1;
    }
    if (count)
        *count = n;
    if (drop.dropped && (!rs->dropped || drop.first_index < rs->first_index)) {
        rs->first_index = drop.first_index;
        snprintf(rs->first_id, sizeof rs->first_id, "%s", drop.first_id);
    }
    rs->dropped += drop.dropped;
    trim(rs, 0, &rs->dropped, &rs->first_index, rs->first_id); /* with the other files' */
    return 0;
}

/* Hands the streams read (reg, emptied) to the engine: their staged samples and the
 * passes they were waiting for. 0, or -1 when out of memory. */
static int adopt(tss_engine *e, tss_registry *reg) {
    if (tssi_engine_reserve_dirty(e, reg->n) != 0 || tssi_engine_reserve_wait(e, reg->n) != 0)
        return -1;
    e->reg = *reg;
    *reg = (tss_registry){0};
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
        s->ckpt_mark = tss_stream_fingerprint(s); /* as on disk: not written again until it
                                                   * changes */
        tssi_engine_touch(e, s); /* idle from now: the time it was down does not count */
        size_t staged = tss_staging_pending(&s->stage);
        if (staged) {
            e->pending += staged;
            tssi_engine_mark_dirty(e, s);
        }
        /* saved at a pass point whose passes had not run: they run first */
        if (s->p.subsequence && s->ring.fill >= tss_stream_warm(s) && s->since_pass >= s->p.hop)
            e->wait[e->nwait++] = s, s->waiting = 1;
    }
    return 0;
}

/* Orders records by stream id, then by the order they were read. */
static int by_id(const void *a, const void *b) {
    const restored *x = a, *y = b;
    int c = strcmp(x->s->id, y->s->id);
    return c ? c : x->read < y->read ? -1 : x->read > y->read;
}

/* Whether record a is to be kept over record b of the same stream: the later epoch,
 * then the higher next_seq (the more samples taken), then the one read first (group
 * files are read before the file of every stream they replace). */
static int newer(const restored *a, const restored *b) {
    if (a->s->epoch != b->s->epoch)
        return a->s->epoch > b->s->epoch;
    if (a->s->next_seq != b->s->next_seq)
        return a->s->next_seq > b->s->next_seq;
    return a->read < b->read;
}

/* Keeps one record of each stream id (newer above) and drops the others, counting each
 * in rep (the first TSS_LOAD_DUPS_NOTED with their files). A stream saved twice (a
 * conversion from one file to groups cut short, a file written by hand) is never a
 * reason to lose the others. O(n log n). */
static void dedupe(tss_restore *rs, tss_load_report *rep) {
    if (rs->n < 2)
        return;
    qsort(rs->r, rs->n, sizeof *rs->r, by_id);
    size_t out = 0;
    for (size_t k = 0; k < rs->n;) {
        size_t end = k + 1, win = k;
        while (end < rs->n && strcmp(rs->r[end].s->id, rs->r[k].s->id) == 0) {
            if (newer(&rs->r[end], &rs->r[win]))
                win = end;
            end++;
        }
        for (size_t j = k; j < end; j++) {
            if (j == win)
                continue;
            if (rep->duplicates < TSS_LOAD_DUPS_NOTED) {
                tss_load_dup *d = &rep->dup[rep->duplicates];
                snprintf(d->id, sizeof d->id, "%s", rs->r[j].s->id);
                d->file = rs->r[j].file, d->kept_file = rs->r[win].file;
                d->epoch = rs->r[j].s->epoch, d->next_seq = rs->r[j].s->next_seq;
                d->kept_epoch = rs->r[win].s->epoch, d->kept_next_seq = rs->r[win].s->next_seq;
            }
            rep->duplicates++;
            tss_stream_destroy(&rs->r[j].s);
        }
        rs->r[out++] = rs->r[win];
        k = end;
    }
    rs->n = out;
}

int tss_restore_finish(tss_engine *e, tss_restore *rs, tss_load_report *rep, char *err,
                       unsigned errlen) {
    if (e->reg.n) {
        tssi_say(err, errlen, "checkpoint: the engine already has %zu streams", e->reg.n);
        return -1;
    }
    rep->duplicates = 0;
    dedupe(rs, rep);
    trim(rs, 0, &rs->dropped, &rs->first_index, rs->first_id);
    if (rs->n) /* (qsort of NULL: undefined, even for none) */
        qsort(rs->r, rs->n, sizeof *rs->r, by_index);
    rep->dropped = rs->dropped;
    snprintf(rep->first_dropped, sizeof rep->first_dropped, "%s", rs->first_id);
    const size_t keep = e->opt.max_streams;
    tss_registry reg = {0};
    int rc = 0;
    for (size_t k = 0; k < rs->n && rc == 0; k++) {
        tss_stream *s = rs->r[k].s;
        if (reg.n >= keep) {
            if (!rep->dropped++)
                snprintf(rep->first_dropped, sizeof rep->first_dropped, "%s", s->id);
            tss_stream_destroy(&rs->r[k].s);
        } else {
            /* strictly increasing, even from files of different histories: the walk
             * finds streams by index */
            const uint64_t index = reg.n && s->index < reg.created ? reg.created : s->index;
            if (tss_registry_add(&reg, s) != 0) {
                tssi_say(err, errlen, "checkpoint: out of memory");
                rc = -1;
                continue;
            }
            /* the saved creation index stays: the groups not rewritten since keep theirs,
             * and the next restore orders them all with those written after it */
            s->index = index;
            reg.created = index + 1; /* the largest so far (sorted) */
            rs->r[k].s = NULL;       /* the registry owns it */
        }
    }
    if (rc == 0 && adopt(e, &reg) != 0) {
        tssi_say(err, errlen, "checkpoint: out of memory");
        rc = -1;
    }
    if (rc != 0)
        rep->dropped = 0, rep->first_dropped[0] = '\0';
    tss_registry_free(&reg);
    size_t left = 0; /* what the registry did not take, for tss_restore_destroy */
    for (size_t k = 0; k < rs->n; k++)
        if (rs->r[k].s && rc != 0)
            rs->r[left++] = rs->r[k];
    rs->n = left;
    return rc;
}

int tss_engine_load(tss_engine *e, FILE *f, char *err, unsigned errlen) {
    return tss_engine_load_report(e, f, NULL, err, errlen);
}

int tss_engine_load_report(tss_engine *e, FILE *f, tss_load_report *rep, char *err,
                           unsigned errlen) {
    tss_load_report ignored;
    rep = rep ? rep : &ignored;
    *rep = (tss_load_report){0};
    if (e->reg.n) {
        tssi_say(err, errlen, "checkpoint: the engine already has %zu streams", e->reg.n);
        return -1;
    }
    tss_restore *rs;
    if (tss_restore_new(e->opt.max_streams, &rs) != 0) {
        tssi_say(err, errlen, "checkpoint: out of memory");
        return -1;
    }
    int rc = tss_restore_read(rs, f, TSS_CKPT_ALL, NULL, rep, err, errlen);
    if (rc == 0)
        rc = tss_restore_finish(e, rs, rep, err, errlen);
    tss_restore_destroy(&rs);
    return rc;
}
