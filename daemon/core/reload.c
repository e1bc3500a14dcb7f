/* SPDX-License-Identifier: Apache-2.0 */
/* reload.c - SIGHUP and the RELOAD control command: re-read the configuration file,
 * apply what can change live, report what needs a restart. */
#include "daemon/core/daemon.h"
#include "daemon/core/reload_status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The reload itself (tsd_daemon_reload): 0 or -1, msg says what happened. */
static int reload(tsd_daemon *d, char *msg, size_t msglen) {
    if (!d->config_path[0]) {
        snprintf(msg, msglen, "running on embedded defaults (no -c FILE): nothing to reload");
        tsd_log(TSD_LOG_NOTICE, "reload: %s", msg);
        return 0;
    }
    static tsc_config next; /* large (rules, endpoints): not on the stack */
    char err[TSC_ERROR_LEN];
    /* tsc_load refuses what is not a regular file (a directory, a FIFO) before libconfig
     * sees it: libconfig would exit(2) or block (config.h). */
    if (tsc_load(d->config_path, &next, err) != 0) {
        d->reload_failures++;
        snprintf(msg, msglen, "%s; keeping the running configuration", err);
        tsd_log(TSD_LOG_ERR, "reload: %s", msg);
        return -1;
    }
    /* The allow-list next (security.h): a directory that does not read as a complete
     * valid list refuses the whole reload, so the daemon keeps one consistent state. */
    char keys[1200] = "";
    if (d->sock.security && tsd_security_reload(d->sock.security, keys, sizeof keys) != 0) {
        d->reload_failures++;
        snprintf(msg, msglen, "%s; keeping the running configuration and allow-list", keys);
        tsd_log(TSD_LOG_ERR, "reload: %s", msg);
        return -1;
    }
    if (d->sock.security)
        tsd_security_set_stream_owners(d->sock.security, next.curve_stream_owners);
    char changes[2048];
    int restart = tsc_diff(&d->cfg, &next, changes, sizeof changes);
    tsc_keep_restart_keys(&next, &d->cfg);
    if (next.log_rate_per_s != d->cfg.log_rate_per_s) { /* live keys held outside cfg */
        tsd_ingest_set_log_rate(&d->ingest, next.log_rate_per_s);
        tsd_ratelimit_init(&d->control_limit, next.log_rate_per_s);
        tsd_ratelimit_init(&d->tick_limit, next.log_rate_per_s);
    }
    d->cfg = next;
    tsd_log_set_level(tsd_log_level_parse(d->cfg.log_level));
    const tss_limits limits = tsd_limits_of(&d->cfg);
    tss_engine_set_limits(d->engine, &limits);
    size_t reparam = tss_engine_reparam(d->engine);
    snprintf(msg, msglen, "%s%s; %zu streams took new parameters%s%s%s",
             changes[0] ? "changed: " : "no changes", changes, reparam,
             restart ? "; some changed keys take effect only after a restart" : "",
             keys[0] ? "; " : "", keys);
    tsd_log(restart ? TSD_LOG_WARNING : TSD_LOG_INFO, "reload: %s", msg);
    return 0;
}

int tsd_daemon_reload(tsd_daemon *d, char *msg, size_t msglen) {
    d->reloads++;
    const int rc = reload(d, msg, msglen);
    tsd_sources_reload(d->sources, d->nsources, &d->cfg); /* whatever became of the file */
    tsd_sinks_reload(d->sinks, d->nsinks, &d->cfg);
    d->last_reload_ok = rc == 0;
    d->last_reload_ns = tsd_realtime_ns();
    if (d->runtime_dir[0] && tsd_reload_status_write(d->runtime_dir, d->reloads, rc == 0, msg) != 0)
        tsd_log(TSD_LOG_WARNING, "reload: cannot write its outcome to %s/%s: %s", d->runtime_dir,
                TSD_RELOAD_STATUS_FILE, strerror(errno));
    return rc;
}
