/* SPDX-License-Identifier: BSD-3-Clause */
/* cgroup paths from /proc text (cgroup.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cgroup.h"

struct hier {
    char id[16];            /* hierarchy id ("0" for v2) */
    char ctl[256];          /* controllers, "name=X", or "" for v2 */
    char path[PATH_MAX];
};

/* Parse /proc/PID/cgroup text.  Returns the count, or -1. */
static int parse_cgroup(const char *text, struct hier *h)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchrnul(line, '\n');
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (end > line) {
            if (!c2 || n == PSPAWN_CG_MAX || c1 - line >= (long)sizeof h[n].id ||
                c2 - c1 - 1 >= (long)sizeof h[n].ctl || end - c2 - 1 >= PATH_MAX || c2[1] != '/')
                return -1;
            snprintf(h[n].id, sizeof h[n].id, "%.*s", (int)(c1 - line), line);
            snprintf(h[n].ctl, sizeof h[n].ctl, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
            snprintf(h[n].path, sizeof h[n].path, "%.*s", (int)(end - c2 - 1), c2 + 1);
            n++;
        }
        line = *end ? end + 1 : end;
    }
    return n;
}

/* Whether the comma-separated list SET holds every item of WANT. */
static int has_all(const char *set, const char *want)
{
    for (const char *w = want; *w;) {
        size_t len = strcspn(w, ",");
        int found = 0;
        for (const char *s = set; *s && !found;) {
            size_t sl = strcspn(s, ",");
            found = sl == len && strncmp(s, w, len) == 0;
            s += sl + (s[sl] == ',');
        }
        if (!found)
            return 0;
        w += len + (w[len] == ',');
    }
    return 1;
}

/* A mountinfo field as the path it names, in place: the kernel writes a
 * space, tab, newline or backslash in a mount point or root as \ and three
 * octal digits (\040 for a space), so that fields stay split by spaces. */
static void unescape_mount_field(char *s)
{
    char *w = s;
    for (const char *r = s; *r; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
            r += 4;
        } else {
            *w = *r++;
        }
    }
    *w = '\0';
}

/* The mount of hierarchy H in MOUNTINFO: its mount point and root.
 * Returns 0 if found. */
static int find_mount(const char *mountinfo, const struct hier *h, char *point, char *root)
{
    int v2 = h->ctl[0] == '\0';
    for (const char *line = mountinfo; line && *line;) {
        const char *end = strchrnul(line, '\n');
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        line = *end ? end + 1 : end;
        /* id parent maj:min root point opts [optional...] - type source superopts */
        char mroot[PATH_MAX], mpoint[PATH_MAX];
        if (sscanf(buf, "%*s %*s %*s %4095s %4095s", mroot, mpoint) != 2)
            continue;
        const char *dash = strstr(buf, " - ");
        if (!dash)
            continue;
        char type[64], source[256], super[1024];
        if (sscanf(dash + 3, "%63s %255s %1023s", type, source, super) != 3)
            continue;
        if (v2 ? strcmp(type, "cgroup2") != 0
               : strcmp(type, "cgroup") != 0 || !has_all(super, h->ctl))
            continue;
        unescape_mount_field(mpoint);
        unescape_mount_field(mroot);
        strcpy(point, mpoint);
        strcpy(root, mroot);
        return 0;
    }
    return -1;
}

/* Whether path P (LEN bytes) has a ".." component: a cgroup outside the
 * reader's cgroup namespace, never one of a job's. */
static int has_dotdot(const char *p, int len)
{
    for (int i = 0; i + 2 <= len; i++)
        if (p[i] == '.' && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
            (i + 2 == len || p[i + 2] == '/'))
            return 1;
    return 0;
}

int pspawn_cg_moves(const char *to, const char *from, const char *mountinfo,
                    char paths[][PATH_MAX])
{
    static struct hier t[PSPAWN_CG_MAX], f[PSPAWN_CG_MAX];
    int nt = parse_cgroup(to, t), nf = parse_cgroup(from, f);
    if (nt < 0 || nf < 0)
        return -1;
    int n = 0;
    for (int i = 0; i < nt; i++) {
        const struct hier *src = NULL;
        for (int j = 0; j < nf && !src; j++)
            if (strcmp(t[i].id, f[j].id) == 0 && strcmp(t[i].ctl, f[j].ctl) == 0)
                src = &f[j];
        if (src && strcmp(src->path, t[i].path) == 0)
            continue;   /* already there */
        char point[PATH_MAX], root[PATH_MAX];
        if (find_mount(mountinfo, &t[i], point, root) < 0)
            continue;   /* not mounted here: nothing anybody can move */
        const char *rel = t[i].path;
        size_t rl = strlen(root);
        if (strcmp(root, "/") != 0) {
            if (strncmp(rel, root, rl) != 0 || (rel[rl] != '/' && rel[rl] != '\0'))
                continue;   /* outside what is mounted */
            rel += rl;
        }
        if (has_dotdot(rel, (int)strlen(rel)))
            continue;   /* outside the reader's cgroup namespace */
        int len = snprintf(paths[n], PATH_MAX, "%s%s%scgroup.procs", point,
                           strcmp(rel, "/") == 0 ? "" : rel, "/");
        if (len >= PATH_MAX)
            continue;
        n++;
    }
    return n;
}

int pspawn_cg2_dir(const char *self, const char *mountinfo, char *dir)
{
    /* The v2 line alone ("0::/path"), moved from nowhere: its
     * cgroup.procs. */
    const char *line = strstr(self, "0::/");
    if (line && line != self && line[-1] != '\n')
        line = NULL;
    char v2[PATH_MAX + 8], paths[1][PATH_MAX];
    if (!line || snprintf(v2, sizeof v2, "%.*s", (int)strcspn(line, "\n"), line) >=
                     (int)sizeof v2 || pspawn_cg_moves(v2, "", mountinfo, paths) != 1)
        return -1;
    char *slash = strrchr(paths[0], '/');
    *slash = 0;
    snprintf(dir, PATH_MAX, "%s", paths[0]);
    return 0;
}

/* One line of /proc/PID/cgroup text: "ID:CONTROLLERS:PATH". */
struct cg_line {
    const char *id, *ctl, *path;
    int id_len, ctl_len, path_len;
};

/* The next line at *AT into *L: 1, 0 at the end, -1 for a line that is
 * not one. */
static int next_line(const char **at, struct cg_line *l)
{
    const char *line = *at;
    while (*line == '\n')
        line++;
    if (!*line)
        return 0;
    const char *end = strchrnul(line, '\n');
    const char *c1 = memchr(line, ':', (size_t)(end - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if (!c2 || c2[1] != '/' || end - c2 - 1 >= PATH_MAX)
        return -1;
    *l = (struct cg_line){ line, c1 + 1, c2 + 1, (int)(c1 - line), (int)(c2 - c1 - 1),
                           (int)(end - c2 - 1) };
    *at = end;
    return 1;
}

int pspawn_cg_job_extern(const char *self, char *out, size_t len)
{
    struct cg_line l;
    const char *at = self;
    size_t used = 0;
    int n = 0, r;
    if (len)
        out[0] = '\0';
    while ((r = next_line(&at, &l)) > 0) {
        /* The step's folder: the deepest component that starts with
         * "step_"; the job's is its parent, whatever its name. */
        int step = -1;
        for (int i = 0; i + 7 <= l.path_len; i++)
            if (l.path[i] == '/' && memcmp(l.path + i + 1, "step_", 5) == 0 && l.path[i + 6] != '/')
                step = i;
        if (step <= 0 || step + 12 >= PATH_MAX || has_dotdot(l.path, l.path_len))
            continue;
        int w = snprintf(out + used, len - used, "%.*s:%.*s:%.*s/step_extern\n", l.id_len, l.id,
                         l.ctl_len, l.ctl, step, l.path);
        if (w < 0 || (size_t)w >= len - used)
            return -1;
        used += (size_t)w;
        n++;
    }
    return r < 0 ? -1 : n;
}

int pspawn_cg_within(const char *cgroup, const char *within)
{
    struct cg_line p, w;
    const char *at = cgroup;
    int r;
    while ((r = next_line(&at, &p)) > 0) {
        if (has_dotdot(p.path, p.path_len))
            continue;
        const char *wat = within;
        while (next_line(&wat, &w) > 0) {
            if (w.id_len != p.id_len || memcmp(w.id, p.id, (size_t)p.id_len) != 0 ||
                w.ctl_len != p.ctl_len || memcmp(w.ctl, p.ctl, (size_t)p.ctl_len) != 0 ||
                p.path_len < w.path_len || memcmp(p.path, w.path, (size_t)w.path_len) != 0)
                continue;
            if (p.path_len == w.path_len || p.path[w.path_len] == '/')
                return 1;
        }
    }
    return 0;
}
