/*
 * noinotify - preloaded into a zygote by tests/lifecycle.c: inotify_init1
 * fails as it does for a user who has used up fs.inotify.max_user_instances
 * (EMFILE), so that the zygote watches its libraries without it.
 */
#include <errno.h>

int inotify_init1(int flags)
{
    (void)flags;
    errno = EMFILE;
    return -1;
}
