/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-user table of spawn sites and their children's run times: the
 * file CACHE/sites (CACHE: $PSPAWN_CACHE_DIR, else $XDG_CACHE_HOME/pspawn,
 * else ~/.cache/pspawn), of a fixed size, mapped MAP_SHARED by every
 * process of every scope of the user, and changed with atomics only:
 * launchers are multi-threaded, and a prediction may run in a vfork child.
 *
 * Layout: a header (magic, version, size) and SITES_SLOTS entries of
 * three words: the site's key (0: free), its statistics (a tag of the
 * key, a saturating count of children and the exponentially weighted
 * mean of their run times in microseconds, weight 1/4 for the newest),
 * and when a child of the site was last recorded (seconds since the
 * epoch).  A site lives in one of SITES_PROBE slots from the one its key
 * hashes to.  When they are all taken, a new site takes the place of the
 * least recently recorded of them: the table stays at its size, and an
 * old site's history is what is lost.  Statistics and key are two words:
 * an update compares the tag in the statistics with its key's, so a slot
 * that changed site between the two is left alone.
 *
 * The file must be a regular file of the user's, mode 0600 (no group or
 * other bits), of the exact size, with the magic and version: else it is
 * ignored (nothing recorded, nothing predicted) and left as it is.  It is
 * created whole (a temporary file linked into place), never truncated.
 */
#ifndef PSPAWN_SITES_H
#define PSPAWN_SITES_H

#include <stdint.h>

#define SITES_MAGIC 0x70737374u     /* "psst" */
#define SITES_VERSION 1
#define SITES_SLOTS 4096
#define SITES_PROBE 16

struct site_slot {
    uint64_t key;
    uint64_t stats;     /* tag:16 count:8 mean_us:40 */
    uint64_t used;      /* s since the epoch */
};

struct sites_file {
    uint32_t magic, version, size, slots;
    uint64_t reserved[6];
    struct site_slot slot[SITES_SLOTS];
};

/* Map the user's table, creating it if there is none.  0; -1 with WHY
 * (a static string) when there is no table to use. */
int sites_open(const char **why);
/* The table's path (after sites_open), for messages. */
const char *sites_path(void);
/* Site KEY's history: 0, or -1 if none (COUNT children, MEAN_US).  Atomic
 * loads only: may run between vfork and exec. */
int sites_lookup(uint64_t key, unsigned *count, uint64_t *mean_us);
/* Record that a child of site KEY ran RUN_US microseconds; the new mean
 * and count into *MEAN_US, *COUNT.  0, or -1 (no table, or lost a race). */
int sites_record(uint64_t key, uint64_t run_us, uint64_t *mean_us, unsigned *count);

#endif
