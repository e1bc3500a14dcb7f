/* SPDX-License-Identifier: Apache-2.0 */
/* settings.h - the declarative table of tsmined's settings (internal to config/).
 *
 * One row per key: its path, type, where it lives in the struct, bounds, default,
 * validator and whether a change needs a restart (STYLE.md "Configuration"). The
 * defaults (tsc_defaults), the parser (load.c) and the reload diff (tsc_diff) all walk
 * these tables, so a key is added in one place. */
#ifndef TSC_SETTINGS_H
#define TSC_SETTINGS_H

#include <stddef.h>

#include "config.h"

typedef enum {
    TSCI_STRING,   /* char[size]; the validator, if any, decides what is allowed */
    TSCI_STRINGS,  /* char[max][size] plus a size_t count at count_offset */
    TSCI_INT,      /* int */
    TSCI_U32,      /* uint32_t */
    TSCI_U64,      /* uint64_t */
    TSCI_DOUBLE,   /* double */
    TSCI_RANGE,    /* double: a number >= 0, or the string "auto" (stored as NAN) */
    TSCI_U32_AUTO, /* uint32_t: an integer in [min, max], or the string "auto" (stored as 0) */
    TSCI_BOOL,     /* int, 0 or 1 */
    TSCI_STREAMS,  /* the streams group: default params and the overrides (load.c) */
} tsci_type;

/* Checks a string value; returns 0, or -1 with what is wrong in why (e.g. "must
 * start with tcp://, ipc:// or inproc://"). */
typedef int (*tsci_check_fn)(const char *value, char *why, size_t whylen);

typedef struct {
    const char *path; /* "limits.max_streams"; in the stream table "window" */
    tsci_type type;
    size_t offset;       /* into tsc_config, or into tss_params for the stream table */
    size_t size;         /* strings: bytes of one string */
    size_t count_offset; /* TSCI_STRINGS: the size_t that counts them */
    double min, max;     /* numbers: inclusive bounds; TSCI_STRINGS: count bounds */
    double def_num;      /* default of a number */
    const char *def_str; /* default of a string (TSCI_STRINGS: one entry, or "" for none) */
    tsci_check_fn check; /* strings: validator, or NULL */
    int restart;         /* 1: a changed value only takes effect after a restart */
} tsci_setting;

/* The top-level keys, and the keys of streams.default and of each override (whose
 * defaults are tss_params_default()). Each ends with a row whose path is NULL. */
extern const tsci_setting tsci_settings[];
extern const tsci_setting tsci_stream_settings[];

/* The row for path, or NULL. O(rows). */
const tsci_setting *tsci_find(const tsci_setting *table, const char *path);

/* 1 when path names a group of table (some row's path starts with "path."). */
int tsci_is_group(const tsci_setting *table, const char *path);

/* Writes into out the keys directly under group prefix ("" = the top level), comma
 * separated, for "unknown key" messages. */
void tsci_known_keys(const tsci_setting *table, const char *prefix, char *out, size_t outlen);

#endif
