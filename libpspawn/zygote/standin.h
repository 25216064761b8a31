/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stand-in mode's parts (standin.c serves the stand-ins; standin-subs.c
 * keeps the root's sub-zygotes).
 */
#ifndef PSPAWN_ZYGOTE_STANDIN_H
#define PSPAWN_ZYGOTE_STANDIN_H

#include <poll.h>
#include <sys/types.h>

/* The root: its starter sends its fan-out, or hangs up.  1 in a new
 * sub-zygote (which is to start serving afresh), else 0. */
int standin_await_fanout(void);
/* The root's sub-zygotes still running. */
int standin_subs_alive(void);
/* Whether a sub-zygote still has stand-ins to serve, or is about to. */
int standin_subs_busy(void);
/* The root forwarded a stand-in to group G. */
void standin_sub_forwarded(int g);
/* A sub-zygote: a stand-in came from the root. */
void standin_sub_received(void);
/* A sub-zygote: its load (CLIENTS: stand-ins connected or with a task
 * running) told to the root, when it changed. */
void standin_tell_load(int clients);
/* What sub-zygote G says (EV: its channel's poll events): its ready
 * message, its load; or it died (its share is the root's now: what it
 * had queued went with it, and those stand-ins exec instead). */
void standin_hear_sub(int g, short ev);
/* The root is done serving: each sub-zygote's channel shut for writing,
 * not closed: closed with the sub's load reports unread in it, the
 * kernel would give the sub ECONNRESET ahead of the stand-ins forwarded to
 * it and still queued, which it must serve first (it reads them, then the
 * end of the file; the channel is closed once it exits). */
void standin_subs_drain(void);
/* The root reaped PID: if a sub-zygote, its group is the root's now. */
void standin_sub_reaped(pid_t pid);
/* The root, idle, imported more (between steps): its sub-zygotes, which
 * hold what it held when it made them, end and are made again from the
 * fan-out it kept.  1 in a new sub-zygote, else 0. */
int standin_subs_remake(void);

#endif
