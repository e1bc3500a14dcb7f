/* params.h - the detection parameters of one stream (DESIGN.md 5.3, 5.4). The
 * configuration layer fills them (streams.default and per-stream overrides); the
 * engine takes them as they are once tss_params_check accepts them. */
#ifndef TSS_PARAMS_H
#define TSS_PARAMS_H

#include <stdint.h>

typedef struct {
    uint32_t window;      /* W: samples kept per stream (default 4096) */
    uint32_t subsequence; /* m (default 128); 3 <= m and 2m <= W */
    uint32_t hop;         /* a windowed pass every hop samples (default 1024); 1 <= hop <= W */
    uint32_t excl;        /* exclusion zone; 0 means m (default) */
    double range;         /* r >= 0; NAN means `auto` (default) */
    double range_margin;  /* auto: r = largest nn of the warm-up window * (1 + margin) (0.1) */
    int motif;            /* run the MK pass and publish MOTIF alerts (default 1) */
    uint32_t references;  /* MK reference subsequences (default 10) */
    int left_discord;     /* publish LEFT_DISCORD alerts online (default 1) */
} tss_params;

/* Largest window accepted (samples per stream), so that sizes stay far from overflow. */
#define TSS_WINDOW_MAX (1u << 24)
/* Largest number of MK references accepted (0 means the kernel's default, 10). */
#define TSS_REFERENCES_MAX 1024u

/* The defaults above. */
tss_params tss_params_default(void);

/* 0 when p is usable, else -1 with a message naming the field in err (size errlen),
 * e.g. "window must be >= 2 * subsequence (window 100, subsequence 64)". */
int tss_params_check(const tss_params *p, char *err, unsigned errlen);

/* The exclusion zone in force: excl, or m when excl is 0. */
uint32_t tss_params_excl(const tss_params *p);

#endif
