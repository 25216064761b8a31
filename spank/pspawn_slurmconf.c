/* SPDX-License-Identifier: BSD-3-Clause */
/* The site's configuration as the plugin sees it: plugstack.conf's
 * arguments (pspawn_config, parsed by slurm_spank_init and read by every
 * part of the plugin), and what slurmstepd knows of Slurm's own that SPANK
 * does not show, read for the shim (pspawn_spank.h). */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pspawn_spank.h"
/* After spank.h, for slurm_conf_t. */
#include <slurm/slurm.h>

/* Here, not in pspawn_spank.c whose entry points fill it in: the parts
 * they call read it, and call nothing back. */
struct pspawn_config pspawn_config;

/*
 * ProctrackType, which the shim needs for signals=auto.  SPANK has no item
 * for it; slurmstepd keeps slurm.conf in libslurmfull's global slurm_conf,
 * laid out as slurm.h's slurm_conf_t (Slurm loads only plugins built for
 * its own major release).  Looked up at run time, so the plugin needs no
 * Slurm data symbol to load.
 */
void pspawn_read_proctrack(char *buf, size_t len)
{
    const slurm_conf_t *conf = dlsym(RTLD_DEFAULT, "slurm_conf");
    buf[0] = '\0';
    if (conf && conf->proctrack_type &&
        strncmp(conf->proctrack_type, "proctrack/", 10) == 0 &&
        strlen(conf->proctrack_type) < len)
        snprintf(buf, len, "%s", conf->proctrack_type);
}

/* Whether the cgroup.conf at PATH says SignalChildrenProcesses=yes
 * (Slurm 24.11: proctrack/cgroup then signals every process of a step,
 * its tasks too, not only slurmstepd's children).  -1: no such file. */
static int signal_children_in(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[1024];
    int yes = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\n")] = '\0';
        char *k = line + strspn(line, " \t");
        size_t klen = strcspn(k, " \t=");
        if (klen != 23 || strncasecmp(k, "SignalChildrenProcesses", 23) != 0)
            continue;
        char *v = k + klen + strspn(k + klen, " \t");
        if (*v != '=')
            continue;
        v += 1 + strspn(v + 1, " \t");
        v[strcspn(v, " \t")] = '\0';
        yes = !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "up") ||
              !strcmp(v, "1");
    }
    fclose(f);
    return yes;
}

/* cgroup.conf, which SPANK does not show either: slurmstepd has it from
 * slurmd in a structure of Slurm's own (no API), so the file is read
 * where slurmd found it: beside slurm.conf (slurm_conf's own path, then
 * $SLURM_CONF's), in slurmd's configless cache, or in /etc/slurm. */
void pspawn_read_signal_children(char *buf, size_t len)
{
    const slurm_conf_t *conf = dlsym(RTLD_DEFAULT, "slurm_conf");
    const char *env = getenv("SLURM_CONF");
    char dirs[3][PATH_MAX];
    int n = 0;
    const char *beside[] = { conf ? conf->slurm_conf : NULL, env };
    for (int i = 0; i < 2; i++)
        if (beside[i] && strrchr(beside[i], '/'))
            snprintf(dirs[n++], PATH_MAX, "%.*s", (int)(strrchr(beside[i], '/') - beside[i]),
                     beside[i]);
    if (conf && conf->slurmd_spooldir)
        snprintf(dirs[n++], PATH_MAX, "%s/conf-cache", conf->slurmd_spooldir);
    buf[0] = '\0';
    int yes = -1;
    for (int i = 0; i < n && yes < 0; i++) {
        char path[PATH_MAX + 16];
        if (snprintf(path, sizeof path, "%s/cgroup.conf", dirs[i]) >= (int)sizeof path)
            continue;   /* cannot happen (dirs[i] < PATH_MAX); GCC 15 cannot tell */
        yes = signal_children_in(path);
    }
    if (yes < 0)
        yes = signal_children_in("/etc/slurm/cgroup.conf");
    if (yes > 0 && len > 1)
        snprintf(buf, len, "1");
}
