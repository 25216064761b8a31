/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reuse-pid - root's part of tests/e2e/hostile.sh: the pid of a job
 * zygote's listener given to another user's process, while the name is
 * still held, as a user could arrange it by cycling pids.
 *
 *   reuse-pid NAME HOLDER-UID TAKER-UID
 *       the listener of abstract NAME hands its socket to a process of
 *       HOLDER-UID (pidfd_getfd), which keeps it, and is killed; a process
 *       of TAKER-UID takes its pid and sleeps 300 s: clone3's set_tid
 *       (Linux 5.5, CAP_SYS_ADMIN; a container's /proc/sys, and so
 *       ns_last_pid, is read-only), else ns_last_pid.  Prints "listener P
 *       holder H taker T" (T 0: the pid could not be had).
 *
 * Every wait has a limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pidfd.h"

/* The pid and fd of the listener of abstract NAME: by its socket's inode
 * in /proc/net/unix, then /proc/PID/fd. */
static int listener_of(const char *name, pid_t *pid, int *fd)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512], want[64] = "";
    while (f && !want[0] && fgets(line, sizeof line, f)) {
        char *at = strchr(line, '@');
        unsigned long inode, state;
        if (at && !strncmp(at + 1, name, strlen(name)) && strchr(" \n", at[1 + strlen(name)]) &&
            sscanf(line, "%*s %*s %*s %*s %*s %lx %lu", &state, &inode) == 2 && state == 1)
            snprintf(want, sizeof want, "socket:[%lu]", inode);
    }
    if (f)
        fclose(f);
    for (pid_t p = 2; want[0] && p < 4194304; p++) {
        char dir[64], link[64], path[96];
        snprintf(dir, sizeof dir, "/proc/%d/fd", (int)p);
        for (int i = 0; i < 256; i++) {
            snprintf(path, sizeof path, "%s/%d", dir, i);
            ssize_t n = readlink(path, link, sizeof link - 1);
            if (n < 0) {
                if (errno == ENOENT && i == 0 && access(dir, F_OK) < 0)
                    break;
                continue;
            }
            link[n] = '\0';
            if (!strcmp(link, want)) {
                *pid = p;
                *fd = i;
                return 0;
            }
        }
    }
    return -1;
}

/* In the child that took the pid: a process of UID's, sleeping. */
static void __attribute__((noreturn)) be_taker(uid_t uid)
{
    if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
        _exit(1);
    setsid();
    execlp("sleep", "sleep", "300", (char *)NULL);
    _exit(127);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 4) {
        fprintf(stderr, "usage: reuse-pid NAME HOLDER-UID TAKER-UID\n");
        return 2;
    }
    uid_t holder_uid = (uid_t)atoi(argv[2]), taker_uid = (uid_t)atoi(argv[3]);
    pid_t p;
    int pfd_no;
    if (listener_of(argv[1], &p, &pfd_no) < 0) {
        printf("listener 0 holder 0 taker 0\n");
        return 1;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, p, 0);
    int fd = pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pidfd, pfd_no, 0) : -1;
    pid_t h = fd >= 0 ? fork() : -1;
    if (h == 0) {
        if (setresgid(holder_uid, holder_uid, holder_uid) < 0 ||
            setresuid(holder_uid, holder_uid, holder_uid) < 0)
            _exit(1);
        alarm(300);
        for (;;)
            pause();
    }
    if (fd >= 0)
        close(fd);
    kill(p, SIGKILL);
    for (int i = 0; i < 500 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0; i++) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    /* reaped by its parent (tini, where it was orphaned): its pid is free */
    pid_t taker = 0;
    for (int tries = 0; tries < 100 && !taker; tries++) {
        pid_t want = p;
        struct clone_args ca = { .exit_signal = SIGCHLD, .set_tid = (uint64_t)(uintptr_t)&want,
                                 .set_tid_size = 1 };
        long t = syscall(SYS_clone3, &ca, sizeof ca);
        if (t == 0)
            be_taker(taker_uid);
        if (t == p)
            taker = (pid_t)t;
        else if (errno != EEXIST)
            break;      /* no set_tid here: try ns_last_pid */
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);   /* not reaped yet */
    }
    for (int tries = 0; tries < 200 && !taker; tries++) {
        char last[32];
        snprintf(last, sizeof last, "%d", (int)p - 1);
        int nf = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
        if (nf < 0 || write(nf, last, strlen(last)) < 0) {
            if (nf >= 0)
                close(nf);
            break;
        }
        close(nf);
        pid_t t = fork();
        if (t == 0)
            be_taker(taker_uid);
        if (t == p) {
            taker = t;
        } else if (t > 0) {
            kill(t, SIGKILL);
            waitpid(t, NULL, 0);
            struct timespec ts = { 0, 5 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    printf("listener %d holder %d taker %d\n", (int)p, (int)h, (int)taker);
    return taker ? 0 : 1;
}

