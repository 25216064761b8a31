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

/* VARIANT 1: the zygote has no inotify (noinotify preloaded) and looks at
 * its libraries' directories instead; 2: a sub-zygote per CPU (forked,
 * looking at the directories) serves with the root. */
static void replaced_library(int variant)
{
    static const char *const labels[] = { "library", "library, no inotify",
                                          "library, fan-out" };
    const char *label = labels[variant];
    const char *options = variant == 2 ? "fanout=core,subzygote=fork,start=eager" : "fanout=none";
    char preload[PATH_MAX];
    char libdir[PATH_MAX], lib[PATH_MAX], newlib[PATH_MAX], from[PATH_MAX], out[PATH_MAX];
    char err[PATH_MAX];
    char *argv[] = { lifeprog, "version", NULL };
    pspawn_context_t ctx;

    snprintf(libdir, sizeof libdir, "%s/lib", tmp);
    mkdir(libdir, 0755);
    snprintf(lib, sizeof lib, "%s/lib/liblifelib.so", tmp);
    snprintf(newlib, sizeof newlib, "%s/lib/liblifelib.so.new", tmp);
    snprintf(from, sizeof from, "%s/.libs/liblifelib.so", builddir);
    if (copy_file(from, lib, 0755))
        tap_bail("cannot copy %s", from);
    snprintf(from, sizeof from, "%s/.libs/liblifelib2.so", builddir);
    if (copy_file(from, newlib, 0755))
        tap_bail("cannot copy %s", from);
    snprintf(out, sizeof out, "%s/versions", tmp);
    snprintf(err, sizeof err, "%s/debug", tmp);
    setenv("LD_LIBRARY_PATH", libdir, 1);
    setenv("PSPAWN_DEBUG", "1", 1);
    snprintf(preload, sizeof preload, "%s/.libs/libnoinotify.so", builddir);
    if (variant == 1)
        setenv("LD_PRELOAD", preload, 1);
    /* What the launcher and the zygote say, on our stderr. */
    fflush(stderr);
    int saved = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(fd, 2);
    close(fd);
    if (pspawn_context_create_opts(&ctx, lifeprog, NULL, options) != 0)
        tap_bail("pspawn_context_create_opts failed");
    int ran = run(&ctx, 4, argv, out, NULL);
    pspawn_zygote_info_t info[4], old[4];
    size_t nz = pspawn_context_zygotes(&ctx, info, 4), serving = 0;
    for (size_t i = 0; i < nz && i < 4; i++)
        serving += info[i].pid > 0 && info[i].tasks > 0;
    tap_ok(ran == 4 && count_lines(out, "version 1\n") == 4 && pspawn_context_uses_zygote(&ctx) &&
           serving == (variant == 2 ? 2 : 1),
           "%s: a first batch through %zu zygote(s) runs version 1 (%d ran)", label, serving, ran);
    memcpy(old, info, sizeof old);
    size_t old_nz = nz;
    pid_t first = pspawn_context_zygote_pid(&ctx);
    if (rename(newlib, lib) != 0)
        tap_bail("rename: %s", strerror(errno));
    ran = run(&ctx, 4, argv, out, NULL);
    dup2(saved, 2);
    close(saved);
    tap_ok(ran == 4 && count_lines(out, "version 2\n") == 4,
           "%s: renamed over, the next batch runs version 2 (%d ran, %d saw it)", label, ran,
           count_lines(out, "version 2\n"));
    /* It was served by new zygotes (their task counts are theirs), none
     * of them an old one: the root and, with fan-out, its sub-zygotes. */
    pid_t second = pspawn_context_zygote_pid(&ctx);
    unsigned long served = 0;
    size_t renewed = 0;
    serving = 0;
    nz = pspawn_context_zygotes(&ctx, info, 4);
    for (size_t i = 0; i < nz && i < 4; i++) {
        int again = 0;
        for (size_t k = 0; k < old_nz && k < 4; k++)
            again |= info[i].pid == old[k].pid;
        renewed += info[i].pid > 0 && !again;
        serving += info[i].pid > 0 && info[i].tasks > 0;
        served += info[i].tasks;
    }
    tap_ok(pspawn_context_uses_zygote(&ctx) && second > 0 && second != first && served == 4 &&
           renewed == nz && nz == old_nz && serving == (variant == 2 ? 2 : 1),
           "%s: that batch went through a new zygote (%d, was %d; %zu of %zu zygotes new, "
           "%zu serving, %lu tasks; %s)", label, (int)second, (int)first, renewed, nz, serving,
           served, pspawn_context_reason(&ctx) ? pspawn_context_reason(&ctx) : "no reason");
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
    ran = run(&ctx, 2, argv, out, NULL);
    tap_ok(ran == 2 && count_lines(out, "version 2\n") == 2 && pspawn_context_uses_zygote(&ctx) &&
           pspawn_context_zygote_pid(&ctx) == second,
           "%s: and so does the one after, through the same new zygote", label);
    /* The new zygote watches its libraries too: version 1 put back gets
     * a third zygote. */
    snprintf(from, sizeof from, "%s/.libs/liblifelib.so", builddir);
    if (copy_file(from, newlib, 0755) || rename(newlib, lib) != 0)
        tap_bail("cannot put version 1 back: %s", strerror(errno));
    ran = run(&ctx, 2, argv, out, NULL);
    pid_t third = pspawn_context_zygote_pid(&ctx);
    tap_ok(ran == 2 && count_lines(out, "version 1\n") == 2 && pspawn_context_uses_zygote(&ctx) &&
           third > 0 && third != second && third != first,
           "%s: replaced again, a third zygote (%d) serves version 1", label, (int)third);
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
    replaced_library(2);

    return lifecycle_finish();
}
