/* SPDX-License-Identifier: Apache-2.0 */
/* alert_text.h - alerts, times and durations as a person reads them on a terminal:
 * what `tsmine alerts` prints with --format text (the default when its standard output
 * is a terminal) and what `tsmine status` uses for its table (issue 32). The machine
 * form of an alert stays alert_json.h's; nothing here is meant to be parsed.
 *
 * One alert is one line, in columns that line up from one alert to the next:
 *
 *   TIME                      STREAM       KIND          SCORE         WHAT
 *   2023-11-14T22:18:20.000Z  site/pump-7  ANOMALY       score 0.9991  event opens at #300..
 *
 * TIME is the timestamp of the alert's first sample (start_seq), in ISO 8601, UTC or
 * local time ("-" for a RESET, which carries none); STREAM the stream id, its column
 * as wide as the longest id seen so far; KIND the kind's proto name; SCORE the
 * calibrated score (blank where none applies: MOTIF, GAP, RESET); WHAT says in words
 * what happened, with sample numbers as "#N" and extents as "#A..#B" (both ends
 * included), and for the alerts that carry views (the scored kinds) the view behind
 * the score and each view's score that was computed:
 *
 *   ...; view magnitude (shape 0.4102, magnitude 0.9991, level 0.0000)
 *
 * A time span is
 * shown once the stream's sample period is known: from two alerts of the stream at
 * different samples (their timestamps over their sample numbers), so from a stream's
 * second alert on (a sender's timestamps are taken as evenly spaced). */
#ifndef TSMINE_ALERT_TEXT_H
#define TSMINE_ALERT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tsmine.pb-c.h"

/* Writes the ISO 8601 form of a timestamp (ns since the epoch) into buf (size len,
 * NUL-terminated when len > 0) with milliseconds: "2023-11-14T22:13:20.000Z" in UTC, or
 * "2023-11-14T17:13:20.000-05:00" in local time (TZ). Returns the length the whole
 * text needs, as snprintf does; the text is always 24 (UTC) or 29 (local) characters. */
size_t tsm_time_text(char *buf, size_t len, int64_t ns, int local);

/* Writes a duration in seconds as a person reads it: "0.25 s", "8.3 s", "42 s",
 * "5 min 3 s", "3 h 10 min", "2 d 4 h"; "-" when it is negative or not finite. Returns
 * the length the whole text needs. */
size_t tsm_duration_text(char *buf, size_t len, double seconds);

/* Writes s with every byte a terminal would act on (control bytes, DEL) as \xNN, so
 * that a stream id cannot move the cursor or change colours. Returns the length the
 * whole text needs. */
size_t tsm_term_safe(char *buf, size_t len, const char *s);

/* The columns s takes on a terminal: its UTF-8 characters (each one column wide). */
int tsm_text_columns(const char *s);

/* The state of a readable alert stream: the stream column's width so far and each
 * stream's sample period as its alerts show it. */
typedef struct tsm_alert_text tsm_alert_text;

/* A new one, times in UTC (local = 0) or local time. Returns NULL when out of memory. */
tsm_alert_text *tsm_alert_text_new(int local);

void tsm_alert_text_destroy(tsm_alert_text **self_p);

/* Writes the readable line of alert a (no newline) into buf (size len, NUL-terminated
 * when len > 0), its views included, and learns from it. Returns the length the whole
 * text needs, as snprintf does. O(length of the stream id) on average; the streams
 * remembered cost O(their ids) memory, up to 2^20 of them. */
size_t tsm_alert_text_line(tsm_alert_text *self, const Tsmine__V1__Alert *a, char *buf, size_t len);

#endif
