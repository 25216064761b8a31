/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which environment variables the dynamic loader and libc read before
 * main: a task forked from a zygote has the zygote's values of them, so
 * every front door compares them (the library, the stand-in, and the
 * SPANK plugin when it picks a job's zygote for a step).
 */
#ifndef PSPAWN_LOADERENV_H
#define PSPAWN_LOADERENV_H

/* Whether "K=V" is read by the dynamic loader or libc before main: such a
 * variable must be the same in a task as in its zygote. */
int pspawn_loader_var(const char *kv);

#endif
