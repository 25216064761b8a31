/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spawn-site priorities in the interception library (predict.h): the
 * road from a spawn to its prediction, and from a reaped child to its
 * site's history.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "intercept.h"
#include "predict.h"
#include "route.h"
#include "site.h"
#include "sites.h"

/* Set in the constructor, never written after: a vfork child reads it. */
static struct {
    struct priority_config cfg;
    int on;
    char act[3][24];        /* what each verdict does, for PSPAWN_DEBUG */
} state;

void predict_init(void)
{
    const char *why = NULL;
    priority_config_from_env(&state.cfg, route_table ? route_table->base_nice : 0);
    if (state.cfg.mode == PRIORITY_OFF)
        return;
    char *act_short = state.act[VERDICT_SHORT], *act_long = state.act[VERDICT_LONG];
    size_t len = sizeof state.act[0];
    snprintf(act_short, len, "left as it is");
    if (state.cfg.mode == PRIORITY_NICE) {
        snprintf(act_long, len, "nice +%d", state.cfg.nice);
    } else if (state.cfg.mode == PRIORITY_BATCH) {
        snprintf(act_long, len, "SCHED_BATCH");
    } else {
        snprintf(act_short, len, "slice %llu us", PRIORITY_SLICE_SHORT_NS / 1000);
        snprintf(act_long, len, "slice %llu us", PRIORITY_SLICE_LONG_NS / 1000);
    }
    if (!route_table)
        why = "no scope table";
    else if (site_init() < 0)
        why = "no /proc/self/exe";
    else if (sites_open(&why) == 0)
        state.on = 1;
    children_init();
    if (why)
        intercept_say("spawn-site priorities off: %s%s%s", sites_path(),
                      *sites_path() ? ": " : "", why);
}

int predict_on(void)
{
    return state.on;
}

/* SITE's verdict from its history. */
static enum priority_verdict verdict_of(uint64_t site)
{
    unsigned count;
    uint64_t mean_us;
    if (sites_lookup(site, &count, &mean_us) < 0)
        return VERDICT_NONE;
    enum priority_verdict v = mean_us * 1000 >= state.cfg.long_ns ? VERDICT_LONG : VERDICT_SHORT;
    intercept_say("site %016llx predicted %s (mean %llu ms over %u): %s",
                  (unsigned long long)site, v == VERDICT_LONG ? "long" : "short",
                  (unsigned long long)(mean_us / 1000), count, state.act[v]);
    return v;
}

void predict_exec(const void *ret, const char *path, char *const argv[],
                  struct child_mark *mark)
{
    *mark = (struct child_mark){ -1, -1 };
    uint64_t site = state.on ? site_of(ret, path, argv) : 0;
    if (!site)
        return;
    enum priority_verdict v = verdict_of(site);
    int had = children_register(0, site, v, mark);
    intercept_say("site %016llx: exec of %s", (unsigned long long)site, path);
    /* Its launcher's spawn, or an earlier exec, decided already. */
    if (had <= 0)
        priority_apply(0, &state.cfg, v);
}

void predict_exec_failed(const struct child_mark *mark)
{
    int saved = errno;  /* exec's, for its caller */
    children_undo(mark);
    errno = saved;
}

uint64_t predict_spawn(const void *ret, const char *path, char *const argv[],
                       enum priority_verdict *verdict)
{
    uint64_t site = state.on ? site_of(ret, path, argv) : 0;
    *verdict = site ? verdict_of(site) : VERDICT_NONE;
    return site;
}

void predict_spawned(pid_t pid, uint64_t site, enum priority_verdict verdict, int routed)
{
    if (!site || pid <= 0)
        return;
    int saved = errno;
    struct child_mark mark;
    int had = children_register(pid, site, verdict, &mark);
    intercept_say("site %016llx: spawned %d", (unsigned long long)site, (int)pid);
    if (had <= 0 && !routed)
        priority_apply(pid, &state.cfg, verdict);
    /* Another thread of ours may have reaped it already, unmeasured. */
    if (syscall(SYS_kill, pid, 0) < 0 && errno == ESRCH)
        children_undo(&mark);
    errno = saved;
}

void predict_reaped(pid_t pid)
{
    uint64_t site[2], start;
    if (!state.on || children_take(pid, site, &start) < 0)
        return;
    uint64_t now = children_now(), run_us = now > start ? (now - start) / 1000 : 0;
    for (int k = 0; k < 2 && site[k]; k++) {
        uint64_t mean_us;
        unsigned count;
        if (sites_record(site[k], run_us, &mean_us, &count) == 0)
            intercept_say("site %016llx: child %d ran %llu ms; mean %llu ms over %u",
                          (unsigned long long)site[k], (int)pid,
                          (unsigned long long)(run_us / 1000),
                          (unsigned long long)(mean_us / 1000), count);
    }
}
