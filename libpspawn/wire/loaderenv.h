/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which environment variables the dynamic loader, libc and libraries'
 * constructors read before main: a task forked from a zygote has the
 * zygote's values of them, so every front door compares them (the
 * library, the stand-in, the interception library's count, and the SPANK
 * plugin when it picks a job's zygote for a step).
 */
#ifndef PSPAWN_LOADERENV_H
#define PSPAWN_LOADERENV_H

/* Names (':' between them, a trailing '*' for a prefix) of more variables
 * that a library's constructor reads: a user's own additions. */
#define PSPAWN_ENV_CTOR_VARS "PSPAWN_CTOR_VARS"

/* Whether "K=V" is read before main, by the dynamic loader, libc, a
 * known library's constructor (stdbuf's) or one PSPAWN_CTOR_VARS names:
 * such a variable must be the same in a task as in its zygote. */
int pspawn_loader_var(const char *kv);
/* The same with PSPAWN_CTOR_VARS's value given (CTOR_VARS, may be NULL):
 * for a loop over a whole environment, which then looks it up once. */
int pspawn_loader_var_listed(const char *kv, const char *ctor_vars);

#endif
