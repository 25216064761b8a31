/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP: which cgroup.procs files the step's mover writes (pspawn_cg_moves),
 * from /proc/PID/cgroup and /proc/self/mountinfo text as slurmstepd reads
 * them: cgroup v1 as in the mini-cluster (Slurm's task_N in cpuset only),
 * v1 with jobacct_gather/cgroup (memory and cpuacct too), v2, a mount of
 * a subtree, and text that must be refused.  And where root finds the
 * job's extern step (pspawn_cg_job_extern, from slurmstepd's own cgroups,
 * v1 and v2, job_N and Slurm 26.05's SLUID folders) and what it takes to
 * be inside it (pspawn_cg_within: whole components, not a substring).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "pspawn_cgroup.h"
#include "../fixtures/tap.h"

static char paths[PSPAWN_CG_MAX][PATH_MAX];

/* The moves as one string, "a b c", for comparison. */
static const char *moves(const char *to, const char *from, const char *mounts, int *n)
{
    static char out[PSPAWN_CG_MAX * PATH_MAX];
    *n = pspawn_cg_moves(to, from, mounts, paths);
    out[0] = '\0';
    for (int i = 0; i < *n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, paths[i]);
    }
    return out;
}

static const char v1_mounts[] =
    "1085 1084 0:53 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755\n"
    "1086 1085 0:30 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd\n"
    "1087 1085 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
    "1088 1085 0:34 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n"
    "1089 1085 0:35 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
    "1090 1085 0:36 / /sys/fs/cgroup/freezer rw,nosuid - cgroup cgroup rw,freezer\n"
    "1091 1084 0:60 / /proc rw - proc proc rw\n";

#define STEP "/slurm_c1/uid_1000/job_7/step_0"

static void job_extern_cases(void)
{
    char ext[1024];
    /* v2: slurmstepd in step_N/slurm; SLUID folder; v1: freezer at the
     * job's level (no step there), cpuset at the step's. */
    int n = pspawn_cg_job_extern("0::/system.slice/slurmstepd.scope/job_7/step_0/slurm\n", ext,
                                 sizeof ext);
    tap_ok(n == 1 && !strcmp(ext, "0::/system.slice/slurmstepd.scope/job_7/step_extern\n"),
           "v2, job_7: %.*s", (int)strcspn(ext, "\n"), ext);
    n = pspawn_cg_job_extern("0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_12/slurm\n",
                             ext, sizeof ext);
    tap_ok(n == 1 && !strcmp(ext, "0::/system.slice/slurmstepd.scope/sEKNKTV3WPV500/step_extern\n"),
           "v2, a SLUID folder (Slurm 26.05): %.*s", (int)strcspn(ext, "\n"), ext);
    n = pspawn_cg_job_extern("12:freezer:/slurm_c1/uid_1000/job_7\n9:cpuset:" STEP "\n4:memory:/\n",
                             ext, sizeof ext);
    tap_ok(n == 1 && !strcmp(ext, "9:cpuset:/slurm_c1/uid_1000/job_7/step_extern\n"),
           "v1: only the hierarchies where slurmstepd is in a step: %.*s", (int)strcspn(ext, "\n"), ext);
    n = pspawn_cg_job_extern("0::/system.slice/slurmstepd.scope/job_7/step_extern/slurm\n", ext,
                             sizeof ext);
    tap_ok(n == 1 && !strcmp(ext, "0::/system.slice/slurmstepd.scope/job_7/step_extern\n"),
           "the extern step's own slurmstepd: %.*s", (int)strcspn(ext, "\n"), ext);
    tap_ok(pspawn_cg_job_extern("0::/user.slice/user-1000.slice\n", ext, sizeof ext) == 0,
           "not in a job's cgroups: none");
    tap_ok(pspawn_cg_job_extern("0::/step_0/slurm\n", ext, sizeof ext) == 0,
           "a step folder at the top: no job folder, none");
    tap_ok(pspawn_cg_job_extern("0::/job_7/step_0\n", ext, 10) == -1, "too small a buffer: -1");

    /* Inside: the path, or below it, in the same hierarchy. */
    const char *e = "0::/s.scope/job_7/step_extern\n9:cpuset:/slurm/uid_1/job_7/step_extern\n";
    tap_ok(pspawn_cg_within("0::/s.scope/job_7/step_extern/user/task_special\n", e) == 1,
           "the extern step's task_special is within");
    tap_ok(pspawn_cg_within("9:cpuset:/slurm/uid_1/job_7/step_extern\n", e) == 1,
           "v1: the extern step itself is within");
    tap_ok(pspawn_cg_within("0::/user.slice/user-1/delegated/job_7/step_extern\n", e) == 0,
           "a decoy job_7/step_extern elsewhere (a delegated subtree) is not");
    tap_ok(pspawn_cg_within("0::/s.scope/job_7/step_externX\n", e) == 0,
           "step_externX is not step_extern");
    tap_ok(pspawn_cg_within("0::/s.scope/job_7/step_0/user/task_0\n", e) == 0,
           "a task of step 0 is not");
    tap_ok(pspawn_cg_within("9:memory:/slurm/uid_1/job_7/step_extern\n", e) == 0,
           "the same path in another hierarchy is not");
    tap_ok(pspawn_cg_within("0::/s.scope/job_7/step_extern/../../job_8\n", e) == 0,
           "a path with .. is not");
}

int main(void)
{
    int n;
    const char *m;

    /* The mini-cluster: proctrack/cgroup (freezer, step level) and
     * task/cgroup with ConstrainCores (cpuset, task level). */
    const char *shim3 =
        "12:freezer:" STEP "\n"
        "9:cpuset:" STEP "/task_3\n"
        "4:memory:/\n"
        "3:cpu,cpuacct:/\n"
        "1:name=systemd:/\n";
    const char *task_in_0 =
        "12:freezer:" STEP "\n"
        "9:cpuset:" STEP "/task_0\n"
        "4:memory:/\n"
        "3:cpu,cpuacct:/\n"
        "1:name=systemd:/\n";
    m = moves(shim3, task_in_0, v1_mounts, &n);
    tap_ok(n == 1 && !strcmp(m, "/sys/fs/cgroup/cpuset" STEP "/task_3/cgroup.procs"),
           "v1, task/cgroup: only the cpuset differs: %d: %s", n, m);
    m = moves(shim3, shim3, v1_mounts, &n);
    tap_ok(n == 0, "already in the shim's cgroups: nothing to write (%d)", n);

    /* jobacct_gather/cgroup adds task_N in memory and cpuacct. */
    const char *shim1 =
        "12:freezer:" STEP "\n"
        "9:cpuset:" STEP "/task_1\n"
        "4:memory:" STEP "/task_1\n"
        "3:cpu,cpuacct:" STEP "/task_1\n";
    const char *task1_in_0 =
        "12:freezer:" STEP "\n"
        "9:cpuset:" STEP "/task_0\n"
        "4:memory:" STEP "/task_0\n"
        "3:cpu,cpuacct:" STEP "/task_0\n";
    m = moves(shim1, task1_in_0, v1_mounts, &n);
    tap_ok(n == 3 &&
           !strcmp(m, "/sys/fs/cgroup/cpuset" STEP "/task_1/cgroup.procs "
                      "/sys/fs/cgroup/memory" STEP "/task_1/cgroup.procs "
                      "/sys/fs/cgroup/cpu,cpuacct" STEP "/task_1/cgroup.procs"),
           "v1, jobacct_gather/cgroup: cpuset, memory and cpu,cpuacct: %d: %s", n, m);

    /* A hierarchy the process is not in yet (from lacks it) still moves. */
    m = moves("9:cpuset:" STEP "/task_2\n", "", v1_mounts, &n);
    tap_ok(n == 1 && strstr(m, "/task_2/cgroup.procs"), "hierarchy missing from the task's text: %s", m);

    /* Not mounted here: skipped, not an error. */
    m = moves("7:pids:" STEP "/task_2\n", "7:pids:" STEP "/task_0\n", v1_mounts, &n);
    tap_ok(n == 0, "a hierarchy that is not mounted is skipped (%d)", n);

    /* Named hierarchies match by name=, never by a controller. */
    m = moves("1:name=systemd:/a\n", "1:name=systemd:/b\n", v1_mounts, &n);
    tap_ok(n == 1 && !strcmp(m, "/sys/fs/cgroup/systemd/a/cgroup.procs"), "name=systemd: %s", m);

    /* cgroup v2: one line, hierarchy 0; Slurm's task_N is a leaf. */
    const char *v2_mounts =
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n";
    m = moves("0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_5\n",
              "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n", v2_mounts, &n);
    tap_ok(n == 1 && !strcmp(m, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/user/"
                                "task_5/cgroup.procs"),
           "v2: %s", m);

    /* mountinfo writes a space in a mount point or root as \040 (and a
     * backslash as \134): the path is the decoded one. */
    const char *space_mounts =
        "30 23 0:26 /a\\040b /run/my\\040cgroup\\134x rw - cgroup2 cgroup2 rw\n";
    m = moves("0::/a b/job_7/step_0/user/task_5\n", "0::/a b/job_7/step_0/user/task_0\n",
              space_mounts, &n);
    tap_ok(n == 1 && !strcmp(m, "/run/my cgroup\\x/job_7/step_0/user/task_5/cgroup.procs"),
           "a mount point and root with a space (\\040) and a backslash (\\134): %s", m);

    /* A mount of a subtree (root field): paths are relative to it. */
    const char *sub_mounts =
        "40 30 0:34 /docker/abc /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n";
    m = moves("9:cpuset:/docker/abc/slurm/task_1\n", "9:cpuset:/docker/abc/slurm/task_0\n",
              sub_mounts, &n);
    tap_ok(n == 1 && !strcmp(m, "/sys/fs/cgroup/cpuset/slurm/task_1/cgroup.procs"),
           "mount of a subtree: %s", m);
    m = moves("9:cpuset:/docker/abcd/x\n", "9:cpuset:/docker/abc/x\n", sub_mounts, &n);
    tap_ok(n == 0, "a path outside the mounted subtree is skipped, not guessed (%d)", n);
    m = moves("9:cpuset:/../other/task_1\n", "9:cpuset:/x\n", v1_mounts, &n);
    tap_ok(n == 0, "a path outside our cgroup namespace (/..) is skipped (%d)", n);
    m = moves("9:cpuset:/slurm/uid_1/step_extern/..\n", "9:cpuset:/x\n", v1_mounts, &n);
    tap_ok(n == 0, "a path that ends in /.. is skipped, not followed out of its mount (%d: %s)", n, m);

    /* Text that is not /proc/PID/cgroup. */
    tap_ok(pspawn_cg_moves("garbage\n", task_in_0, v1_mounts, paths) == -1,
           "a line without two colons is refused");
    tap_ok(pspawn_cg_moves("9:cpuset:relative\n", task_in_0, v1_mounts, paths) == -1,
           "a relative cgroup path is refused");
    job_extern_cases();
    return tap_done();
}
