/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fallback-program - when the program itself cannot be served by its
 * zygote, the task is created by a plain exec instead, runs exactly once
 * with the right output, and the reason is readable
 * (pspawn_context_reason()) and printed on stderr with PSPAWN_DEBUG=1.
 *
 * Cases: a static binary, a set-user-ID and a set-group-ID copy, a copy
 * with file capabilities (each refused from the context's creation), a
 * binary replaced or touched on disk after its zygote started.  The
 * zygote's, the launcher's and the request's state are
 * tests/integration/fallback-state's.
 *
 * Uses $TESTS_BUILDDIR/{task,task-static,task-v2}.
 */
#include "fallback.h"

/* Run a command (setcap); returns its exit status, or -1. */
static int run_command(char *const argv[])
{
    extern char **environ;
    pid_t pid;
    int st;

    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
        return -1;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* A context that falls back from its creation: PATH's zygote cannot serve. */
static void check_refused(const char *name, const char *path, const char *word,
                          const char *want_out)
{
    pspawn_context_t ctx;
    struct outcome created = { 0 }, o;
    int rc = create_context(&ctx, path, &created);

    tap_ok(rc == 0, "%s: pspawn_context_create succeeds (rc %d)", name, rc);
    if (rc != 0) {
        free(created.err);
        return;
    }
    spawn_task(&ctx, path, "x", &o);
    prepend_err(&o, created.err);
    check_ran_once(name, &o, want_out);
    check_reason(name, &ctx, &o, word);
    check_exec_for_good(name, &ctx);
    tap_ok(pspawn_context_zygote_pid(&ctx) == -1, "%s: no zygote (pspawn_context_zygote_pid() %ld)",
           name, (long)pspawn_context_zygote_pid(&ctx));
    outcome_free(&o);
    free(created.err);
    /* Still exec for a second spawn. */
    spawn_task(&ctx, path, "again", &o);
    tap_ok(o.rc == 0 && o.exited0 && o.runs == 1 && o.pid_matches,
           "%s: a second spawn runs too", name);
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
}


/* ---- the cases ---------------------------------------------------------- */

static void case_static(void)
{
    char path[PATH_MAX];

    snprintf(path, sizeof path, "%s/task-static", builddir);
    check_refused("static binary", path, "static",
                  "task version=1 rank=- size=- local=- args=x\n");
}

static void case_setid(mode_t bit, const char *name)
{
    char path[PATH_MAX], task[PATH_MAX];

    snprintf(task, sizeof task, "%s/task", builddir);
    snprintf(path, sizeof path, "%s/%s", tmpdir, bit == S_ISUID ? "setuid" : "setgid");
    copy_file(task, path, 0755 | bit);
    check_refused(name, path, "set-user-ID or set-group-ID",
                  "task version=1 rank=- size=- local=- args=x\n");
}

static void case_capabilities(void)
{
    char path[PATH_MAX], task[PATH_MAX];
    char *setcap[] = { "setcap", "cap_net_raw+ep", path, NULL };
    int rc;

    snprintf(task, sizeof task, "%s/task", builddir);
    snprintf(path, sizeof path, "%s/caps", tmpdir);
    copy_file(task, path, 0755);
    rc = run_command(setcap);
    if (rc != 0) {
        /* No setcap (libcap2-bin), or a file system without xattrs. */
        tap_skip(rc < 0 ? "setcap not found" : "setcap failed on this file system",
                 "file capabilities: falls back to exec");
        return;
    }
    check_refused("file capabilities", path, "capabilities",
                  "task version=1 rank=- size=- local=- args=x\n");
}

/* The binary is replaced (new inode) or touched (new mtime) after its
 * zygote started: exec would run the file as it is now. */
static void case_changed(int replace)
{
    const char *name = replace ? "binary replaced on disk" : "binary touched on disk";
    char path[PATH_MAX], task[PATH_MAX], v2[PATH_MAX];
    pspawn_context_t ctx;
    struct outcome o;

    snprintf(task, sizeof task, "%s/task", builddir);
    snprintf(v2, sizeof v2, "%s/task-v2", builddir);
    snprintf(path, sizeof path, "%s/changing", tmpdir);
    copy_file(task, path, 0755);
    if (create_context(&ctx, path, NULL) != 0)
        tap_bail("%s: pspawn_context_create failed", name);
    spawn_task(&ctx, path, "before", &o);
    check_zygote_served(name, &ctx, &o, "task version=1 rank=- size=- local=- args=before\n");
    outcome_free(&o);

    if (replace) {
        copy_file(v2, path, 0755);
    } else {
        struct timespec times[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
        clock_gettime(CLOCK_REALTIME, &times[1]);
        times[1].tv_sec += 10;
        if (utimensat(AT_FDCWD, path, times, 0) != 0)
            tap_bail("utimensat %s: %s", path, strerror(errno));
    }
    spawn_task(&ctx, path, "after", &o);
    check_ran_once(name, &o, replace
                   ? "task version=2 rank=- size=- local=- args=after\n"
                   : "task version=1 rank=- size=- local=- args=after\n");
    check_reason(name, &ctx, &o, "changed on disk");
    outcome_free(&o);
    pspawn_context_destroy(&ctx);
}

int main(int argc, char **argv)
{
    (void)argc;
    fallback_start(argv);
    case_static();
    case_setid(S_ISUID, "set-user-ID binary");
    case_setid(S_ISGID, "set-group-ID binary");
    case_capabilities();
    case_changed(1);
    case_changed(0);
    return fallback_finish();
}
