/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The park, for the targets that link the files of libpspawn/zygote/:
 * start.c, which wraps __libc_start_main and would park the fuzzer, is
 * left out, and nothing may park.  The parked state (parked.c) is the
 * target's to fill in.
 */
#ifndef TESTS_FUZZ_ZYGOTE_H
#define TESTS_FUZZ_ZYGOTE_H

#include <stdlib.h>

#include "zygote.h"

struct task_start zygote_park(void)
{
    abort();    /* only from __libc_start_main */
}

#endif
