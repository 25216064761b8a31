/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Learned library preloads, zygote side.  Before it parks, a zygote with
 * preload=auto (or preload=FILE, or PSPAWN_PRELOAD_LIBS) dlopens the shared
 * objects its program's tasks loaded after main, with the flags and in the
 * order they used, so that a task's own dlopen finds them loaded,
 * relocated and bound.  Entries whose file changed since they were
 * recorded are dropped; entries not tried yet are first loaded in a forked
 * child, and one that leaves it with a new thread, fd or device mapping is
 * left out with the reason.  In a task of a learning zygote,
 * pspawn_record_dlopen (called by libpspawn-record.so) appends each newly
 * loaded object to the cache as it is loaded.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hash.h"
#include "preload.h"
#include "zygote.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_PRELOADS 4096
#define TRIAL_TIMEOUT_MS 60000
#define TRIAL_REPORT_MAX (1 << 20)

static char cache_path[PATH_MAX], cache_key[PATH_MAX + 512];
static int have_cache;
/* The paths the cache held at the park, hashed and sorted: a task does
 * not record again what its zygote left out (or loaded). */
static uint64_t *known_paths;
static size_t n_known;

static uint64_t path_hash(const char *s)
{
    uint64_t h = PSPAWN_HASH_INIT;
    pspawn_hash(&h, s, strlen(s));
    return h;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void remember_paths(const struct preload_entry *v, int n)
{
    known_paths = n > 0 ? calloc((size_t)n, sizeof *known_paths) : NULL;
    for (int i = 0; known_paths && i < n; i++)
        known_paths[n_known++] = path_hash(v[i].path);
    if (known_paths)
        qsort(known_paths, n_known, sizeof *known_paths, by_value);
}

struct process_state {
    int threads, fds, devices;
};

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void process_state(struct process_state *s)
{
    s->threads = count_dir("/proc/self/task");
    s->fds = count_dir("/proc/self/fd");
    s->devices = 0;
    FILE *f = fopen("/proc/self/maps", "re");
    char line[PATH_MAX + 128];
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        s->devices += p && strncmp(p, "/dev/", 5) == 0 && strncmp(p, "/dev/zero", 9) != 0;
    }
    if (f)
        fclose(f);
}

static const char *left_behind(const struct process_state *a, const struct process_state *b)
{
    return b->threads > a->threads ? "thread" : b->fds > a->fds ? "fd"
           : b->devices > a->devices ? "device" : NULL;
}

/* A path never to preload: PSPAWN_PRELOAD_SKIP (colon-separated paths or
 * file names), for an object whose constructor must run in each task. */
static int skipped(const char *path)
{
    const char *list = getenv("PSPAWN_PRELOAD_SKIP");
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        if ((strlen(path) == len && !strncmp(p, path, len)) ||
            (strlen(base) == len && !strncmp(p, base, len)))
            return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

static int same_file(const struct preload_entry *e)
{
    struct stat st;
    return stat(e->path, &st) == 0 && (unsigned long long)st.st_dev == e->dev &&
           (unsigned long long)st.st_ino == e->ino &&
           (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec == e->mtime_ns;
}

static int identify(struct preload_entry *e)
{
    struct stat st;
    if (stat(e->path, &st) < 0)
        return -1;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    return 0;
}

static int add(struct preload_entry *v, int n, const struct preload_entry *e)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].path, e->path) == 0)
            return n;   /* the first load decides its flags */
    if (n < MAX_PRELOADS)
        v[n++] = *e;
    return n;
}

/* The cache of this program: entries that are still the same file. */
static int read_cache(struct preload_entry *v, int n, int *changed)
{
    FILE *f = fopen(cache_path, "re");
    if (!f)
        return n;
    char line[PATH_MAX + 256];
    if (!fgets(line, sizeof line, f) || strcspn(line, "\n") != strlen(cache_key) ||
        strncmp(line, cache_key, strlen(cache_key)) != 0) {
        fclose(f);
        *changed = 1;   /* another program's (a hash collision): start afresh */
        return n;
    }
    struct preload_entry e;
    while (fgets(line, sizeof line, f))
        if (pspawn_preload_parse(line, &e) == 0) {
            if (same_file(&e))
                n = add(v, n, &e);
            else
                *changed = 1;
        }
    fclose(f);
    return n;
}

/* preload=FILE: a path per line, then optional words global, lazy,
 * deepbind, nodelete; '#' starts a comment. */
static int read_list(const char *file, struct preload_entry *v, int n)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return n;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {
        struct preload_entry e = { .verdict = "untried", .mode = RTLD_NOW | RTLD_LOCAL };
        char *save, *w = strtok_r(line, " \t\n", &save);
        if (!w || *w == '#' || *w != '/' || strlen(w) >= sizeof e.path)
            continue;
        strcpy(e.path, w);
        while ((w = strtok_r(NULL, " \t\n", &save)) && *w != '#') {
            if (!strcmp(w, "global")) e.mode |= RTLD_GLOBAL;
            else if (!strcmp(w, "lazy")) e.mode = (e.mode & ~RTLD_NOW) | RTLD_LAZY;
            else if (!strcmp(w, "deepbind")) e.mode |= RTLD_DEEPBIND;
            else if (!strcmp(w, "nodelete")) e.mode |= RTLD_NODELETE;
        }
        if (identify(&e) == 0)
            n = add(v, n, &e);
    }
    fclose(f);
    return n;
}

/* PSPAWN_PRELOAD_LIBS: colon-separated paths, loaded RTLD_NOW|RTLD_LOCAL. */
static int read_env(struct preload_entry *v, int n)
{
    const char *list = getenv("PSPAWN_PRELOAD_LIBS");
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        struct preload_entry e = { .verdict = "untried", .mode = RTLD_NOW | RTLD_LOCAL };
        if (len && len < sizeof e.path && *p == '/') {
            memcpy(e.path, p, len);
            if (identify(&e) == 0)
                n = add(v, n, &e);
        }
        p += len + (p[len] == ':');
    }
    return n;
}

/* How the zygote loads an entry the trial passed: a library the task
 * opened RTLD_LAZY is bound now ("ok"), unless the trial kept it lazy
 * ("lazy=SYMBOL": bind.c says why). */
static int binds_lazily(int mode)
{
    return !(mode & RTLD_NOW);
}

static int bound_now(int mode)
{
    return (mode & ~RTLD_BINDING_MASK) | RTLD_NOW;
}

static int zygote_mode(const struct preload_entry *e)
{
    return binds_lazily(e->mode) && strcmp(e->verdict, "ok") == 0 ? bound_now(e->mode) : e->mode;
}

static int loaded_by_zygote(const struct preload_entry *e)
{
    return (strcmp(e->verdict, "ok") == 0 || strncmp(e->verdict, "lazy=", 5) == 0) &&
           !skipped(e->path);
}

/* "undefined symbol: NAME" in dlerror's text: NAME, else "unresolved". */
static void undefined_symbol(char *out, size_t size)
{
    const char *err = dlerror(), *at = err ? strstr(err, "undefined symbol: ") : NULL;
    snprintf(out, size, "%.*s", at ? (int)strcspn(at + 18, " ,") : 10, at ? at + 18 : "unresolved");
}

/* In the trial's child: load entry I as the zygote would (bound now where
 * the task bound lazily; lazily where binding now fails), and say what
 * its load left behind.  The verdict goes into WHY. */
static void trial_one(struct preload_entry *e, struct process_state *before, char *why,
                      size_t size)
{
    if (e->lmid != 0) {
        snprintf(why, size, "namespace");
        return;
    }
    struct link_map *last = zygote_bind_last();
    int now = binds_lazily(e->mode);
    char symbol[128] = "";
    void *h = dlopen(e->path, now ? bound_now(e->mode) : e->mode);
    if (!h && now) {
        undefined_symbol(symbol, sizeof symbol);
        h = dlopen(e->path, e->mode);
    }
    struct process_state after;
    process_state(&after);
    const char *denied = h ? zygote_preload_denied(last, NULL) : NULL;
    const char *unsafe = h && now && !symbol[0] ? zygote_bind_unsafe(last) : NULL;
    if (unsafe)
        snprintf(symbol, sizeof symbol, "%s", unsafe);
    const char *left = left_behind(before, &after);
    *before = after;
    if (!h)
        snprintf(why, size, "fails");
    else if (denied)
        snprintf(why, size, "denied=%s", denied);
    else if (left)
        snprintf(why, size, "%s", left);
    else if (symbol[0])
        snprintf(why, size, "lazy=%s", symbol);
    else
        snprintf(why, size, "ok");
}

/* Load the entries in a forked child, in order, as the zygote will, and
 * set each one's verdict from what its load left behind and how it can
 * be bound.  Entries already out stay out; the others are judged again,
 * each in the state the entries before it leave, as in the zygote. */
static void trial(struct preload_entry *v, int n)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        struct process_state before;
        process_state(&before);
        char line[PATH_MAX], why[VERDICT_SIZE];
        for (int i = 0; i < n; i++) {
            if ((strcmp(v[i].verdict, "untried") != 0 && !loaded_by_zygote(&v[i])) ||
                skipped(v[i].path))
                continue;
            trial_one(&v[i], &before, why, sizeof why);
            int len = snprintf(line, sizeof line, "%d %s\n", i, why);
            if (write(p[1], line, (size_t)len) < 0)
                break;
        }
        _exit(0);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return;
    }
    for (int i = 0; i < n; i++)
        if (loaded_by_zygote(&v[i]) || strcmp(v[i].verdict, "untried") == 0)
            strcpy(v[i].verdict, "untried");
    char *buf = malloc(TRIAL_REPORT_MAX + 1);
    size_t have = 0;
    struct pollfd pf = { p[0], POLLIN, 0 };
    while (buf && have < TRIAL_REPORT_MAX && poll(&pf, 1, TRIAL_TIMEOUT_MS) == 1) {
        ssize_t r = read(p[0], buf + have, TRIAL_REPORT_MAX - have);
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    close(p[0]);
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (buf)
        buf[have] = 0;
    for (char *line = buf; line && *line;) {
        int i, at = 0;
        char why[VERDICT_SIZE];
        if (sscanf(line, "%d %" VERDICT_SCAN "s%n", &i, why, &at) == 2 && i >= 0 && i < n)
            snprintf(v[i].verdict, sizeof v[i].verdict, "%s", why);
        line += strcspn(line, "\n");
        line += *line == '\n';
    }
    free(buf);
    /* One the child did not get to (it ended on it) is left out too. */
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].verdict, "untried") == 0 && !skipped(v[i].path))
            strcpy(v[i].verdict, "fails");
}

static void say_verdict(const struct preload_entry *e)
{
    const char *v = e->verdict;
    if (!strncmp(v, "lazy=", 5))
        zygote_say("preload %s: bound lazily, as its task binds it: %s is not in the global scope "
            "once it is loaded (undefined, or its own dependency's), and a later RTLD_GLOBAL "
            "load could define it", e->path, v + 5);
    else if (!strncmp(v, "denied=", 7))
        zygote_say("preload %s: left out: it loads %s, which %s", e->path, v + 7,
            zygote_preload_deny_reason(v + 7));
    else if (strcmp(v, "ok") && strcmp(v, "untried"))
        zygote_say("preload %s: left out: %s", e->path, v);
}

static void write_cache(const struct preload_entry *v, int n)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%d", cache_path, (int)getpid());
    if (pspawn_preload_mkdirs(cache_path) < 0)
        return;
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    fprintf(f, "%s\n", cache_key);
    char line[PATH_MAX + 256];
    for (int i = 0; i < n; i++)
        if (pspawn_preload_format(&v[i], line, sizeof line) > 0)
            fputs(line, f);
    if (fclose(f) == 0)
        rename(tmp, cache_path);
    else
        unlink(tmp);
}

void zygote_preload(void)
{
    const char *how = parked.preload;
    int learning = how && strcmp(how, "auto") == 0;
    if (!how && !getenv("PSPAWN_PRELOAD_LIBS"))
        return;
    have_cache = pspawn_preload_cache(cache_path, sizeof cache_path, cache_key,
                                      sizeof cache_key) == 0;
    struct preload_entry *v = calloc(MAX_PRELOADS, sizeof *v);
    if (!v)
        return;
    int n = 0, changed = 0;
    if (learning && have_cache)
        n = read_cache(v, n, &changed);
    else if (how && how[0] == '/')
        n = read_list(how, v, n);
    n = read_env(v, n);
    int untried = 0;
    for (int i = 0; i < n; i++)
        untried += strcmp(v[i].verdict, "untried") == 0 && !skipped(v[i].path);
    if (untried)
        trial(v, n);
    /* What the trial passed can still start a thread here (one that
     * exited before the trial looked): such an entry is marked, so that
     * the next zygote leaves it out, and this one refuses to park. */
    int threads = count_dir("/proc/self/task");
    for (int i = 0; i < n; i++) {
        if (!loaded_by_zygote(&v[i]))
            continue;
        char symbol[128] = "";
        void *h = dlopen(v[i].path, zygote_mode(&v[i]));
        if (!h && zygote_mode(&v[i]) != v[i].mode) {
            undefined_symbol(symbol, sizeof symbol);
            h = dlopen(v[i].path, v[i].mode);
        }
        if (!h) {
            strcpy(v[i].verdict, "fails");
            changed = 1;
        } else if (count_dir("/proc/self/task") > threads) {
            strcpy(v[i].verdict, "thread");
            threads = count_dir("/proc/self/task");
            changed = 1;
        } else if (symbol[0]) {
            snprintf(v[i].verdict, sizeof v[i].verdict, "lazy=%s", symbol);
            changed = 1;
        }
    }
    for (int i = 0; i < n && (untried || changed); i++)
        say_verdict(&v[i]);
    if (learning && have_cache && (changed || untried))
        write_cache(v, n);
    if (learning && have_cache)
        remember_paths(v, n);
    free(v);
    parked.learning = learning && have_cache;
}

/* libpspawn-record.so, in a task of a learning zygote: HANDLE was just
 * loaded with MODE in namespace LMID.  One line, appended with one write,
 * so that tasks loading at once do not mix their lines. */
EXPORT void pspawn_record_dlopen(void *handle, int mode, long lmid)
{
    if (!parked.learning || !parked.in_task)
        return;
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) < 0 || !lm || !lm->l_name || lm->l_name[0] != '/')
        return;
    uint64_t h = path_hash(lm->l_name);
    if (known_paths && bsearch(&h, known_paths, n_known, sizeof h, by_value))
        return;
    struct preload_entry e = { .verdict = "untried", .mode = mode & ~RTLD_NOLOAD, .lmid = lmid };
    snprintf(e.path, sizeof e.path, "%s", lm->l_name);
    char line[PATH_MAX + 256];
    int len;
    if (identify(&e) < 0 || (len = pspawn_preload_format(&e, line, sizeof line)) < 0)
        return;
    int saved = errno;
    int fd = open(cache_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 && pspawn_preload_mkdirs(cache_path) == 0) {
        /* The first task to record makes the file, its key line in it
         * before anyone can append (link fails if another made it). */
        char tmp[PATH_MAX + 32];
        snprintf(tmp, sizeof tmp, "%s.%d", cache_path, (int)getpid());
        int t = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (t >= 0) {
            char key[sizeof cache_key + 1];
            int klen = snprintf(key, sizeof key, "%s\n", cache_key);
            if (write(t, key, (size_t)klen) == klen && link(tmp, cache_path) < 0) {
                /* EEXIST: another zygote made the file first, with the same
                 * key line, and the open below appends to it; any other
                 * error makes that open fail, and nothing is recorded. */
            }
            close(t);
            unlink(tmp);
        }
        fd = open(cache_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    }
    if (fd >= 0) {
        if (write(fd, line, (size_t)len) < 0)
            len = -1;
        close(fd);
    }
    errno = saved;
}
