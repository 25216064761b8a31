/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The go handshake on a request's shared memfd (protocol.h): a task waits
 * on its word go[i] before it runs; its zygote (or, for a stand-in's task,
 * the stand-in) releases it; a launcher that gave up on the zygote cancels
 * it.  Both sides use compare-and-swap, so that exactly one of release and
 * cancel wins, and the waker makes a system call only for a task that is
 * asleep.
 */
#ifndef PSPAWN_GO_H
#define PSPAWN_GO_H

#include <stdint.h>

/* Set *GO to V (GO_RUN or GO_CANCEL) if it still holds its task (GO_HOLD or
 * GO_WAITING), and wake the task if it sleeps.  Returns 1 if it did, 0 if
 * the task was released or cancelled already (*GO says which). */
int pspawn_go_swap(uint32_t *go, uint32_t v);

/* In the task: wait until *GO is released or cancelled, or until GONE()
 * (checked every second) says the one who would release it is gone.
 * Returns GO_RUN, GO_CANCEL, or GO_HOLD when GONE() said so.
 * Async-signal-safe. */
uint32_t pspawn_go_wait(uint32_t *go, int (*gone)(const void *arg), const void *arg);

struct wire_go;

/* In a task of a direct zygote (or in the zygote, for a task it could not
 * clone): say in slot INDEX how its setup ended (SETUP_READY or
 * SETUP_FAILED), then count it out of the request.  Returns 1 if that
 * made the count zero: the caller writes the request's record. */
int pspawn_go_arrive(struct wire_go *go, uint32_t index, uint32_t setup);

/* In the zygote, once it has cloned what it could and let go of the
 * request: count itself out.  Returns 1 if that made the count zero. */
int pspawn_go_count_out(struct wire_go *go);

#endif
