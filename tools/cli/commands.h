/* SPDX-License-Identifier: Apache-2.0 */
/* commands.h - the subcommands of `tsmine`, one cmd_NAME.c each: the batch commands
 * (cli.h) and, when built with the daemon, its companions (companion.h). */
#ifndef TSMINE_COMMANDS_H
#define TSMINE_COMMANDS_H

#include "cli.h"

extern const cli_command cmd_discord;
extern const cli_command cmd_motif;
extern const cli_command cmd_profile;
extern const cli_command cmd_sets;

/* `tsmine score` (cmd_score.c) reads no series and has an option table of its own:
 * runs it with argv[0] = "score" and returns the exit status. */
int score_main(int argc, char **argv);

/* `tsmine plot` (cmd_plot.c): a picture of a series and its results; options of its own. */
int plot_main(int argc, char **argv);

#ifdef TSMINE_HAVE_DETECT
/* `tsmine detect` (cmd_detect.c): the stream engine over files; built with the daemon. */
int detect_main(int argc, char **argv);
#endif

#ifdef TSMINE_HAVE_CLIENT
#include "companion.h"

extern const client_command cmd_replay;
extern const client_command cmd_alerts;
extern const client_command cmd_status;
extern const client_command cmd_keygen;
extern const client_command cmd_counters;
extern const client_command cmd_reset;
extern const client_command cmd_delete;
extern const client_command cmd_recalibrate;
extern const client_command cmd_reload;
extern const client_command cmd_checkpoint;
#endif

#endif
