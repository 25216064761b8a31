/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle-libs - a zygote's libraries replaced on disk, through the API
 *: a library renamed over between two batches: the zygote exits
 * and a new one (with new sub-zygotes) serves the second batch, which runs
 * the new library's code, and PSPAWN_DEBUG says why; the same for a zygote
 * without inotify (noinotify preloaded), and with a sub-zygote per CPU.
 * The rest of the zygote's life: tests/integration/lifecycle.c.
 *
 * Uses $TESTS_BUILDDIR/lifeprog and
 * $TESTS_BUILDDIR/.libs/lib{lifelib,lifelib2,noinotify}.so.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifecycle.h"

static int count_lines(const char *file, const char *line)
{
    FILE *f = fopen(file, "re");
    char buf[256];
    int n = 0;

    while (f && fgets(buf, sizeof buf, f))
        n += strcmp(buf, line) == 0;
    if (f)
        fclose(f);
    return n;
}

/* The objects zygote PID has loaded, counted from outside: the ELF files
 * among its mappings and its vDSO, its proxy (libpspawn-proxy) left out. */
static int objects_mapped(pid_t pid)
{
    char maps[64], line[PATH_MAX + 128], seen[64][PATH_MAX];
    int n = 0, vdso = 0;
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(maps, "re");
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        vdso |= strstr(line, "[vdso]") != NULL;
        if (!path || strstr(path, "libpspawn-proxy"))
            continue;
        path[strcspn(path, "\n")] = '\0';
        int known = 0;
        for (int i = 0; i < n && !known; i++)
            known = strcmp(seen[i], path) == 0;
        char magic[4] = "";
        int fd = known || n == 64 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && read(fd, magic, 4) == 4 && memcmp(magic, "\177ELF", 4) == 0)
            snprintf(seen[n++], PATH_MAX, "%s", path);
        if (fd >= 0)
            close(fd);
    }
    if (f)
        fclose(f);
    return n + vdso;
}

/* Version 1 as lib in tmp's lib directory, version 2 beside it as newlib
 * (to be renamed over it), and the environment the zygote is made in. */
static void stage_libraries(int variant, char *lib, char *newlib)
{
    char libdir[PATH_MAX], from[PATH_MAX], preload[PATH_MAX];

    snprintf(libdir, sizeof libdir, "%s/lib", tmp);
    mkdir(libdir, 0755);
    snprintf(lib, PATH_MAX, "%s/lib/liblifelib.so", tmp);
    snprintf(newlib, PATH_MAX, "%s/lib/liblifelib.so.new", tmp);
    snprintf(from, sizeof from, "%s/.libs/liblifelib.so", builddir);
    if (copy_file(from, lib, 0755))
        tap_bail("cannot copy %s", from);
    snprintf(from, sizeof from, "%s/.libs/liblifelib2.so", builddir);
    if (copy_file(from, newlib, 0755))
        tap_bail("cannot copy %s", from);
    setenv("LD_LIBRARY_PATH", libdir, 1);
    setenv("PSPAWN_DEBUG", "1", 1);
    snprintf(preload, sizeof preload, "%s/.libs/libnoinotify.so", builddir);
    if (variant == 1)
        setenv("LD_PRELOAD", preload, 1);
}

/* The batch after the rename was served by new zygotes (their task counts
 * are theirs), none of them an old one: the root and, with fan-out, its
 * sub-zygotes.  Returns the new root's pid. */
static pid_t check_new_zygotes(pspawn_context_t *ctx, const pspawn_zygote_info_t *old,
                               size_t old_nz, pid_t first, int variant, const char *label)
{
    pspawn_zygote_info_t info[4];
    pid_t second = pspawn_context_zygote_pid(ctx);
    unsigned long served = 0;
    size_t renewed = 0, serving = 0;
    size_t nz = pspawn_context_zygotes(ctx, info, 4);
    for (size_t i = 0; i < nz && i < 4; i++) {
        int again = 0;
        for (size_t k = 0; k < old_nz && k < 4; k++)
            again |= info[i].pid == old[k].pid;
        renewed += info[i].pid > 0 && !again;
        serving += info[i].pid > 0 && info[i].tasks > 0;
        served += info[i].tasks;
    }
    tap_ok(pspawn_context_uses_zygote(ctx) && second > 0 && second != first && served == 4 &&
           renewed == nz && nz == old_nz && serving == (variant == 2 ? 2 : 1),
           "%s: that batch went through a new zygote (%d, was %d; %zu of %zu zygotes new, "
           "%zu serving, %lu tasks; %s)", label, (int)second, (int)first, renewed, nz, serving,
           served, pspawn_context_reason(ctx) ? pspawn_context_reason(ctx) : "no reason");
    return second;
}

/* ERR holds what the launcher and the zygotes wrote with PSPAWN_DEBUG=1;
 * shown when it does not say why. */
static void check_debug_says_why(const char *err, const char *label)
{
    tap_ok(file_has(err, "liblifelib.so was replaced on disk") == 1 &&
           file_has(err, "a library it loaded was replaced on disk") == 1 &&
           file_has(err, "starting a new zygote") == 1,
           "%s: PSPAWN_DEBUG says which library, and that a new zygote is started", label);
    if (file_has(err, "liblifelib.so was replaced on disk") != 1 ||
        file_has(err, "a library it loaded was replaced on disk") != 1 ||
        file_has(err, "starting a new zygote") != 1) {
        FILE *f = fopen(err, "re");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            tap_diag("%s", strtok(line, "\n"));
        if (f)
            fclose(f);
    }
}

/* The new zygote watches its libraries too: version 1 put back gets
 * a third zygote. */
static void case_replaced_again(pspawn_context_t *ctx, char **argv, const char *out,
                                const char *lib, const char *newlib, pid_t first, pid_t second,
                                const char *label)
{
    char from[PATH_MAX];
    snprintf(from, sizeof from, "%s/.libs/liblifelib.so", builddir);
    if (copy_file(from, newlib, 0755) || rename(newlib, lib) != 0)
        tap_bail("cannot put version 1 back: %s", strerror(errno));
    int ran = run(ctx, 2, argv, out, NULL);
    pid_t third = pspawn_context_zygote_pid(ctx);
    tap_ok(ran == 2 && count_lines(out, "version 1\n") == 2 && pspawn_context_uses_zygote(ctx) &&
           third > 0 && third != second && third != first,
           "%s: replaced again, a third zygote (%d) serves version 1", label, (int)third);
}

/* VARIANT 1: the zygote has no inotify (noinotify preloaded) and looks at
 * its libraries' directories instead; 2: a sub-zygote per CPU (forked,
 * looking at the directories) serves with the root. */
static void replaced_library(int variant)
{
    static const char *const labels[] = { "library", "library, no inotify",
                                          "library, fan-out" };
    const char *label = labels[variant];
    const char *options = variant == 2 ? "fanout=core,subzygote=fork,start=eager" : "fanout=none";
    char lib[PATH_MAX], newlib[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
    char *argv[] = { lifeprog, "version", NULL };
    pspawn_context_t ctx;

    stage_libraries(variant, lib, newlib);
    snprintf(out, sizeof out, "%s/versions", tmp);
    snprintf(err, sizeof err, "%s/debug", tmp);
    /* What the launcher and the zygote say, on our stderr. */
    fflush(stderr);
    int saved = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(fd, 2);
    close(fd);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, options) != 0)
        tap_bail("pspawn_context_create_opts failed");
    int ran = run(&ctx, 4, argv, out, NULL);
    pspawn_zygote_info_t info[4];
    size_t nz = pspawn_context_zygotes(&ctx, info, 4), serving = 0;
    for (size_t i = 0; i < nz && i < 4; i++)
        serving += info[i].pid > 0 && info[i].tasks > 0;
    tap_ok(ran == 4 && count_lines(out, "version 1\n") == 4 && pspawn_context_uses_zygote(&ctx) &&
           serving == (variant == 2 ? 2 : 1),
           "%s: a first batch through %zu zygote(s) runs version 1 (%d ran)", label, serving, ran);
    pid_t first = pspawn_context_zygote_pid(&ctx);
    int objects = pspawn_context_objects(&ctx), mapped = objects_mapped(first);
    tap_ok(objects >= 5 && objects == mapped,
           "%s: the zygote says it loaded %d objects, as its mappings show (%d)", label, objects,
           mapped);
    if (rename(newlib, lib) != 0)
        tap_bail("rename: %s", strerror(errno));
    ran = run(&ctx, 4, argv, out, NULL);
    dup2(saved, 2);
    close(saved);
    tap_ok(ran == 4 && count_lines(out, "version 2\n") == 4,
           "%s: renamed over, the next batch runs version 2 (%d ran, %d saw it)", label, ran,
           count_lines(out, "version 2\n"));
    pid_t second = check_new_zygotes(&ctx, info, nz, first, variant, label);
    check_debug_says_why(err, label);
    ran = run(&ctx, 2, argv, out, NULL);
    tap_ok(ran == 2 && count_lines(out, "version 2\n") == 2 && pspawn_context_uses_zygote(&ctx) &&
           pspawn_context_zygote_pid(&ctx) == second,
           "%s: and so does the one after, through the same new zygote", label);
    case_replaced_again(&ctx, argv, out, lib, newlib, first, second, label);
    pspawn_context_destroy(&ctx);
    unsetenv("PSPAWN_DEBUG");
    unsetenv("LD_LIBRARY_PATH");
    unsetenv("LD_PRELOAD");
}

int main(void)
{
    lifecycle_start("lifecycle-libs");

    replaced_library(0);
    replaced_library(1);
    if (!tap_fanout_built())
        tap_skip("built without hwloc", "library, fan-out: replaced on disk");
    else
        replaced_library(2);

    return lifecycle_finish();
}
