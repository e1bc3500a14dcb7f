/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_shapelet.h - `tsmine shapelet train|predict|show` (cmd_shapelet.c). It has
 * subcommands of its own, so it is neither a cli_command nor a client_command:
 * tsmine.c hands it the arguments after "tsmine". */
#ifndef TSMINE_CMD_SHAPELET_H
#define TSMINE_CMD_SHAPELET_H

/* Runs `tsmine shapelet ...` with argv[0] = "shapelet"; returns the exit status. */
int shapelet_main(int argc, char **argv);

#endif
