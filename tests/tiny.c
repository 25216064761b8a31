/*
 * libtiny - a library of one page of text, for tests/prefault.sh: its
 * constructor runs in the zygote (or in an exec'd task), never in a task
 * forked from a zygote, so whether its text is mapped in such a task at
 * main() shows whether the task mapped the zygote's small text mappings
 * itself (libpspawn's prefault).
 */
int pspawn_tiny_value(void);

static volatile int tiny_ready;

__attribute__((constructor)) static void tiny_init(void)
{
    tiny_ready = 1;
}

int pspawn_tiny_value(void)
{
    return tiny_ready ? 42 : 0;
}
