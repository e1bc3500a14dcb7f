/* config_print.h - `tsmined --check-config`: the effective settings, one
 * "key = value;" line per key (dotted paths), every key shown, defaults included. */
#ifndef TSD_CONFIG_PRINT_H
#define TSD_CONFIG_PRINT_H

#include <stdio.h>

#include "config.h"

/* Writes every setting of cfg to f, walking config's settings table. */
void tsd_config_print(FILE *f, const tsc_config *cfg);

#endif
