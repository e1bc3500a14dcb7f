/* SPDX-License-Identifier: Apache-2.0 */
/* params.h - the detection parameters of one stream (DESIGN.md 5.3, 5.4). The
 * configuration layer fills them (streams.default and per-stream overrides); the
 * engine takes them as they are once tss_params_check accepts them. */
#ifndef TSS_PARAMS_H
#define TSS_PARAMS_H

#include <stdint.h>

typedef struct {
    uint32_t window;      /* W: samples kept per stream (default 4096) */
    uint32_t subsequence; /* m; 0 = auto (default): the period of the warm-up history,
                           * else TSS_AUTO_M_FALLBACK until the window, as it doubles,
                           * shows one (tss_stream_choose_m) */
    uint32_t hop;         /* a windowed pass every hop samples (default 1024); 1 <= hop <= W */
    uint32_t excl;        /* exclusion zone; 0 means m (default) */
    uint32_t warmup;      /* samples a (re)started window holds before it scores (300) */
    double threshold;     /* score that opens an ANOMALY event and passes a DISCORD (0.997) */
    double threshold_end; /* an event stays open while the score is >= this (0.98) */
    double range;         /* NAN: scores decide (default); a distance >= 0: an absolute
                           * override, raw distances >= range open events instead */
    int motif;            /* run the MK pass and publish MOTIF alerts (default 1) */
    uint32_t references;  /* MK reference subsequences (default 10) */
    int left_discord;     /* publish LEFT_DISCORD alerts online (default 0: diagnosis) */
} tss_params;

/* subsequence = auto: the range of periods looked for, and m when there is none. */
#define TSS_AUTO_M_MIN      8
#define TSS_AUTO_M_FALLBACK 16
/* The least autocorrelation at a period found on a second look (tss_stream_choose_m). */
#define TSS_AUTO_M_RECHECK_ACF 0.6
/* The least warmup with subsequence = auto (three periods of TSS_AUTO_M_MIN). */
#define TSS_AUTO_WARMUP_MIN 24

/* Largest window accepted (samples per stream), so that sizes stay far from overflow. */
#define TSS_WINDOW_MAX (1u << 24)
/* Largest number of MK references accepted (0 means the kernel's default, 10). */
#define TSS_REFERENCES_MAX 1024u

/* The defaults above. */
tss_params tss_params_default(void);

/* 0 when p is usable, else -1 with a message naming the field in err (size errlen),
 * e.g. "window must be >= 2 * subsequence (window 100, subsequence 64)". */
int tss_params_check(const tss_params *p, char *err, unsigned errlen);

/* The fields a user set (in a configuration group), for tss_params_fit; the other
 * fields hold their defaults. */
enum {
    TSS_SET_WINDOW = 1u << 0,
    TSS_SET_SUBSEQUENCE = 1u << 1, /* "auto" given explicitly is set too */
    TSS_SET_HOP = 1u << 2,
    TSS_SET_EXCL = 1u << 3,
    TSS_SET_WARMUP = 1u << 4,
    TSS_SET_THRESHOLD = 1u << 5,
    TSS_SET_THRESHOLD_END = 1u << 6,
};

/* Defaults that adapt instead of refusing (DESIGN 5.3): moves each default that set
 * does not mark to the value nearest it that the set fields allow, so that
 * tss_params_check can only fail on a conflict between set fields (or a set field
 * out of its bounds). The rule, field by field, in this order:
 *  - window grows to hold what is set: 2 subsequence, warmup, hop, and excl plus the
 *    subsequence (auto: the longest period it may choose), at most TSS_WINDOW_MAX;
 *  - warmup at most window;
 *  - subsequence stays auto where the window (>= 2 TSS_AUTO_M_FALLBACK), a set warmup
 *    (>= TSS_AUTO_WARMUP_MIN) and a set excl leave auto room, else it is fixed at
 *    TSS_AUTO_M_FALLBACK, at most window / 2 and window - excl (auto when that is < 3);
 *    an unset warmup is then at least TSS_AUTO_WARMUP_MIN with auto;
 *  - hop at most window;
 *  - threshold at least threshold_end, threshold_end at most threshold.
 * excl (0: m), range, motif, references and left_discord conflict with nothing. O(1). */
void tss_params_fit(tss_params *p, unsigned set);

/* The exclusion zone in force for subsequence length m: excl, or m when excl is 0. */
uint32_t tss_params_excl(const tss_params *p, uint32_t m);
/* The samples a window holds before it scores, for subsequence length m:
 * max(warmup, 2 m). */
uint32_t tss_params_warm(const tss_params *p, uint32_t m);
/* The largest period subsequence = auto looks for in n samples of history: n / 3 (three
 * periods in view), at most W / 8 (a window of eight subsequences), at least
 * TSS_AUTO_M_MIN. */
uint32_t tss_params_auto_max(const tss_params *p, uint64_t n);

#endif
