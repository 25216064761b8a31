/*
 * ctorlib - a library whose constructor, run before the proxy's (the
 * loader runs a program's libraries' constructors before a preloaded
 * library's), changes what PSPAWN_TEST_CTOR says:
 *   spawn   runs system("exit 0"): /bin/sh inherits the zygote's
 *           variables and channels, and must not take the zygote's place
 *   rlimit  lowers RLIMIT_CORE to 0 (soft and hard), as programs that
 *           must not dump core do; raising it again needs privilege
 *   umask   sets umask 077
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

int ctorlib_system_status = -1;

__attribute__((constructor)) static void ctorlib_init(void)
{
    const char *what = getenv("PSPAWN_TEST_CTOR");

    if (!what)
        return;
    if (strstr(what, "spawn"))
        ctorlib_system_status = system("exit 0");
    if (strstr(what, "rlimit")) {
        struct rlimit rl = { 0, 0 };
        setrlimit(RLIMIT_CORE, &rl);
    }
    if (strstr(what, "umask"))
        umask(077);
}
