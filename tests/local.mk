# Tests of the core: TAP programs and scripts, run by `make check`.
#
# Two kinds of programs:
#  - programs that are launched (probe, task, threaded, timers): plain, never
#    instrumented, since a sanitizer runtime must come first in a process
#    and the zygote has the proxy preloaded;
#  - drivers that launch them through the API (parity-api, children,
#    fallback, errors, zygote-kill, soak): built like the launcher, so with
#    ASan and UBSan in a --enable-sanitizers build; -no-install makes them
#    real executables in tests/ rather than libtool wrappers.

launched_cflags_common = -std=c11 $(WARN_CFLAGS)
driver_link_flags = $(AM_LDFLAGS) -no-install

check_PROGRAMS += tests/probe tests/task tests/task-static tests/task-v2 tests/threaded \
	tests/timers tests/once

tests_probe_SOURCES = tests/probe.c
tests_probe_CFLAGS = $(launched_cflags_common)
tests_probe_LDFLAGS =

tests_task_SOURCES = tests/task.c
tests_task_CFLAGS = $(launched_cflags_common)
tests_task_LDFLAGS =

# A static binary: the zygote cannot serve it (no dynamic loader to preload
# the proxy into).
tests_task_static_SOURCES = tests/task.c
tests_task_static_CFLAGS = $(launched_cflags_common)
tests_task_static_LDFLAGS = -all-static

# Another version of the same program, to replace it on disk.
tests_task_v2_SOURCES = tests/task.c
tests_task_v2_CPPFLAGS = $(AM_CPPFLAGS) -DTASK_VERSION=2
tests_task_v2_CFLAGS = $(launched_cflags_common)
tests_task_v2_LDFLAGS =

tests_threaded_SOURCES = tests/threaded.c tests/append-pid.h
tests_threaded_CFLAGS = $(launched_cflags_common) -pthread
tests_threaded_LDFLAGS = -pthread

tests_once_SOURCES = tests/once.c
tests_once_CFLAGS = $(launched_cflags_common)
tests_once_LDFLAGS =

tests_timers_SOURCES = tests/timers.c tests/append-pid.h
tests_timers_CFLAGS = $(launched_cflags_common)
tests_timers_LDFLAGS =

# A one-page library and a program that needs it without running it
# (prefault.sh).  -rpath makes libtool build it shared.
check_LTLIBRARIES = tests/libtiny.la
tests_libtiny_la_SOURCES = tests/tiny.c
tests_libtiny_la_CFLAGS = $(launched_cflags_common)
tests_libtiny_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version

# A library whose constructor starts a thread, and a program that dlopens
# a library after main (tests/preload.sh).
check_LTLIBRARIES += tests/libthreadlib.la
tests_libthreadlib_la_SOURCES = tests/threadlib.c
tests_libthreadlib_la_CFLAGS = $(launched_cflags_common)
tests_libthreadlib_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version
tests_libthreadlib_la_LIBADD = -lpthread

check_PROGRAMS += tests/dlopener
tests_dlopener_SOURCES = tests/dlopener.c
tests_dlopener_CFLAGS = $(launched_cflags_common)
# Its DT_RUNPATH names the tests' libraries: a bare name is found there.
tests_dlopener_LDFLAGS = -no-install -Wl,--enable-new-dtags,-rpath,$(abs_builddir)/tests/.libs

check_PROGRAMS += tests/textmap
tests_textmap_SOURCES = tests/textmap.c
tests_textmap_CFLAGS = $(launched_cflags_common)
tests_textmap_LDFLAGS = -no-install
tests_textmap_LDADD = tests/libtiny.la

# A program whose library's constructor starts a shell, lowers a limit or
# sets a umask (ctor-state).
check_LTLIBRARIES += tests/libctorlib.la
tests_libctorlib_la_SOURCES = tests/ctorlib.c
tests_libctorlib_la_CFLAGS = $(launched_cflags_common)
tests_libctorlib_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version

check_PROGRAMS += tests/ctors
tests_ctors_SOURCES = tests/ctors.c
tests_ctors_CFLAGS = $(launched_cflags_common)
tests_ctors_LDFLAGS = -no-install
tests_ctors_LDADD = tests/libctorlib.la

check_PROGRAMS += tests/ctor-state
tests_ctor_state_SOURCES = tests/ctor-state.c tests/tap.h
tests_ctor_state_LDADD = libpspawn/libpspawn.la
tests_ctor_state_LDFLAGS = $(driver_link_flags)

check_PROGRAMS += tests/parity-api tests/children tests/fallback tests/errors tests/zygote-kill \
	tests/soak tests/fanout tests/python-fallback

tests_parity_api_SOURCES = tests/parity-api.c tests/tap.h
tests_parity_api_LDADD = libpspawn/libpspawn.la
tests_parity_api_LDFLAGS = $(driver_link_flags)

tests_children_SOURCES = tests/children.c tests/tap.h
tests_children_LDADD = libpspawn/libpspawn.la
tests_children_LDFLAGS = $(driver_link_flags)

tests_fallback_SOURCES = tests/fallback.c tests/tap.h
tests_fallback_LDADD = libpspawn/libpspawn.la
tests_fallback_LDFLAGS = $(driver_link_flags)

tests_python_fallback_SOURCES = tests/python-fallback.c tests/tap.h
tests_python_fallback_LDADD = libpspawn/libpspawn.la
tests_python_fallback_LDFLAGS = $(driver_link_flags)

tests_errors_SOURCES = tests/errors.c tests/tap.h
tests_errors_LDADD = libpspawn/libpspawn.la
tests_errors_LDFLAGS = $(driver_link_flags)

tests_zygote_kill_SOURCES = tests/zygote-kill.c tests/tap.h
tests_zygote_kill_CFLAGS = $(AM_CFLAGS) -pthread
tests_zygote_kill_LDADD = libpspawn/libpspawn.la
tests_zygote_kill_LDFLAGS = $(driver_link_flags) -pthread

tests_fanout_SOURCES = tests/fanout.c tests/tap.h tests/procs.h
tests_fanout_LDADD = libpspawn/libpspawn.la
tests_fanout_LDFLAGS = $(driver_link_flags)

tests_soak_SOURCES = tests/soak.c tests/tap.h
tests_soak_LDADD = libpspawn/libpspawn.la
tests_soak_LDFLAGS = $(driver_link_flags)

# Fan-out's groups and dispatch on fake topologies (hwloc).
if HAVE_HWLOC
check_PROGRAMS += tests/topology
TESTS += tests/topology
tests_topology_SOURCES = tests/topology.c tests/tap.h libpspawn/launcher/topology.c
tests_topology_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
tests_topology_LDADD = libpspawn/libpspawn-wire.la $(HWLOC_LIBS)
tests_topology_LDFLAGS = $(driver_link_flags)
endif

# Real NUMA nodes, in a KVM guest (tests/vm/numa-vm.sh, run by tests/run,
# not by make check): built here, run there.
if HAVE_NUMA
check_PROGRAMS += tests/vm/numa-task tests/vm/numa-vm
tests_vm_numa_task_SOURCES = tests/vm/numa-task.c
tests_vm_numa_task_CFLAGS = $(launched_cflags_common)
tests_vm_numa_task_LDADD = $(NUMA_LIBS)
tests_vm_numa_task_LDFLAGS =
tests_vm_numa_vm_SOURCES = tests/vm/numa-vm.c tests/tap.h
tests_vm_numa_vm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_vm_numa_vm_LDADD = libpspawn/libpspawn.la $(NUMA_LIBS)
tests_vm_numa_vm_LDFLAGS = $(driver_link_flags)
endif
EXTRA_DIST += tests/vm/numa-vm.sh

# Scripts: POSIX sh, run by $(SHELL); shared helpers in tests/taplib.sh.
SH_LOG_COMPILER = $(SHELL)

# The longest first, so that make -j spreads them.
TESTS += \
	tests/zygote-kill \
	tests/fanout \
	tests/cli-timeout.sh \
	tests/standin.sh \
	tests/soak \
	tests/cli-signals.sh \
	tests/parity-api \
	tests/parity.sh \
	tests/parity-fanout.sh \
	tests/children \
	tests/fallback \
	tests/ctor-state \
	tests/errors \
	tests/cli-errors.sh \
	tests/cli-exit.sh \
	tests/cli-options.sh \
	tests/prefault.sh \
	tests/python-warm.sh \
	tests/python-fallback \
	tests/preload.sh

EXTRA_DIST += \
	tests/preload.sh \
	tests/python-warm.sh \
	tests/python/probe.py \
	tests/fixtures/4nodes-2allowed.xml \
	tests/prefault.sh \
	tests/taplib.sh \
	tests/host-slurm.sh \
	tests/standin.sh \
	tests/parity.sh \
	tests/parity-fanout.sh \
	tests/cli-errors.sh \
	tests/cli-exit.sh \
	tests/cli-signals.sh \
	tests/cli-options.sh \
	tests/cli-timeout.sh

# pspawn_attr_setpidhook: the pid before the task can exit (a launcher
# that reaps with waitpid(-1) elsewhere, as prted does).
check_PROGRAMS += tests/pidhook
tests_pidhook_SOURCES = tests/pidhook.c tests/tap.h
tests_pidhook_CFLAGS = $(AM_CFLAGS) -pthread
tests_pidhook_LDADD = libpspawn/libpspawn.la
tests_pidhook_LDFLAGS = $(driver_link_flags) -pthread
TESTS += tests/pidhook

# A launcher that sends its zygote malformed requests (protocol.h's
# sealed memfds and go block), and REQ_LAUNCHER_GO.
check_PROGRAMS += tests/wire-hostile
tests_wire_hostile_SOURCES = tests/wire-hostile.c tests/tap.h
tests_wire_hostile_LDADD = libpspawn/libpspawn-wire.la
tests_wire_hostile_LDFLAGS = $(driver_link_flags)
TESTS += tests/wire-hostile

# The launcher's hardening: pidfds of pspawn_n_ex, E2BIG by the task's
# stack limit, a changed session with setpgroup, failed clones exec'd,
# PSPAWN_TIMEOUT.
check_PROGRAMS += tests/hardening
tests_hardening_SOURCES = tests/hardening.c tests/tap.h
tests_hardening_LDADD = libpspawn/libpspawn.la
tests_hardening_LDFLAGS = $(driver_link_flags)
TESTS += tests/hardening

# Zygote lifecycle (issue 19: an orphaned zygote, the terminal's signals,
# the program and its libraries replaced on disk, constructor fds,
# /proc/PID/environ): tests/lifecycle drives it through the API (and
# tests/lifecycle-libs, for a library replaced on disk),
# tests/lifecycle-standin.sh through the stand-in shim.  lifeprog is the
# program launched (with lifelib, built again as lifelib2 to rename over
# it, and statically as lifeprog-static to swap the program itself);
# noinotify takes inotify away from a zygote.
check_LTLIBRARIES += tests/liblifelib.la tests/liblifelib2.la tests/libnoinotify.la
tests_libnoinotify_la_SOURCES = tests/noinotify.c
tests_libnoinotify_la_CFLAGS = $(launched_cflags_common)
tests_libnoinotify_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version
tests_liblifelib_la_SOURCES = tests/lifelib.c
tests_liblifelib_la_CFLAGS = $(launched_cflags_common)
tests_liblifelib_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version
tests_liblifelib2_la_SOURCES = tests/lifelib.c
tests_liblifelib2_la_CPPFLAGS = $(AM_CPPFLAGS) -DLIFELIB_VERSION=2
tests_liblifelib2_la_CFLAGS = $(launched_cflags_common)
tests_liblifelib2_la_LDFLAGS = -rpath $(abs_builddir)/tests/.libs -avoid-version

check_PROGRAMS += tests/lifeprog tests/lifeprog-static tests/lifecycle tests/lifecycle-libs
tests_lifeprog_SOURCES = tests/lifeprog.c
tests_lifeprog_CFLAGS = $(launched_cflags_common)
# DT_RUNPATH, which LD_LIBRARY_PATH overrides: the test renames a copy.
tests_lifeprog_LDFLAGS = -no-install -Wl,--enable-new-dtags
tests_lifeprog_LDADD = tests/liblifelib.la
tests_lifeprog_static_SOURCES = tests/lifeprog.c tests/lifelib.c
tests_lifeprog_static_CFLAGS = $(launched_cflags_common)
tests_lifeprog_static_LDFLAGS = -all-static
tests_lifecycle_SOURCES = tests/lifecycle.c tests/lifecycle.h tests/tap.h
tests_lifecycle_LDADD = libpspawn/libpspawn.la -ldl
tests_lifecycle_LDFLAGS = $(driver_link_flags)
tests_lifecycle_libs_SOURCES = tests/lifecycle-libs.c tests/lifecycle.h tests/tap.h
tests_lifecycle_libs_LDADD = libpspawn/libpspawn.la
tests_lifecycle_libs_LDFLAGS = $(driver_link_flags)

TESTS += tests/lifecycle tests/lifecycle-libs tests/lifecycle-standin.sh
EXTRA_DIST += tests/lifecycle-standin.sh

# The stand-in path's hardening (shim, stand-in zygote); case 7 of
# standin.sh on its own, and in a loop (STANDIN_LOOP_RUNS, default 500).
TESTS += tests/standin-hardening.sh
EXTRA_DIST += tests/standin-hardening.sh tests/standin-case7.sh tests/standin-case7-loop.sh

# Transparent interception (pspawn --intercept): a launcher of every kind
# and the task it starts, both plain (the interception library is
# preloaded into the launcher, where a sanitizer runtime could not come
# first).
check_PROGRAMS += tests/intercept-launcher tests/intercept-task
tests_intercept_launcher_SOURCES = tests/intercept-launcher.c
tests_intercept_launcher_CFLAGS = $(launched_cflags_common) -pthread
tests_intercept_launcher_LDFLAGS = -pthread
tests_intercept_task_SOURCES = tests/intercept-task.c
tests_intercept_task_CFLAGS = $(launched_cflags_common)
tests_intercept_task_LDFLAGS =
TESTS += tests/intercept.sh tests/intercept-launchers.sh
EXTRA_DIST += tests/intercept.sh tests/intercept-launchers.sh

# The launch session (pspawn_session_*): asynchronous submit, the fd,
# per-task states, cancel, zygotes killed mid-session, 10,000 tasks.
check_PROGRAMS += tests/session
tests_session_SOURCES = tests/session.c tests/session.h tests/tap.h tests/procs.h
tests_session_LDADD = libpspawn/libpspawn.la
tests_session_LDFLAGS = $(driver_link_flags)
TESTS += tests/session
# Spawn-site priorities (pspawn --intercept --priority), with the same two.
TESTS += tests/intercept-priority.sh
EXTRA_DIST += tests/intercept-priority.sh

# Process-in-Process (mode=pip): a task program built for it (a PIE that
# exports main, no TLS of its own), with the task-side calls compiled in
# as they are (uninstrumented, as every launched program); the same
# program not PIE, with TLS, and with $ORIGIN in its RUNPATH, which a PiP
# root refuses.
pip_task_flags = -fPIE
pip_task_sources = tests/pip-task.c libpspawn/launcher/pip-peer.c
check_PROGRAMS += tests/pip-task tests/pip-task-nopie tests/pip-task-tls tests/pip-task-origin
tests_pip_task_SOURCES = $(pip_task_sources)
tests_pip_task_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_pip_task_LDFLAGS = -pie -rdynamic -ldl
tests_pip_task_nopie_SOURCES = $(pip_task_sources)
tests_pip_task_nopie_CFLAGS = $(launched_cflags_common) -fno-pie
tests_pip_task_nopie_LDFLAGS = -no-pie -rdynamic -ldl
tests_pip_task_tls_SOURCES = $(pip_task_sources) tests/pip-tls.c
tests_pip_task_tls_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_pip_task_tls_LDFLAGS = -pie -rdynamic -ldl
tests_pip_task_origin_SOURCES = $(pip_task_sources)
tests_pip_task_origin_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_pip_task_origin_LDFLAGS = -pie -rdynamic -ldl -Wl,-rpath,'$$ORIGIN/../lib'
TESTS += tests/pip.sh
EXTRA_DIST += tests/pip.sh
