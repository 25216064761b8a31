# Tests of the core: TAP programs and scripts, run by `make check`.
#
# Two kinds of programs:
#  - programs that are launched (probe, task, threaded): plain, never
#    instrumented, since a sanitizer runtime must come first in a process
#    and the zygote has the proxy preloaded;
#  - drivers that launch them through the API (parity-api, fallback,
#    errors, zygote-kill, soak): built like the launcher, so with ASan and
#    UBSan in a --enable-sanitizers build; -no-install makes them real
#    executables in tests/ rather than libtool wrappers.

LAUNCHED_CFLAGS = -std=c11 $(WARN_CFLAGS)
DRIVER_LDFLAGS = $(AM_LDFLAGS) -no-install

check_PROGRAMS += tests/probe tests/task tests/task-static tests/task-v2 tests/threaded

tests_probe_SOURCES = tests/probe.c
tests_probe_CFLAGS = $(LAUNCHED_CFLAGS)
tests_probe_LDFLAGS =

tests_task_SOURCES = tests/task.c
tests_task_CFLAGS = $(LAUNCHED_CFLAGS)
tests_task_LDFLAGS =

# A static binary: the zygote cannot serve it (no dynamic loader to preload
# the proxy into).
tests_task_static_SOURCES = tests/task.c
tests_task_static_CFLAGS = $(LAUNCHED_CFLAGS)
tests_task_static_LDFLAGS = -all-static

# Another version of the same program, to replace it on disk.
tests_task_v2_SOURCES = tests/task.c
tests_task_v2_CPPFLAGS = $(AM_CPPFLAGS) -DTASK_VERSION=2
tests_task_v2_CFLAGS = $(LAUNCHED_CFLAGS)
tests_task_v2_LDFLAGS =

tests_threaded_SOURCES = tests/threaded.c
tests_threaded_CFLAGS = $(LAUNCHED_CFLAGS) -pthread
tests_threaded_LDFLAGS = -pthread

check_PROGRAMS += tests/parity-api tests/fallback tests/errors tests/zygote-kill tests/soak

tests_parity_api_SOURCES = tests/parity-api.c tests/tap.h
tests_parity_api_LDADD = libpspawn/libpspawn.la
tests_parity_api_LDFLAGS = $(DRIVER_LDFLAGS)

tests_fallback_SOURCES = tests/fallback.c tests/tap.h
tests_fallback_LDADD = libpspawn/libpspawn.la
tests_fallback_LDFLAGS = $(DRIVER_LDFLAGS)

tests_errors_SOURCES = tests/errors.c tests/tap.h
tests_errors_LDADD = libpspawn/libpspawn.la
tests_errors_LDFLAGS = $(DRIVER_LDFLAGS)

tests_zygote_kill_SOURCES = tests/zygote-kill.c tests/tap.h
tests_zygote_kill_CFLAGS = $(AM_CFLAGS) -pthread
tests_zygote_kill_LDADD = libpspawn/libpspawn.la
tests_zygote_kill_LDFLAGS = $(DRIVER_LDFLAGS) -pthread

tests_soak_SOURCES = tests/soak.c tests/tap.h
tests_soak_LDADD = libpspawn/libpspawn.la
tests_soak_LDFLAGS = $(DRIVER_LDFLAGS)

# Scripts: POSIX sh, run by $(SHELL); shared helpers in tests/taplib.sh.
SH_LOG_COMPILER = $(SHELL)

TESTS += \
	tests/parity-api \
	tests/parity.sh \
	tests/fallback \
	tests/errors \
	tests/cli-errors.sh \
	tests/zygote-kill \
	tests/cli-exit.sh \
	tests/cli-signals.sh \
	tests/cli-options.sh \
	tests/cli-timeout.sh \
	tests/soak

EXTRA_DIST += \
	tests/taplib.sh \
	tests/parity.sh \
	tests/cli-errors.sh \
	tests/cli-exit.sh \
	tests/cli-signals.sh \
	tests/cli-options.sh \
	tests/cli-timeout.sh
