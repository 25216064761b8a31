/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What park.c gives the rest of the zygote (the files of libpspawn/zygote/), for
 * the targets that link them: park.c itself is left out, since it wraps
 * __libc_start_main and would park the fuzzer.  The parked state is the
 * target's to fill in.
 */
#ifndef TESTS_FUZZ_ZYGOTE_H
#define TESTS_FUZZ_ZYGOTE_H

#include <stdlib.h>

#include "zygote.h"

struct parked parked;

int zygote_send_ready(int sock, int status, int detail)
{
    (void)sock, (void)status, (void)detail;
    return 0;
}

void zygote_rearm_itimers(void) {}
void zygote_record_handlers(void) {}

struct task_start zygote_park(void)
{
    abort();    /* only from __libc_start_main */
}

#endif
