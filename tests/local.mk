# SPDX-License-Identifier: BSD-3-Clause
# Tests of the core: TAP programs and scripts, run by `make check`.
#
# Two kinds of programs:
#  - programs that are launched (probe, task, threaded, timers): plain, never
#    instrumented, since a sanitizer runtime must come first in a process
#    and the zygote has the proxy preloaded;
#  - drivers that launch them through the API (parity-api-*, children,
#    fallback-*, errors, zygote-kill, soak): built like the launcher, so with
#    ASan and UBSan in a --enable-sanitizers build; -no-install makes them
#    real executables in tests/ rather than libtool wrappers.

launched_cflags_common = -std=c11 $(WARN_CFLAGS)
driver_link_flags = $(AM_LDFLAGS) -no-install

check_PROGRAMS += tests/fixtures/probe tests/fixtures/task tests/fixtures/task-static tests/fixtures/task-v2 tests/fixtures/threaded \
	tests/fixtures/timers tests/fixtures/once

tests_fixtures_probe_SOURCES = tests/fixtures/probe.c
tests_fixtures_probe_CFLAGS = $(launched_cflags_common)
tests_fixtures_probe_LDFLAGS =

tests_fixtures_task_SOURCES = tests/fixtures/task.c
tests_fixtures_task_CFLAGS = $(launched_cflags_common)
tests_fixtures_task_LDFLAGS =

# A static binary: the zygote cannot serve it (no dynamic loader to preload
# the proxy into).
tests_fixtures_task_static_SOURCES = tests/fixtures/task.c
tests_fixtures_task_static_CFLAGS = $(launched_cflags_common)
tests_fixtures_task_static_LDFLAGS = -all-static

# Another version of the same program, to replace it on disk.
tests_fixtures_task_v2_SOURCES = tests/fixtures/task.c
tests_fixtures_task_v2_CPPFLAGS = $(AM_CPPFLAGS) -DTASK_VERSION=2
tests_fixtures_task_v2_CFLAGS = $(launched_cflags_common)
tests_fixtures_task_v2_LDFLAGS =

tests_fixtures_threaded_SOURCES = tests/fixtures/threaded.c tests/fixtures/append-pid.h
tests_fixtures_threaded_CFLAGS = $(launched_cflags_common) -pthread
tests_fixtures_threaded_LDFLAGS = -pthread

tests_fixtures_once_SOURCES = tests/fixtures/once.c
tests_fixtures_once_CFLAGS = $(launched_cflags_common)
tests_fixtures_once_LDFLAGS =

tests_fixtures_timers_SOURCES = tests/fixtures/timers.c tests/fixtures/append-pid.h
tests_fixtures_timers_CFLAGS = $(launched_cflags_common)
tests_fixtures_timers_LDFLAGS =

# A one-page library and a program that needs it without running it
# (prefault.sh).  -rpath makes libtool build it shared.
check_LTLIBRARIES = tests/fixtures/libtiny.la
tests_fixtures_libtiny_la_SOURCES = tests/fixtures/tiny.c
tests_fixtures_libtiny_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libtiny_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version

# A library whose constructor starts a thread, and a program that dlopens
# a library after main (tests/integration/preload.sh).
check_LTLIBRARIES += tests/fixtures/libthreadlib.la
tests_fixtures_libthreadlib_la_SOURCES = tests/fixtures/threadlib.c
tests_fixtures_libthreadlib_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libthreadlib_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version
tests_fixtures_libthreadlib_la_LIBADD = -lpthread

# Libraries whose binding a zygote may or may not take on (bound now, or
# lazily as the task would), one whose constructor reads the task's
# environment under a denied name, and a program that loads them lazily
# (tests/integration/preload-bind.sh).
check_LTLIBRARIES += tests/fixtures/libbindlocal.la tests/fixtures/libbindlater.la \
	tests/fixtures/libbindpick.la tests/fixtures/libbindundef.la tests/fixtures/libucs.la \
	tests/fixtures/mca_fake_ucx.la
fixture_lib_ldflags = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version
tests_fixtures_libbindlocal_la_SOURCES = tests/fixtures/bindwho.c
tests_fixtures_libbindlocal_la_CFLAGS = $(launched_cflags_common) -DBIND_WHO='"local"'
tests_fixtures_libbindlocal_la_LDFLAGS = $(fixture_lib_ldflags)
tests_fixtures_libbindlater_la_SOURCES = tests/fixtures/bindwho.c
tests_fixtures_libbindlater_la_CFLAGS = $(launched_cflags_common) -DBIND_WHO='"later"'
tests_fixtures_libbindlater_la_LDFLAGS = $(fixture_lib_ldflags)
tests_fixtures_libbindpick_la_SOURCES = tests/fixtures/bindpick.c
tests_fixtures_libbindpick_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libbindpick_la_LDFLAGS = $(fixture_lib_ldflags)
tests_fixtures_libbindpick_la_LIBADD = tests/fixtures/libbindlocal.la
tests_fixtures_libbindundef_la_SOURCES = tests/fixtures/bindundef.c
tests_fixtures_libbindundef_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libbindundef_la_LDFLAGS = $(fixture_lib_ldflags)
tests_fixtures_libucs_la_SOURCES = tests/fixtures/rankctor.c
tests_fixtures_libucs_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libucs_la_LDFLAGS = $(fixture_lib_ldflags)
tests_fixtures_mca_fake_ucx_la_SOURCES = tests/fixtures/ucxcomponent.c
tests_fixtures_mca_fake_ucx_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_mca_fake_ucx_la_LDFLAGS = $(fixture_lib_ldflags) -module
tests_fixtures_mca_fake_ucx_la_LIBADD = tests/fixtures/libucs.la
check_PROGRAMS += tests/fixtures/fnaddr
tests_fixtures_fnaddr_SOURCES = tests/fixtures/fnaddr.c
tests_fixtures_fnaddr_CFLAGS = $(launched_cflags_common) -fno-pie
tests_fixtures_fnaddr_LDFLAGS = -no-install -no-pie
check_PROGRAMS += tests/fixtures/lazybind
tests_fixtures_lazybind_SOURCES = tests/fixtures/lazybind.c
tests_fixtures_lazybind_CFLAGS = $(launched_cflags_common)
tests_fixtures_lazybind_LDFLAGS = -no-install

check_PROGRAMS += tests/fixtures/dlopener
tests_fixtures_dlopener_SOURCES = tests/fixtures/dlopener.c
tests_fixtures_dlopener_CFLAGS = $(launched_cflags_common)
# Its DT_RUNPATH names the tests' libraries: a bare name is found there.
tests_fixtures_dlopener_LDFLAGS = -no-install -Wl,--enable-new-dtags,-rpath,$(abs_builddir)/tests/fixtures/.libs

check_PROGRAMS += tests/fixtures/textmap
tests_fixtures_textmap_SOURCES = tests/fixtures/textmap.c
tests_fixtures_textmap_CFLAGS = $(launched_cflags_common)
tests_fixtures_textmap_LDFLAGS = -no-install
tests_fixtures_textmap_LDADD = tests/fixtures/libtiny.la

# A program whose library's constructor starts a shell, lowers a limit or
# sets a umask (ctor-state).
check_LTLIBRARIES += tests/fixtures/libctorlib.la
tests_fixtures_libctorlib_la_SOURCES = tests/fixtures/ctorlib.c
tests_fixtures_libctorlib_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libctorlib_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version

check_PROGRAMS += tests/fixtures/ctors
tests_fixtures_ctors_SOURCES = tests/fixtures/ctors.c
tests_fixtures_ctors_CFLAGS = $(launched_cflags_common)
tests_fixtures_ctors_LDFLAGS = -no-install
tests_fixtures_ctors_LDADD = tests/fixtures/libctorlib.la

check_PROGRAMS += tests/integration/ctor-state
tests_integration_ctor_state_SOURCES = tests/integration/ctor-state.c tests/fixtures/tap.h
tests_integration_ctor_state_LDADD = libpspawn/libpspawn.la
tests_integration_ctor_state_LDFLAGS = $(driver_link_flags)

check_PROGRAMS += tests/integration/parity-api-state tests/integration/parity-api-attrs tests/integration/parity-api-calls \
	tests/integration/children tests/integration/fallback-program tests/integration/fallback-state tests/integration/fallback-creds \
	tests/integration/errors tests/integration/zygote-kill tests/integration/report-late \
	tests/integration/soak tests/integration/python-fallback

# API parity, in three programs: the launcher's own state, the attributes,
# the calls and forms of the program.
parity_api_headers = tests/integration/parity-api.h tests/integration/parity-launcher.h tests/fixtures/tap.h
tests_integration_parity_api_state_SOURCES = tests/integration/parity-api-state.c $(parity_api_headers)
tests_integration_parity_api_state_LDADD = libpspawn/libpspawn.la
tests_integration_parity_api_state_LDFLAGS = $(driver_link_flags)
tests_integration_parity_api_attrs_SOURCES = tests/integration/parity-api-attrs.c $(parity_api_headers)
tests_integration_parity_api_attrs_LDADD = libpspawn/libpspawn.la
tests_integration_parity_api_attrs_LDFLAGS = $(driver_link_flags)
tests_integration_parity_api_calls_SOURCES = tests/integration/parity-api-calls.c $(parity_api_headers)
tests_integration_parity_api_calls_LDADD = libpspawn/libpspawn.la
tests_integration_parity_api_calls_LDFLAGS = $(driver_link_flags)

tests_integration_children_SOURCES = tests/integration/children.c tests/fixtures/tap.h
tests_integration_children_LDADD = libpspawn/libpspawn.la
tests_integration_children_LDFLAGS = $(driver_link_flags)

# Exec instead of the zygote, in two programs: the program itself, and the
# zygote's, the launcher's or the request's state.
tests_integration_fallback_program_SOURCES = tests/integration/fallback-program.c tests/integration/fallback.h tests/fixtures/tap.h
tests_integration_fallback_program_LDADD = libpspawn/libpspawn.la
tests_integration_fallback_program_LDFLAGS = $(driver_link_flags)
tests_integration_fallback_state_SOURCES = tests/integration/fallback-state.c tests/integration/fallback.h tests/fixtures/tap.h
tests_integration_fallback_state_LDADD = libpspawn/libpspawn.la
tests_integration_fallback_state_LDFLAGS = $(driver_link_flags)
tests_integration_fallback_creds_SOURCES = tests/integration/fallback-creds.c tests/integration/fallback.h tests/fixtures/tap.h
tests_integration_fallback_creds_LDADD = libpspawn/libpspawn.la
tests_integration_fallback_creds_LDFLAGS = $(driver_link_flags)

tests_integration_python_fallback_SOURCES = tests/integration/python-fallback.c tests/fixtures/tap.h
tests_integration_python_fallback_LDADD = libpspawn/libpspawn.la
tests_integration_python_fallback_LDFLAGS = $(driver_link_flags)

tests_integration_errors_SOURCES = tests/integration/errors.c tests/fixtures/tap.h
tests_integration_errors_LDADD = libpspawn/libpspawn.la
tests_integration_errors_LDFLAGS = $(driver_link_flags)

tests_integration_zygote_kill_SOURCES = tests/integration/zygote-kill.c tests/fixtures/tap.h
tests_integration_zygote_kill_CFLAGS = $(AM_CFLAGS) -pthread
tests_integration_zygote_kill_LDADD = libpspawn/libpspawn.la
tests_integration_zygote_kill_LDFLAGS = $(driver_link_flags) -pthread
tests_integration_report_late_SOURCES = tests/integration/report-late.c tests/fixtures/tap.h
tests_integration_report_late_CFLAGS = $(AM_CFLAGS) -pthread
tests_integration_report_late_LDADD = libpspawn/libpspawn.la
tests_integration_report_late_LDFLAGS = $(driver_link_flags) -pthread

# Sub-zygotes for real: only where hwloc makes them.
if HAVE_HWLOC
check_PROGRAMS += tests/integration/fanout
TESTS += tests/integration/fanout
endif
tests_integration_fanout_SOURCES = tests/integration/fanout.c tests/fixtures/tap.h tests/fixtures/procs.h
tests_integration_fanout_LDADD = libpspawn/libpspawn.la
tests_integration_fanout_LDFLAGS = $(driver_link_flags)

tests_integration_soak_SOURCES = tests/integration/soak.c tests/fixtures/tap.h
tests_integration_soak_LDADD = libpspawn/libpspawn.la
tests_integration_soak_LDFLAGS = $(driver_link_flags)

# Fan-out's groups and dispatch on fake topologies (hwloc).
if HAVE_HWLOC
check_PROGRAMS += tests/unit/topology
TESTS += tests/unit/topology
tests_unit_topology_SOURCES = tests/unit/topology.c tests/fixtures/tap.h libpspawn/launcher/topology.c
tests_unit_topology_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
tests_unit_topology_LDADD = libpspawn/libpspawn-wire.la $(HWLOC_LIBS)
tests_unit_topology_LDFLAGS = $(driver_link_flags)
endif

# Real NUMA nodes, in a KVM guest (tests/vm/numa-vm.sh, run by tests/run,
# not by make check): built here, run there.
if HAVE_NUMA
check_PROGRAMS += tests/vm/numa-task tests/vm/numa-vm
tests_vm_numa_task_SOURCES = tests/vm/numa-task.c
tests_vm_numa_task_CFLAGS = $(launched_cflags_common)
tests_vm_numa_task_LDADD = $(NUMA_LIBS)
tests_vm_numa_task_LDFLAGS =
tests_vm_numa_vm_SOURCES = tests/vm/numa-vm.c tests/fixtures/tap.h
tests_vm_numa_vm_CPPFLAGS = $(AM_CPPFLAGS)
tests_vm_numa_vm_LDADD = libpspawn/libpspawn.la $(NUMA_LIBS)
tests_vm_numa_vm_LDFLAGS = $(driver_link_flags)
endif
EXTRA_DIST += tests/vm/numa-vm.sh tests/vm/qemu-boot.sh
# The core tests on Debian's packaged kernels, each in a guest
# (tests/vm/kernel-vm.sh BUILD_DIR, run by hand: README.md).
EXTRA_DIST += tests/vm/kernel-vm.sh tests/vm/kernel-checks.sh
# Slurm on cgroup v2 under systemd, in a guest made from the mini-cluster's
# image (tests/vm/slurm-vm.sh, run by tests/run after the e2e tests).
EXTRA_DIST += tests/vm/slurm-vm.sh tests/vm/slurm-checks.sh tests/vm/slurm-bench.sh tests/vm/slurm/Dockerfile \
	tests/vm/slurm/slurm.conf tests/vm/slurm/cgroup.conf tests/vm/slurm/cgroup-c2.conf \
	tests/vm/slurm/gres.conf tests/vm/slurm/node-c2 tests/vm/slurm/net-setup \
	tests/vm/slurm/systemd/pspawn-vm-net.service tests/vm/slurm/systemd/slurmd-c2.service \
	tests/vm/slurm/systemd/pspawn-vm-check.service \
	tests/vm/slurm/systemd/slurmd.service.d/pspawn-vm.conf \
	tests/vm/slurm/systemd/slurmctld.service.d/pspawn-vm.conf

# Scripts: POSIX sh, run by $(SHELL); shared helpers in tests/fixtures/taplib.sh.
SH_LOG_COMPILER = $(SHELL)

# The longest first, so that make -j spreads them.
TESTS += \
	tests/integration/zygote-kill \
	tests/integration/report-late \
	tests/integration/cli-timeout.sh \
	tests/integration/standin.sh \
	tests/integration/soak \
	tests/integration/cli-signals.sh \
	tests/integration/parity-api-calls \
	tests/integration/parity-api-state \
	tests/integration/parity-api-attrs \
	tests/integration/parity.sh \
	tests/integration/parity-fanout.sh \
	tests/integration/fallback-state \
	tests/integration/fallback-creds \
	tests/integration/children \
	tests/integration/fallback-program \
	tests/integration/ctor-state \
	tests/integration/errors \
	tests/integration/cli-errors.sh \
	tests/integration/cli-exit.sh \
	tests/integration/cli-options.sh \
	tests/integration/prefault.sh \
	tests/integration/python-warm.sh tests/integration/python-packages.sh \
	tests/integration/python-resolve.sh \
	tests/integration/python-state.sh tests/integration/python-frames.sh \
	tests/integration/python-job.sh \
	tests/integration/python-fallback \
	tests/integration/preload.sh tests/integration/preload-bind.sh

EXTRA_DIST += \
	tests/integration/preload.sh tests/integration/preload-bind.sh \
	tests/integration/python-warm.sh tests/integration/python-packages.sh \
	tests/integration/python-resolve.sh \
	tests/integration/python-state.sh tests/integration/python-frames.sh \
	tests/integration/python-job.sh \
	tests/fixtures/python/probe.py tests/fixtures/python/job-starter.py \
	tests/fixtures/4nodes-2allowed.xml \
	tests/integration/prefault.sh \
	tests/fixtures/taplib.sh \
	tests/e2e/host-slurm.sh tests/python/older.sh \
	tests/integration/standin.sh \
	tests/integration/parity.sh \
	tests/integration/parity-fanout.sh \
	tests/integration/cli-errors.sh \
	tests/integration/cli-exit.sh \
	tests/integration/cli-signals.sh \
	tests/integration/cli-options.sh \
	tests/integration/cli-timeout.sh

# pspawn_attr_setpidhook: the pid before the task can exit (a launcher
# that reaps with waitpid(-1) elsewhere, as prted does).
check_PROGRAMS += tests/integration/pidhook
tests_integration_pidhook_SOURCES = tests/integration/pidhook.c tests/fixtures/tap.h
tests_integration_pidhook_CFLAGS = $(AM_CFLAGS) -pthread
tests_integration_pidhook_LDADD = libpspawn/libpspawn.la
tests_integration_pidhook_LDFLAGS = $(driver_link_flags) -pthread
TESTS += tests/integration/pidhook

# A launcher that sends its zygote malformed requests (protocol.h's
# sealed memfds and go block), and REQ_LAUNCHER_GO.
check_PROGRAMS += tests/integration/wire-hostile
tests_integration_wire_hostile_SOURCES = tests/integration/wire-hostile.c tests/fixtures/tap.h
tests_integration_wire_hostile_LDADD = libpspawn/libpspawn-wire.la
tests_integration_wire_hostile_LDFLAGS = $(driver_link_flags)
TESTS += tests/integration/wire-hostile

# The launcher's hardening: pidfds of pspawn_n_ex, E2BIG by the task's
# stack limit, a changed session with setpgroup, failed clones exec'd,
# PSPAWN_TIMEOUT.
check_PROGRAMS += tests/integration/hardening
tests_integration_hardening_SOURCES = tests/integration/hardening.c tests/fixtures/tap.h
tests_integration_hardening_LDADD = libpspawn/libpspawn.la
tests_integration_hardening_LDFLAGS = $(driver_link_flags)
TESTS += tests/integration/hardening

# Zygote lifecycle (an orphaned zygote, the terminal's signals,
# the program and its libraries replaced on disk, constructor fds,
# /proc/PID/environ): tests/integration/lifecycle drives it through the API (and
# tests/integration/lifecycle-libs, for a library replaced on disk),
# tests/integration/lifecycle-standin.sh through the stand-in shim.  lifeprog is the
# program launched (with lifelib, built again as lifelib2 to rename over
# it, and statically as lifeprog-static to swap the program itself);
# noinotify takes inotify away from a zygote.
check_LTLIBRARIES += tests/fixtures/liblifelib.la tests/fixtures/liblifelib2.la tests/fixtures/libnoinotify.la
tests_fixtures_libnoinotify_la_SOURCES = tests/fixtures/noinotify.c
tests_fixtures_libnoinotify_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_libnoinotify_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version
tests_fixtures_liblifelib_la_SOURCES = tests/fixtures/lifelib.c
tests_fixtures_liblifelib_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_liblifelib_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version
tests_fixtures_liblifelib2_la_SOURCES = tests/fixtures/lifelib.c
tests_fixtures_liblifelib2_la_CPPFLAGS = $(AM_CPPFLAGS) -DLIFELIB_VERSION=2
tests_fixtures_liblifelib2_la_CFLAGS = $(launched_cflags_common)
tests_fixtures_liblifelib2_la_LDFLAGS = -rpath $(abs_builddir)/tests/fixtures/.libs -avoid-version

check_PROGRAMS += tests/fixtures/lifeprog tests/fixtures/lifeprog-static tests/integration/lifecycle tests/integration/lifecycle-libs
tests_fixtures_lifeprog_SOURCES = tests/fixtures/lifeprog.c
tests_fixtures_lifeprog_CFLAGS = $(launched_cflags_common)
# DT_RUNPATH, which LD_LIBRARY_PATH overrides: the test renames a copy.
tests_fixtures_lifeprog_LDFLAGS = -no-install -Wl,--enable-new-dtags
tests_fixtures_lifeprog_LDADD = tests/fixtures/liblifelib.la
tests_fixtures_lifeprog_static_SOURCES = tests/fixtures/lifeprog.c tests/fixtures/lifelib.c
tests_fixtures_lifeprog_static_CFLAGS = $(launched_cflags_common)
tests_fixtures_lifeprog_static_LDFLAGS = -all-static
tests_integration_lifecycle_SOURCES = tests/integration/lifecycle.c tests/integration/lifecycle.h tests/fixtures/tap.h
tests_integration_lifecycle_LDADD = libpspawn/libpspawn.la -ldl
tests_integration_lifecycle_LDFLAGS = $(driver_link_flags)
tests_integration_lifecycle_libs_SOURCES = tests/integration/lifecycle-libs.c tests/integration/lifecycle.h tests/fixtures/tap.h
tests_integration_lifecycle_libs_LDADD = libpspawn/libpspawn.la
tests_integration_lifecycle_libs_LDFLAGS = $(driver_link_flags)

TESTS += tests/integration/lifecycle tests/integration/lifecycle-libs tests/integration/lifecycle-standin.sh
EXTRA_DIST += tests/integration/lifecycle-standin.sh

# The stand-in path's hardening (shim, stand-in zygote); case 7 of
# standin.sh on its own, and in a loop (STANDIN_LOOP_RUNS, default 500).
TESTS += tests/integration/standin-hardening.sh
EXTRA_DIST += tests/integration/standin-hardening.sh tests/integration/standin-case7.sh tests/integration/standin-case7-loop.sh

# Transparent interception (pspawn --intercept): a launcher of every kind
# and the task it starts, both plain (the interception library is
# preloaded into the launcher, where a sanitizer runtime could not come
# first).
check_PROGRAMS += tests/fixtures/intercept-launcher tests/fixtures/intercept-task
tests_fixtures_intercept_launcher_SOURCES = tests/fixtures/intercept-launcher.c
tests_fixtures_intercept_launcher_CFLAGS = $(launched_cflags_common) -pthread
tests_fixtures_intercept_launcher_LDFLAGS = -pthread
tests_fixtures_intercept_task_SOURCES = tests/fixtures/intercept-task.c
tests_fixtures_intercept_task_CFLAGS = $(launched_cflags_common)
tests_fixtures_intercept_task_LDFLAGS =
TESTS += tests/integration/intercept.sh tests/integration/intercept-launchers.sh \
	tests/integration/intercept-leftovers.sh tests/integration/intercept-session.sh
EXTRA_DIST += tests/integration/intercept.sh tests/integration/intercept-launchers.sh \
	tests/integration/intercept-leftovers.sh tests/integration/intercept-session.sh
# Interception does no harm: only programs whose exec costs more than a
# routed start are routed, leaves start without the library.
check_PROGRAMS += tests/fixtures/slowstart
tests_fixtures_slowstart_SOURCES = tests/fixtures/slowstart.c
tests_fixtures_slowstart_CFLAGS = $(launched_cflags_common)
tests_fixtures_slowstart_LDFLAGS =
TESTS += tests/integration/intercept-gain.sh
EXTRA_DIST += tests/integration/intercept-gain.sh

# The launch session (pspawn_session_*): asynchronous submit, the fd,
# per-task states, cancel, zygotes killed mid-session, 10,000 tasks.
check_PROGRAMS += tests/integration/session
tests_integration_session_SOURCES = tests/integration/session.c tests/integration/session.h tests/fixtures/tap.h tests/fixtures/procs.h
tests_integration_session_LDADD = libpspawn/libpspawn.la
tests_integration_session_LDFLAGS = $(driver_link_flags)
TESTS += tests/integration/session
# Spawn-site priorities (pspawn --intercept --priority), with the same two.
TESTS += tests/integration/intercept-priority.sh
EXTRA_DIST += tests/integration/intercept-priority.sh

# Process-in-Process (mode=pip): a task program built for it (a PIE that
# exports main, no TLS of its own), with the task-side calls compiled in
# as they are (uninstrumented, as every launched program); the same
# program not PIE, with TLS, and with $ORIGIN in its RUNPATH, which a PiP
# root refuses.
pip_task_flags = -fPIE
pip_task_sources = tests/fixtures/pip-task.c libpspawn/launcher/pip-peer.c
check_PROGRAMS += tests/fixtures/pip-task tests/fixtures/pip-task-nopie tests/fixtures/pip-task-tls tests/fixtures/pip-task-origin
tests_fixtures_pip_task_SOURCES = $(pip_task_sources)
tests_fixtures_pip_task_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_fixtures_pip_task_LDFLAGS = -pie -rdynamic -ldl
tests_fixtures_pip_task_nopie_SOURCES = $(pip_task_sources)
tests_fixtures_pip_task_nopie_CFLAGS = $(launched_cflags_common) -fno-pie
tests_fixtures_pip_task_nopie_LDFLAGS = -no-pie -rdynamic -ldl
tests_fixtures_pip_task_tls_SOURCES = $(pip_task_sources) tests/fixtures/pip-tls.c
tests_fixtures_pip_task_tls_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_fixtures_pip_task_tls_LDFLAGS = -pie -rdynamic -ldl
tests_fixtures_pip_task_origin_SOURCES = $(pip_task_sources)
tests_fixtures_pip_task_origin_CFLAGS = $(launched_cflags_common) $(pip_task_flags)
tests_fixtures_pip_task_origin_LDFLAGS = -pie -rdynamic -ldl -Wl,-rpath,'$$ORIGIN/../lib'
TESTS += tests/integration/pip.sh
EXTRA_DIST += tests/integration/pip.sh

# What each shared object exports (nm -D): libpspawn.so the calls of
# pspawn.h only, the preloaded and plugin objects only what their loaders
# look up.
TESTS += tests/unit/exports.sh
EXTRA_DIST += tests/unit/exports.sh

# Every file the project wrote says its license (SPDX line), and LICENSE
# is there; make distcheck runs the same check on the tarball's tree.
TESTS += tests/unit/spdx.sh
EXTRA_DIST += tests/unit/spdx.sh
TESTS += tests/unit/manlint.sh
EXTRA_DIST += tests/unit/manlint.sh

# The task's pre-main code keeps no stack protector whatever a
# distribution's CFLAGS add (child-flags.sh).
TESTS += tests/unit/child-flags.sh
EXTRA_DIST += tests/unit/child-flags.sh

# The files of each part that call each other in a circle: none new.
TESTS += tests/unit/call-cycles.sh
EXTRA_DIST += tests/unit/call-cycles.sh tests/unit/call-cycles.py

# How libpspawn's options are split into items (getsubopt), with no zygote.
check_PROGRAMS += tests/unit/options-items
TESTS += tests/unit/options-items
tests_unit_options_items_SOURCES = tests/unit/options-items.c
tests_unit_options_items_LDADD = libpspawn/libpspawn-wire.la

# Older kernels without a guest: oldkernel runs a command under a seccomp
# profile of a kernel version (ENOSYS, EINVAL, E2BIG, ENOPROTOOPT, ENOTTY
# where that kernel answers so); oldkernel.sh runs the front doors under
# 4.18, 5.3, 5.10, 5.14, 6.1, 6.8 and 6.13.
check_PROGRAMS += tests/fixtures/oldkernel tests/fixtures/kernel-gaps
tests_fixtures_kernel_gaps_SOURCES = tests/fixtures/kernel-gaps.c
tests_fixtures_kernel_gaps_LDADD = libpspawn/libpspawn-wire.la
tests_fixtures_kernel_gaps_LDFLAGS = -no-install
tests_fixtures_oldkernel_SOURCES = tests/fixtures/oldkernel.c
tests_fixtures_oldkernel_CFLAGS = $(launched_cflags_common)
tests_fixtures_oldkernel_LDFLAGS = -no-install
TESTS += tests/integration/oldkernel.sh
EXTRA_DIST += tests/integration/oldkernel.sh
# A stand-in zygote SIGKILLed under its tasks: each stand-in's exit status
# from the zygote's keeper (a subreaper), on this kernel and those profiles.
TESTS += tests/integration/keeper.sh
EXTRA_DIST += tests/integration/keeper.sh

# The table of the programs worth a zygote (wire/worth.c: default=auto,
# the ODLS component's auto), in a directory of the test's own.
check_PROGRAMS += tests/unit/worth
TESTS += tests/unit/worth
tests_unit_worth_SOURCES = tests/unit/worth.c
tests_unit_worth_LDADD = libpspawn/libpspawn-wire.la

# The node's line that every front door prints (wire/tally.c).
check_PROGRAMS += tests/unit/tally
TESTS += tests/unit/tally
tests_unit_tally_SOURCES = tests/unit/tally.c
tests_unit_tally_LDADD = libpspawn/libpspawn-wire.la

# Whether interception routes a program: what its starts cost, leaves
# (libpspawn/intercept/gain.c).
check_PROGRAMS += tests/unit/intercept-gain
TESTS += tests/unit/intercept-gain
tests_unit_intercept_gain_SOURCES = tests/unit/intercept-gain.c libpspawn/intercept/gain.c \
	libpspawn/intercept/route.c
tests_unit_intercept_gain_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libpspawn/intercept
tests_unit_intercept_gain_LDADD = libpspawn/libpspawn-wire.la
