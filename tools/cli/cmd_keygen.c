/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_keygen.c - `tsmine keygen NAME`: a new CURVE key pair for tsmined or one of its
 * clients, as NAME.key (public) and NAME.key_secret (secret, mode 0600), in the zcert
 * format lib/curve_key.h reads. */
#include "cli.h"
#include "commands.h"
#include "companion.h"
#include "lib/curve_key.h"
#include "lib/emit.h"

#include <stdio.h>
#include <sysexits.h>

static int run(const client_args *a) {
    tsm_curve_key k;
    char err[1024];
    int rc = tsm_curve_keygen(a->file, &k, err, sizeof err);
    if (rc != 0) {
        cli_error("keygen: %s", err);
        return rc == TSM_CURVE_KEY_EOPEN ? EX_CANTCREAT : EX_SOFTWARE;
    }
    char path[4200];
    printf("{\"public_key\":");
    emit_json_string(stdout, k.public_txt);
    snprintf(path, sizeof path, "%s.key", a->file);
    printf(",\"public_file\":");
    emit_json_string(stdout, path);
    snprintf(path, sizeof path, "%s.key_secret", a->file);
    printf(",\"secret_file\":");
    emit_json_string(stdout, path);
    printf("}\n");
    return fflush(stdout) == 0 ? 0 : EX_IOERR;
}

const client_command cmd_keygen = {
    .name = "keygen",
    .synopsis = "NAME",
    .summary = "make a CURVE key pair: NAME.key (public), NAME.key_secret",
    .description =
        "Writes a new CURVE key pair: NAME.key holds the public key, NAME.key_secret the\n"
        "public and the secret key (mode 0600), both in CZMQ's zcert text format (Z85\n"
        "keys). It never overwrites a file. Prints {\"public_key\":\"...\",\"public_file\":...,\n"
        "\"secret_file\":...}.\n\n"
        "For the daemon: `tsmine keygen /etc/tsmine/server`, then in tsmined.conf\n"
        "  security = { curve = { secret_key_file = \"/etc/tsmine/server.key_secret\";\n"
        "                         authorized_keys = \"/etc/tsmine/clients\"; }; };\n"
        "For each client: `tsmine keygen sensor-17`, copy sensor-17.key into the daemon's\n"
        "authorized_keys directory (then reload the daemon), and connect with\n"
        "  --curve-key sensor-17.key_secret --server-key server.key\n"
        "Exit status: 0, 64 usage, 73 a file exists or cannot be created, 74 output error.",
    .endpoint = NULL,
    .options = CLIENT_OPT_KEYGEN,
    .run = run,
};
