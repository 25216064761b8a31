/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP: default=auto's table of the programs worth a zygote
 * (libpspawn/wire/worth.c), in a directory of the test's own: where the
 * step's program is found, what a first step sees (nothing known: it
 * goes through pspawn and teaches), what a later one sees (the count, the
 * verdict), what makes a program new again (another file, another mtime,
 * other loader variables, another user), Python, and a table that must
 * not be believed (a directory others may write, a link, garbage).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "worth.h"
#include "../fixtures/tap.h"

static char dir[64], prog[96], py[96];

static void copy(const char *from, const char *to)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    if (system(cmd) != 0)
        tap_bail("cannot copy %s", from);
}

static struct pspawn_worth recall(uid_t uid, const char *program, char **env)
{
    struct pspawn_worth w;
    char *argv[] = { (char *)program, "arg", NULL };
    pspawn_worth_recall(&w, dir, uid, NULL, 2, argv, env);
    return w;
}

static int entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls %s | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f && fscanf(f, "%d", &n) != 1)
        n = -1;
    if (f)
        pclose(f);
    return n;
}

static void step_program(void)
{
    char path[PATH_MAX], why[256];
    char *env[] = { "PATH=relative:/nonexistent:/bin:/usr/bin", NULL };
    tap_ok(pspawn_step_program("/x/y", env, 1, path, sizeof path, why, sizeof why) == 0 &&
               !strcmp(path, "/x/y"), "an absolute program is taken as it is (%s)", path);
    tap_ok(pspawn_step_program("sh", env, 1, path, sizeof path, why, sizeof why) == 0 &&
               !strcmp(path, "/bin/sh"),
           "a name is found in the step's PATH, relative entries skipped (%s)", path);
    tap_ok(pspawn_step_program("./a.out", env, 1, path, sizeof path, why, sizeof why) < 0 &&
               strstr(why, "relative to the working directory"),
           "./a.out with no PWD: refused, root does not know the step's cwd (%s)", why);
    char *envd[] = { "PWD=/home/u/run", NULL };
    tap_ok(pspawn_step_program("./a.out", envd, 1, path, sizeof path, why, sizeof why) == 0 &&
               !strcmp(path, "/home/u/run/./a.out"), "./a.out, PWD=/home/u/run: %s", path);
    tap_ok(pspawn_step_program("./a.out", envd, 0, path, sizeof path, why, sizeof why) < 0,
           "./a.out where PWD is not to be used (a job's zygote): refused");
    tap_ok(pspawn_step_program("no-such-program-here", env, 1, path, sizeof path, why, sizeof why) < 0 &&
               strstr(why, "no-such-program-here is not in the step's PATH"), "%s", why);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/spank-worth.XXXXXX");
    if (!mkdtemp(dir))
        tap_bail("mkdtemp");
    snprintf(prog, sizeof prog, "%s.prog", dir);
    snprintf(py, sizeof py, "%s.py/python3.11", dir);
    copy("/bin/true", prog);
    char pydir[96];
    snprintf(pydir, sizeof pydir, "%s.py", dir);
    mkdir(pydir, 0755);
    copy("/bin/true", py);
    char *env[] = { "PATH=/bin", "HOME=/home/u", NULL };
    char why[320];
    uid_t me = 1000;

    step_program();

    /* The first step of a program: identified, not known, goes through. */
    struct pspawn_worth w = recall(me, prog, env);
    tap_ok(w.identified && !w.known && !w.python && !strcmp(w.path, prog),
           "first step: the program identified, not known yet");
    tap_ok(pspawn_worth_verdict(&w, 20, why, sizeof why) == NULL,
           "first step: worth a zygote until its zygote says otherwise");
    errno = 0;
    tap_ok(pspawn_worth_learn(&w, dir, me, 0, 0) < 0 && errno == EINVAL,
           "a step whose zygotes said no count teaches nothing");
    tap_ok(pspawn_worth_learn(&w, dir, me, 4, 0) == 0, "its zygote held 4 objects: learned");

    /* Later steps of it. */
    w = recall(me, prog, env);
    tap_ok(w.known && w.objects == 4, "second step: 4 objects known (%d)", w.objects);
    const char *v = pspawn_worth_verdict(&w, 20, why, sizeof why);
    tap_ok(v && strstr(v, "loaded 4 objects") && strstr(v, "auto_objects=20") &&
               strstr(v, strrchr(prog, '/') + 1),
           "second step, auto_objects=20: exec'd, and says why (%s)", v ? v : "worth it");
    tap_ok(pspawn_worth_verdict(&w, 4, why, sizeof why) == NULL,
           "auto_objects=4: the same program is worth it");
    tap_ok(pspawn_worth_learn(&w, dir, me, 60, 0) == 0 && (w = recall(me, prog, env)).objects == 60 &&
               pspawn_worth_verdict(&w, 20, why, sizeof why) == NULL,
           "a later step whose zygote held 60 (preload=auto, say) makes it worth it");
    pspawn_worth_learn(&w, dir, me, 4, 0);

    /* What makes it another program. */
    char *env2[] = { "PATH=/bin", "LD_LIBRARY_PATH=/opt/big/lib", NULL };
    w = recall(me, prog, env2);
    tap_ok(w.identified && !w.known, "another LD_LIBRARY_PATH: not known");
    char *env3[] = { "PATH=/bin", "HOME=/elsewhere", NULL };
    tap_ok(recall(me, prog, env3).known, "another HOME (not the loader's): still known");
    tap_ok(!recall(me + 1, prog, env).known, "another user's step of the same file: not known");
    struct timespec later[2] = { { 0, UTIME_OMIT }, { time(NULL) + 5, 0 } };
    utimensat(AT_FDCWD, prog, later, 0);
    tap_ok(!recall(me, prog, env).known, "the program rebuilt (another mtime): not known");
    w = recall(me, prog, env);
    pspawn_worth_learn(&w, dir, me, 4, 0);
    tap_ok(recall(me, prog, env).known, "rebuilt, then one step through pspawn: known again");

    /* Python. */
    w = recall(me, py, env);
    tap_ok(w.python && pspawn_worth_verdict(&w, 20, why, sizeof why) == NULL,
           "a Python interpreter is worth a zygote with nothing learned");
    pspawn_worth_learn(&w, dir, me, 3, 1);
    w = recall(me, py, env);
    tap_ok(w.known && pspawn_worth_verdict(&w, 20, why, sizeof why) == NULL,
           "and with 3 objects learned: its warm imports are the gain");
    w = recall(me, prog, env);
    pspawn_worth_learn(&w, dir, me, 4, 1);
    w = recall(me, prog, env);
    tap_ok(w.python && pspawn_worth_verdict(&w, 20, why, sizeof why) == NULL,
           "a program whose zygote said it is a warm Python is worth it");
    pspawn_worth_learn(&w, dir, me, 4, 0);

    /* A table that must not be believed. */
    char entry[160], link[160];
    snprintf(entry, sizeof entry, "%s/%u.%016llx", dir, (unsigned)me,
             (unsigned long long)recall(me, prog, env).id);
    snprintf(link, sizeof link, "%s/%u.%016llx", dir, (unsigned)me + 7,
             (unsigned long long)recall(me + 7, prog, env).id);
    if (symlink(entry, link) < 0)
        tap_bail("symlink");
    tap_ok(!recall(me + 7, prog, env).known, "an entry that is a symbolic link is not read");
    unlink(link);
    FILE *f = fopen(entry, "w");
    fputs("garbage\n", f);
    fclose(f);
    tap_ok(!recall(me, prog, env).known, "an entry that does not parse: not known");
    w = recall(me, prog, env);
    pspawn_worth_learn(&w, dir, me, 4, 0);
    chmod(dir, 0770);
    tap_ok(!recall(me, prog, env).known, "a table others may write is not believed");
    errno = 0;
    tap_ok(pspawn_worth_learn(&w, dir, me, 9, 0) < 0 && errno == EPERM,
           "nor written to (EPERM)");
    chmod(dir, 0700);

    /* A user's own table (prted's: the cache directory), made with the
     * directories above it. */
    char deep[128];
    snprintf(deep, sizeof deep, "%s/cache/pspawn/worth", dir);
    w = recall(me + 50, prog, env);
    struct stat dst = { 0 };
    int made = pspawn_worth_learn(&w, deep, me + 50, 4, 0) == 0 && stat(deep, &dst) == 0;
    tap_ok(made && (dst.st_mode & 0777) == 0700,
           "a table whose directories are missing: made, 0700 (%o)", dst.st_mode & 0777);
    char cmd0[160];
    snprintf(cmd0, sizeof cmd0, "rm -rf %s/cache", dir);
    if (system(cmd0) != 0)
        tap_diag("could not remove %s/cache", dir);

    /* A bound per user: the oldest entry goes. */
    int before = entries();
    struct pspawn_worth first = { 0 };
    char lib[PSPAWN_WORTH_PER_USER + 1][32];
    char *envn[] = { "PATH=/bin", NULL, NULL };
    for (int i = 0; i <= PSPAWN_WORTH_PER_USER; i++) {
        snprintf(lib[i], sizeof lib[i], "LD_LIBRARY_PATH=/l/%d", i);
        envn[1] = lib[i];
        w = recall(me + 100, prog, envn);
        pspawn_worth_learn(&w, dir, me + 100, 10, 0);
        if (i == 0) {
            first = w;
            char name[160];
            snprintf(name, sizeof name, "%s/%u.%016llx", dir, (unsigned)me + 100,
                     (unsigned long long)w.id);
            struct timespec old[2] = { { 0, UTIME_OMIT }, { time(NULL) - 3600, 0 } };
            utimensat(AT_FDCWD, name, old, AT_SYMLINK_NOFOLLOW);
        }
    }
    envn[1] = lib[0];
    tap_ok(entries() - before == PSPAWN_WORTH_PER_USER && !recall(me + 100, prog, envn).known &&
               first.identified,
           "%d programs of one user: %d kept, the oldest gone (%d)", PSPAWN_WORTH_PER_USER + 1,
           PSPAWN_WORTH_PER_USER, entries() - before);
    envn[1] = lib[PSPAWN_WORTH_PER_USER];
    tap_ok(recall(me + 100, prog, envn).known && recall(me, prog, env).known,
           "the newest kept, and another user's entries untouched");

    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", dir, prog, pydir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
