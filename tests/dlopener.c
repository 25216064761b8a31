/*
 * dlopener LIB [global] [exit|kill]: dlopen LIB after main, as plugin
 * loaders and Python imports do, and say whether it was there already
 * ("preloaded": its zygote loaded it) or had to be loaded ("loaded"), then
 * end normally, by _exit, or by SIGKILL.  A LIB without a slash is looked
 * up as glibc looks it up for this program (its DT_RUNPATH included).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int mode = RTLD_NOW | (argc > 2 && !strcmp(argv[2], "global") ? RTLD_GLOBAL : RTLD_LOCAL);
    void *there = dlopen(argv[1], RTLD_LAZY | RTLD_NOLOAD);
    void *h = dlopen(argv[1], mode);
    if (!h) {
        printf("failed: %s\n", dlerror());
        return 1;
    }
    int (*value)(void) = (int (*)(void))dlsym(h, "pspawn_tiny_value");
    printf("%s %d\n", there ? "preloaded" : "loaded", value ? value() : -1);
    fflush(stdout);
    const char *end = argc > 3 ? argv[3] : "";
    if (!strcmp(end, "exit"))
        _exit(0);
    if (!strcmp(end, "kill"))
        kill(getpid(), SIGKILL);
    return 0;
}
