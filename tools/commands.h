/* commands.h - the batch subcommands of `tsmine`, one cmd_NAME.c each. */
#ifndef TSMINE_COMMANDS_H
#define TSMINE_COMMANDS_H

#include "cli.h"

extern const cli_command cmd_discord;
extern const cli_command cmd_motif;
extern const cli_command cmd_profile;
extern const cli_command cmd_sets;

#endif
