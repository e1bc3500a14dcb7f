/* checkpoint.c - tss_engine_save / tss_engine_load: every stream's state in a
 * versioned, checksummed binary file.
 *
 * Layout (integers little-endian, doubles as their IEEE-754 bits):
 *   "TSSCKPT\0"  u32 version (1)  payload  u64 payload length  u32 CRC-32 (IEEE, of
 *   everything before it: magic, version and payload)
 * payload = u32 stream count, then per stream, in creation order: id, parameters,
 * ingest state (next sequence number, last timestamp, epoch, a pending reset, recent
 * gaps), counters (by alert kind: TSS_ALERT_KINDS of them), window
 * (samples and timestamps), the m in force, the score history and the event state
 * (detect.h, calib.h), the published spans and MOTIF pairs, and the staged
 * samples and gap marks not yet processed.
 *
 * What is derived from the window (the online statistics and QT row) is not stored:
 * the first tick after a load rebuilds it exactly from the samples, so a checkpoint
 * does not depend on the backend or on the online code's internals, and hostile bytes
 * cannot plant an inconsistent state. Loading checks the framing first (size, magic,
 * version, length, checksum), then every field against the limits the engine itself
 * keeps (parameters valid, fill <= window, finite samples, an m the parameters allow,
 * bins on the grid and counts that add up, marks inside the staging, ...), builds the streams aside
 * and hands them to the engine only when all of them are good. */
#include "engine_impl.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC     "TSSCKPT"
#define MAGIC_LEN 8
#define VERSION   3u /* 2: events and calibrated scores (issue 16); 3: epochs, resets (17) */
#define HEAD_LEN  (MAGIC_LEN + 4)
#define TAIL_LEN  (8 + 4)

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320), continued from crc. Slicing-by-8: eight
 * bytes per step through eight tables (t[0] the classic byte table, t[k][i] the CRC
 * of byte i followed by k zero bytes), about 5x the byte-at-a-time loop: the CRC was
 * most of a checkpoint's cost (60% of 0.3 s for 1000 streams of 4096 samples). */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n) {
    static uint32_t t[8][256];
    static int ready; /* benign race: every thread computes the same tables */
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[0][i] = c;
        }
        for (int k = 1; k < 8; k++)
            for (int i = 0; i < 256; i++)
                t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
        ready = 1;
    }
    crc = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        crc ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^ t[5][(crc >> 16) & 0xff] ^
              t[4][crc >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    }
    for (; n > 0; p++, n--)
        crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- writing: a buffered stream that keeps the CRC and the length ---------------- */

typedef struct {
    FILE *f;
    uint32_t crc;
    uint64_t len;
    int failed;
    size_t n;
    unsigned char buf[1 << 16];
} writer;

static void w_flush(writer *w) {
    if (w->n && !w->failed && fwrite(w->buf, 1, w->n, w->f) != w->n)
        w->failed = 1;
    w->crc = crc32_update(w->crc, w->buf, w->n);
    w->len += w->n;
    w->n = 0;
}

static void w_bytes(writer *w, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n > 0) {
        if (w->n == sizeof w->buf)
            w_flush(w);
        size_t k = sizeof w->buf - w->n < n ? sizeof w->buf - w->n : n;
        memcpy(w->buf + w->n, b, k);
        w->n += k, b += k, n -= k;
    }
}

/* An unsigned integer of nbytes (1, 4 or 8), little-endian. */
static void w_uint(writer *w, uint64_t v, int nbytes) {
    unsigned char b[8];
    for (int k = 0; k < nbytes; k++)
        b[k] = (unsigned char)(v >> (8 * k));
    w_bytes(w, b, (size_t)nbytes);
}

static void w_u64(writer *w, uint64_t v) {
    w_uint(w, v, 8);
}

static void w_u32(writer *w, uint32_t v) {
    w_uint(w, v, 4);
}

static void w_u8(writer *w, unsigned v) {
    w_uint(w, v, 1);
}

static void w_f64(writer *w, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    w_u64(w, u);
}

static void w_params(writer *w, const tss_params *p) {
    w_u32(w, p->window);
    w_u32(w, p->subsequence);
    w_u32(w, p->hop);
    w_u32(w, p->excl);
    w_u32(w, p->warmup);
    w_f64(w, p->threshold);
    w_f64(w, p->threshold_end);
    w_f64(w, p->range);
    w_u8(w, (unsigned)p->motif);
    w_u32(w, p->references);
    w_u8(w, (unsigned)p->left_discord);
}

/* The score history, the open event and the published spans. */
static void w_detect(writer *w, const tss_detect *d) {
    const tss_calib *c = &d->cal;
    w_u32(w, c->n);
    w_u32(w, c->head);
    for (uint32_t k = 0; k < TSS_CALIB_HISTORY; k++)
        w_uint(w, c->ring[k], 2);
    w_f64(w, d->last_raw);
    w_u64(w, d->events);
    w_u8(w, (unsigned)d->open);
    w_u8(w, (unsigned)d->tail);
    w_u64(w, d->first);
    w_u64(w, d->last);
    w_u32(w, d->below);
    w_u64(w, d->peak.start_seq);
    w_u64(w, (uint64_t)d->peak.start_timestamp_ns);
    w_f64(w, d->peak.distance);
    w_u64(w, d->peak.neighbor_seq);
    w_f64(w, d->peak.score);
    w_u8(w, (unsigned)d->peak.tail);
    w_u64(w, d->npub);
    for (size_t k = 0; k < d->npub; k++) {
        w_u64(w, d->pub[k].a);
        w_u64(w, d->pub[k].b);
    }
}

static void w_stream(writer *w, const tss_stream *s) {
    size_t idlen = strlen(s->id);
    w_u32(w, (uint32_t)idlen);
    w_bytes(w, s->id, idlen);
    w_params(w, &s->cfg);
    w_u32(w, s->p.subsequence);
    w_u32(w, s->period);
    w_u32(w, s->next_check);
    /* ingest side */
    w_u8(w, (unsigned)s->started);
    w_u64(w, s->next_seq);
    w_u64(w, (uint64_t)s->last_ts);
    w_u64(w, s->epoch);
    w_u8(w, (unsigned)s->reset_pending);
    w_u32(w, s->ngaps);
    w_u32(w, s->gap_next);
    for (uint32_t g = 0; g < s->ngaps; g++) {
        w_u64(w, s->gap_lo[g]);
        w_u64(w, s->gap_hi[g]);
    }
    /* counters */
    w_u64(w, s->samples);
    w_u64(w, s->rejected);
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        w_u64(w, s->alerts[k]);
    w_u64(w, s->gaps);
    /* window */
    const tss_ring *r = &s->ring;
    w_u64(w, s->proc_seq);
    w_u64(w, s->since_pass);
    w_u32(w, r->fill);
    for (uint32_t k = 0, at = tss_ring_start(r); k < r->fill; k++) /* fill > 0: v is there */
        w_f64(w, r->v[at + k]);
    for (uint32_t k = r->fill; k > 0; k--)
        w_u64(w, (uint64_t)tss_ring_ts_back(r, k));
    /* detection */
    w_detect(w, &s->det);
    w_u64(w, s->det.nmotif);
    for (size_t k = 0; k < s->det.nmotif; k++) {
        w_u64(w, s->det.motif[k].a);
        w_u64(w, s->det.motif[k].b);
    }
    /* staging */
    const tss_staging *q = &s->stage;
    w_u64(w, tss_staging_pending(q));
    for (size_t k = q->head; k < q->n; k++)
        w_f64(w, q->v[k]);
    for (size_t k = q->head; k < q->n; k++)
        w_u64(w, (uint64_t)q->ts[k]);
    w_u64(w, q->nmark - q->mhead);
    for (size_t k = q->mhead; k < q->nmark; k++) {
        const tss_gap_mark *m = &q->mark[k];
        w_u64(w, m->seq);
        w_u64(w, m->expected);
        w_u64(w, m->missing);
        w_u64(w, (uint64_t)m->expected_ts);
        w_u64(w, m->at - q->head);
        w_u8(w, (unsigned)m->reset);
    }
}

int tss_engine_save(tss_engine *e, FILE *f, char *err, unsigned errlen) {
    /* the launch in flight (at most about TSS_PASS_BATCH_S) changes the published spans
     * and MOTIF pairs: it publishes first; streams waiting for their passes are
     * saved at their pass point, and wait again once loaded */
    tssi_engine_join(e, 1, NULL, 0);
    writer *w = calloc(1, sizeof *w);
    if (!w) {
        tssi_say(err, errlen, "checkpoint: out of memory");
        return -1;
    }
    w->f = f;
    w_bytes(w, MAGIC, MAGIC_LEN);
    w_u32(w, VERSION);
    w_u32(w, (uint32_t)e->reg.n);
    for (size_t k = 0; k < e->reg.n; k++)
        w_stream(w, e->reg.list[k]);
    w_flush(w);
    uint64_t payload = w->len - HEAD_LEN;
    uint32_t crc = w->crc;
    w_u64(w, payload);
    w_u32(w, crc);
    w_flush(w);
    int failed = w->failed || fflush(f) != 0 || ferror(f);
    free(w);
    if (failed) {
        tssi_say(err, errlen, "checkpoint: write failed");
        return -1;
    }
    return 0;
}

/* ---- reading: a bounds-checked cursor over the whole file ------------------------- */

typedef struct {
    const unsigned char *p;
    size_t n, at;
    int bad; /* a read went past the end */
} reader;

static const unsigned char *r_take(reader *r, size_t n) {
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *b = r->p + r->at;
    r->at += n;
    return b;
}

/* An unsigned integer of nbytes, little-endian; 0 past the end (r->bad is set). */
static uint64_t r_uint(reader *r, int nbytes) {
    const unsigned char *b = r_take(r, (size_t)nbytes);
    uint64_t v = 0;
    for (int k = 0; b && k < nbytes; k++)
        v |= (uint64_t)b[k] << (8 * k);
    return v;
}

static uint64_t r_u64(reader *r) {
    return r_uint(r, 8);
}

static uint32_t r_u32(reader *r) {
    return (uint32_t)r_uint(r, 4);
}

static unsigned r_u8(reader *r) {
    return (unsigned)r_uint(r, 1);
}

static double r_f64(reader *r) {
    uint64_t u = r_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Whether count items of size bytes can still be in the input (guards allocations). */
static int r_fits(const reader *r, uint64_t count, size_t size) {
    return !r->bad && count <= (r->n - r->at) / size;
}

/* Reads the whole file into memory; NULL with a message on failure. */
static unsigned char *slurp(FILE *f, size_t *len, char *err, unsigned errlen) {
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *nb = cap <= SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb, cap *= 2;
    }
    if (!b || ferror(f)) {
        free(b);
        tssi_say(err, errlen, "checkpoint: %s", b ? "read failed" : "out of memory");
        return NULL;
    }
    *len = n;
    return b;
}

/* Reads the score history, the open event and the published spans into s (whose m
 * is set); 0, or -1 with what is wrong in why. */
static int r_detect(reader *r, tss_stream *s, char *why, size_t whylen) {
    tss_detect *d = &s->det;
    tss_calib *c = &d->cal;
    c->n = r_u32(r);
    c->head = r_u32(r);
    int bad_bin = 0;
    for (uint32_t k = 0; k < TSS_CALIB_HISTORY; k++)
        bad_bin |= (c->ring[k] = (uint16_t)r_uint(r, 2)) >= TSS_CALIB_BINS;
    if (r->bad || c->n > TSS_CALIB_HISTORY || c->head >= TSS_CALIB_HISTORY ||
        (c->n < TSS_CALIB_HISTORY && c->head != c->n) || bad_bin ||
        (s->p.subsequence == 0 && c->n)) {
        snprintf(why, whylen, "bad score history");
        return -1;
    }
    tss_calib_rebuild(c);
    d->last_raw = r_f64(r);
    d->events = r_u64(r);
    d->open = (int)r_u8(r);
    d->tail = (int)r_u8(r);
    d->first = r_u64(r);
    d->last = r_u64(r);
    d->below = r_u32(r);
    tss_alert *pk = &d->peak;
    pk->kind = TSS_ALERT_ANOMALY;
    pk->start_seq = r_u64(r);
    pk->start_timestamp_ns = (int64_t)r_u64(r);
    pk->distance = r_f64(r);
    pk->neighbor_seq = r_u64(r);
    pk->score = r_f64(r);
    pk->tail = (int)r_u8(r);
    pk->length = s->p.subsequence;
    pk->threshold = isnan(s->p.range) ? s->p.threshold : s->p.range;
    if (r->bad || d->open > 1 || d->tail > TSS_TAIL_NEAR || pk->tail > TSS_TAIL_NEAR ||
        (d->open && (s->p.subsequence == 0 || d->first > d->last || d->last >= s->proc_seq ||
                     pk->start_seq < d->first || d->below > s->p.subsequence))) {
        snprintf(why, whylen, "bad event state");
        return -1;
    }
    uint64_t npub = r_u64(r);
    if (!r_fits(r, npub, 16)) {
        snprintf(why, whylen, "bad published span count %llu", (unsigned long long)npub);
        return -1;
    }
    for (uint64_t k = 0; k < npub; k++) {
        uint64_t a = r_u64(r), b = r_u64(r);
        if (a >= b || b > s->proc_seq || (k && a < d->pub[d->npub - 1].a)) {
            snprintf(why, whylen, "bad published span");
            return -1;
        }
        if (tss_detect_publish(d, a, b) != 0) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
    }
    return 0;
}

#define BAD(fmt, ...)                                                                              \
    do {                                                                                           \
        tssi_say(err, errlen, "checkpoint: stream %zu: " fmt, idx, ##__VA_ARGS__);                 \
        goto fail;                                                                                 \
    } while (0)

/* Reads one stream record into a new stream (*out); 0, or -1 with a message. */
static int r_stream(reader *r, size_t idx, tss_stream **out, char *err, unsigned errlen) {
    tss_stream *s = NULL;
    char id[TSS_MAX_ID + 1];
    uint32_t idlen = r_u32(r);
    const unsigned char *idb = idlen <= TSS_MAX_ID ? r_take(r, idlen) : NULL;
    if (!idb || idlen == 0)
        BAD("bad id length %u", idlen);
    for (uint32_t k = 0; k < idlen; k++)
        if (idb[k] < 0x20 || idb[k] > 0x7e)
            BAD("id is not printable");
    memcpy(id, idb, idlen);
    id[idlen] = '\0';

    tss_params p;
    p.window = r_u32(r);
    p.subsequence = r_u32(r);
    p.hop = r_u32(r);
    p.excl = r_u32(r);
    p.warmup = r_u32(r);
    p.threshold = r_f64(r);
    p.threshold_end = r_f64(r);
    p.range = r_f64(r);
    p.motif = (int)r_u8(r);
    p.references = r_u32(r);
    p.left_discord = (int)r_u8(r);
    uint32_t m = r_u32(r), period = r_u32(r), next_check = r_u32(r);
    char why[200];
    if (r->bad)
        BAD("truncated");
    if (tss_params_check(&p, why, sizeof why) != 0)
        BAD("%s", why);
    if (p.subsequence ? m != p.subsequence
                      : m != 0 && (m < TSS_AUTO_M_MIN || m > tss_params_auto_max(&p, p.window)) &&
                            m != TSS_AUTO_M_FALLBACK)
        BAD("subsequence %u in force does not fit the parameters", m);
    if (next_check > p.window || (next_check && (p.subsequence || !m || period)))
        BAD("bad automatic m state");
    if (tss_stream_new(id, &p, &s) != 0)
        BAD("out of memory");
    if (p.subsequence == 0 && m)
        tss_stream_set_m(s, m, period);
    s->next_check = next_check;

    s->started = (int)r_u8(r);
    s->next_seq = r_u64(r);
    s->last_ts = (int64_t)r_u64(r);
    s->epoch = r_u64(r);
    s->reset_pending = (int)r_u8(r);
    s->ngaps = r_u32(r);
    s->gap_next = r_u32(r);
    if (s->started > 1 || s->reset_pending > 1 || s->ngaps > TSS_GAPS_KEPT ||
        s->gap_next >= TSS_GAPS_KEPT || (s->ngaps < TSS_GAPS_KEPT && s->gap_next != s->ngaps))
        BAD("bad sequence state");
    for (uint32_t g = 0; g < s->ngaps; g++) {
        s->gap_lo[g] = r_u64(r);
        s->gap_hi[g] = r_u64(r);
        if (s->gap_lo[g] >= s->gap_hi[g] || s->gap_hi[g] > s->next_seq)
            BAD("bad gap %u", g);
    }
    s->samples = r_u64(r);
    s->rejected = r_u64(r);
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        s->alerts[k] = r_u64(r);
    s->gaps = r_u64(r);

    s->proc_seq = r_u64(r);
    s->since_pass = r_u64(r);
    uint32_t fill = r_u32(r);
    if (fill > p.window || fill > s->proc_seq || !r_fits(r, fill, 16))
        BAD("bad window (fill %u, window %u)", fill, p.window);
    if (fill && tss_ring_alloc(&s->ring) != 0)
        BAD("out of memory");
    const unsigned char *xb = r_take(r, 8 * (size_t)fill), *tb = r_take(r, 8 * (size_t)fill);
    reader xr = {xb, 8 * (size_t)fill, 0, 0}, tr = {tb, 8 * (size_t)fill, 0, 0};
    for (uint32_t k = 0; k < fill; k++) {
        double v = r_f64(&xr);
        if (!isfinite(v))
            BAD("non-finite sample in the window");
        tss_ring_push(&s->ring, v, (int64_t)r_u64(&tr));
    }

    if (r_detect(r, s, why, sizeof why) != 0)
        BAD("%s", why);
    uint64_t nmotif = r_u64(r);
    if (!r_fits(r, nmotif, 16))
        BAD("bad motif count %llu", (unsigned long long)nmotif);
    for (uint64_t k = 0; k < nmotif; k++) {
        uint64_t a = r_u64(r), b = r_u64(r);
        if (a >= b || b >= s->proc_seq)
            BAD("bad motif pair");
        if (tss_detect_motif_add(&s->det, a, b) != 0)
            BAD("out of memory");
    }

    uint64_t nst = r_u64(r);
    if (!r_fits(r, nst, 16) || tss_staging_reserve(&s->stage, nst, 0) != 0)
        BAD("bad staging size %llu", (unsigned long long)nst);
    const unsigned char *sv = r_take(r, 8 * nst), *sts = r_take(r, 8 * nst);
    reader vr = {sv, 8 * nst, 0, 0}, str = {sts, 8 * nst, 0, 0};
    for (uint64_t k = 0; k < nst; k++) {
        double v = r_f64(&vr);
        if (!isfinite(v))
            BAD("non-finite staged sample");
        tss_staging_push(&s->stage, v, (int64_t)r_u64(&str));
    }
    uint64_t nmk = r_u64(r);
    if (!r_fits(r, nmk, 41) || nmk > nst || tss_staging_reserve(&s->stage, 0, nmk) != 0)
        BAD("bad gap mark count");
    for (uint64_t k = 0; k < nmk; k++) {
        tss_gap_mark m;
        m.seq = r_u64(r);
        m.expected = r_u64(r);
        m.missing = r_u64(r);
        m.expected_ts = (int64_t)r_u64(r);
        m.at = r_u64(r);
        m.reset = (int)r_u8(r);
        if (m.at >= nst || (k && m.at <= s->stage.mark[k - 1].at) || m.reset > 1 ||
            (m.reset ? m.missing != 0 : m.expected >= m.seq || m.missing != m.seq - m.expected))
            BAD("bad gap mark");
        s->stage.mark[s->stage.nmark++] = m;
    }
    if (r->bad)
        BAD("truncated");
    *out = s;
    return 0;
fail:
    tss_stream_destroy(&s);
    return -1;
}
#undef BAD

int tss_engine_load(tss_engine *e, FILE *f, char *err, unsigned errlen) {
    if (e->reg.n) {
        tssi_say(err, errlen, "checkpoint: the engine already has %zu streams", e->reg.n);
        return -1;
    }
    size_t len = 0;
    unsigned char *buf = slurp(f, &len, err, errlen);
    if (!buf)
        return -1;
    tss_registry reg = {0};
    int rc = -1;
    if (len < HEAD_LEN + 4 + TAIL_LEN || memcmp(buf, MAGIC, MAGIC_LEN) != 0) {
        tssi_say(err, errlen, "checkpoint: not a tsmine stream checkpoint (%zu bytes)", len);
        goto done;
    }
    reader hr = {buf + MAGIC_LEN, 4, 0, 0}, tr = {buf + len - TAIL_LEN, TAIL_LEN, 0, 0};
    uint32_t version = r_u32(&hr);
    uint64_t payload = r_u64(&tr);
    uint32_t crc = r_u32(&tr);
    if (version != VERSION) {
        tssi_say(err, errlen, "checkpoint: version %u, this build reads version %u", version,
                 VERSION);
        goto done;
    }
    if (payload != len - HEAD_LEN - TAIL_LEN || crc32_update(0, buf, len - TAIL_LEN) != crc) {
        tssi_say(err, errlen, "checkpoint: length or checksum mismatch (truncated or corrupt)");
        goto done;
    }
    reader r = {buf + HEAD_LEN, (size_t)payload, 0, 0};
    uint32_t count = r_u32(&r);
    if (count > e->opt.max_streams || !r_fits(&r, count, 8)) {
        tssi_say(err, errlen, "checkpoint: %u streams (limit %u)", count, e->opt.max_streams);
        goto done;
    }
    for (uint32_t k = 0; k < count; k++) {
        tss_stream *s = NULL;
        if (r_stream(&r, k, &s, err, errlen) != 0)
            goto done;
        if (tss_registry_find(&reg, s->id) || tss_registry_add(&reg, s) != 0) {
            tssi_say(err, errlen, "checkpoint: stream %u: duplicate id or out of memory", k);
            tss_stream_destroy(&s);
            goto done;
        }
    }
    if (r.at != r.n) {
        tssi_say(err, errlen, "checkpoint: %zu stray bytes after the streams", r.n - r.at);
        goto done;
    }
    if (tssi_engine_reserve_dirty(e, reg.n) != 0 || tssi_engine_reserve_wait(e, reg.n) != 0) {
        tssi_say(err, errlen, "checkpoint: out of memory");
        goto done;
    }
    e->reg = reg;
    reg = (tss_registry){0};
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
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
    rc = 0;
done:
    tss_registry_free(&reg);
    free(buf);
    return rc;
}
