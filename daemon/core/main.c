/* SPDX-License-Identifier: Apache-2.0 */
/* main.c - tsmined's command line: options, configuration, then the daemon. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "config.h"
#include "daemon/core/daemon.h"
#include "daemon/core/reload_status.h"
#include "daemon/core/signals.h"

#ifndef TSMINE_VERSION
#define TSMINE_VERSION "unknown"
#endif

static void usage(FILE *f) {
    fputs("Usage: tsmined [-c FILE] [--foreground] [--check-config [--quiet]]\n"
          "       tsmined --reload PID [--timeout-ms T]\n"
          "Streaming time-series anomaly and motif detector: takes SampleBatch messages\n"
          "over ZeroMQ, publishes alerts. See tsmined(8); clients: docs/protocol.md.\n"
          "\n"
          "  -c, --config FILE  read FILE (libconfig); without it the embedded defaults run\n"
          "                     on loopback and checkpoints go to $STATE_DIRECTORY or\n"
          "                     /var/lib/tsmine when writable, else are off (a warning)\n"
          "      --foreground   accepted for compatibility: tsmined never forks (systemd\n"
          "                     Type=notify supervises it in the foreground)\n"
          "      --check-config print the effective settings (or the error) and exit\n"
          "                     0, or 78 (EX_CONFIG) when the file is invalid; with\n"
          "      --quiet        only the error (systemd's ExecStartPre=)\n"
          "      --reload PID   send SIGHUP to the tsmined of process PID and wait for its\n"
          "                     outcome (systemd's ExecReload=): exit 0 when the new\n"
          "                     configuration was taken, 78 when it was refused (the old\n"
          "                     one runs on), 69 without an answer within T ms (60000);\n"
          "                     needs $RUNTIME_DIRECTORY (RuntimeDirectory=), where the\n"
          "                     daemon writes each reload's outcome\n"
          "  -h, --help         this text\n"
          "  -V, --version      version and the optional features built in\n"
          "\n"
          "Signals: SIGHUP reloads FILE (live keys apply, the rest is reported); SIGUSR1\n"
          "writes a checkpoint now; SIGTERM and SIGINT process what is queued (within a\n"
          "few seconds), checkpoint and exit.\n"
          "\n"
          "Exit status: 0 after SIGTERM/SIGINT; 74 (EX_IOERR) when that final checkpoint\n"
          "could not be written (the previous one is kept), or at start when the checkpoint\n"
          "exists but cannot be read (permission, I/O error, not a regular file: it is left\n"
          "in place, never overwritten); 73 (EX_CANTCREAT) when the state directory is not\n"
          "usable; 78 (EX_CONFIG) for an invalid configuration or key file; 69\n"
          "(EX_UNAVAILABLE) when a socket or the backend cannot be set up; 71 (EX_OSERR) when\n"
          "polling fails; 75 (EX_TEMPFAIL) after a sticky device error, checkpointed in both\n"
          "cases: restart it (systemd's Restart=on-failure does).\n",
          f);
}

static void version(void) {
    printf("tsmined %s (systemd: %s, metrics: %s, mqtt: %s)\n", TSMINE_VERSION,
#ifdef TSMINE_HAVE_SYSTEMD
           "yes",
#else
           "no",
#endif
#ifdef TSMINE_HAVE_METRICS
           "yes",
#else
           "no",
#endif
#ifdef TSMINE_HAVE_MQTT
           "yes"
#else
           "no"
#endif
    );
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"foreground", no_argument, NULL, 'f'},
        {"check-config", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"reload", required_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'},
        {"timeout-ms", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *reload_pid = NULL;
    int check = 0, quiet = 0, c;
    long timeout_ms = 60000;
    while ((c = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c': path = optarg; break;
        case 'f': break;
        case 'k': check = 1; break;
        case 'r': reload_pid = optarg; break;
        case 'q': quiet = 1; break;
        case 't': timeout_ms = strtol(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        case 'V': version(); return 0;
        default: usage(stderr); return EX_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tsmined: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return EX_USAGE;
    }

    if (reload_pid) {
        char *end;
        long pid = strtol(reload_pid, &end, 10);
        if (*end || pid <= 0) {
            fprintf(stderr, "tsmined: --reload: \"%s\" is not a process id\n", reload_pid);
            return EX_USAGE;
        }
        const char *rt = getenv("RUNTIME_DIRECTORY");
        char dir[512] = "";
        if (rt)
            snprintf(dir, sizeof dir, "%.*s", (int)strcspn(rt, ":"), rt);
        return tsd_reload_request((pid_t)pid, dir, timeout_ms > 0 ? timeout_ms : 60000);
    }

    static tsc_config cfg; /* large: not on the stack */
    char err[TSC_ERROR_LEN];
    tsc_defaults(&cfg);
    if (path && tsc_load(path, &cfg, err) != 0) {
        if (check)
            fprintf(stderr, "tsmined: %s\n", err);
        else
            tsd_log(TSD_LOG_ERR, "configuration: %s", err);
        return EX_CONFIG;
    }
    if (check) {
        if (!quiet)
            tsc_print(stdout, &cfg);
        return 0;
    }

    tsd_log(TSD_LOG_INFO, "tsmined %s starting (configuration: %s)", TSMINE_VERSION,
            path ? path : "embedded defaults");
    if (tsd_signals_install() != 0) {
        tsd_log(TSD_LOG_ERR, "cannot install signal handlers");
        return EX_OSERR;
    }
    static tsd_daemon d;
    int rc = tsd_daemon_open(&d, &cfg, path);
    if (rc != 0)
        return rc;
    rc = tsd_daemon_run(&d);
    tsd_daemon_close(&d);
    tsd_log(rc ? TSD_LOG_ERR : TSD_LOG_INFO, "tsmined exiting with status %d", rc);
    return rc;
}
