# SPDX-License-Identifier: BSD-3-Clause
# Launch benchmarks; bench/run builds and runs them.
noinst_PROGRAMS += bench/spawnbench
# The driver (options, environments, repeats, output), the schemes, the floor.
bench_spawnbench_SOURCES = bench/spawnbench.c bench/spawnbench-schemes.c bench/spawnbench-floor.c \
	bench/spawnbench.h bench/median.h
bench_spawnbench_CPPFLAGS = $(AM_CPPFLAGS) \
	-DPSPAWN_FLOOR_LIB_PATH='"$(abs_builddir)/bench/.libs/libpspawn-floor.so"'
bench_spawnbench_LDADD = libpspawn/libpspawn.la
# No libtool wrapper script: it would put LD_LIBRARY_PATH in the
# environment of every task and slow down each exec'd one.
bench_spawnbench_LDFLAGS = $(AM_LDFLAGS) -no-install
# A launch session against pspawn_n: when the first task runs, and all
# (bench/run --session runs it).
noinst_PROGRAMS += bench/sessionbench
bench_sessionbench_SOURCES = bench/sessionbench.c bench/median.h
bench_sessionbench_LDADD = libpspawn/libpspawn.la
bench_sessionbench_LDFLAGS = $(AM_LDFLAGS) -no-install
# Where the CPU of a launch goes, process by process, and the model of
# tasks/s at many cores from it (bench/run --fanout runs it).
noinst_PROGRAMS += bench/fanbench
bench_fanbench_SOURCES = bench/fanbench.c bench/cpuclock.h
bench_fanbench_LDADD = libpspawn/libpspawn.la
bench_fanbench_LDFLAGS = $(AM_LDFLAGS) -no-install
# Tasks/s in wall time, posix_spawn against libpspawn's variants, for a
# curve over CPU counts on a many-core machine (bench/device-fanout).
noinst_PROGRAMS += bench/scalebench
bench_scalebench_SOURCES = bench/scalebench.c bench/cpuclock.h
bench_scalebench_LDADD = libpspawn/libpspawn.la
bench_scalebench_LDFLAGS = $(AM_LDFLAGS) -no-install
# The floor: the parked program forking itself, no protocol (bench/floor.c).
# -rpath makes libtool build it shared; it is never installed.
noinst_LTLIBRARIES += bench/libpspawn-floor.la
bench_libpspawn_floor_la_SOURCES = bench/floor.c
bench_libpspawn_floor_la_CFLAGS = -std=c11 $(WARN_CFLAGS) -fvisibility=hidden
bench_libpspawn_floor_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/bench/.libs
bench_libpspawn_floor_la_LIBADD = -ldl
# Fork and exit alone, for a process with many libraries (bench/README.md).
noinst_PROGRAMS += bench/forkcost
bench_forkcost_SOURCES = bench/forkcost.c
bench_forkcost_LDADD = -ldl
EXTRA_DIST += bench/genlibs.py bench/faults.py bench/README.md bench/suite bench/suite.py bench/intercept.sh \
	bench/plots.py bench/genpymods.py bench/pywarm.py bench/mpi-phases.py bench/priority \
	bench/device-fanout bench/overhead bench/noharm bench/concurrency-model.py
# Process-in-Process: PiP tasks (pspawn mode=pip) against pthreads and
# processes, page tables, context switches, spawn (bench/pip runs it).
noinst_PROGRAMS += bench/pipbench
# The driver (options, the PiP probe), the groups of tasks, the measurements;
# the task's control block comes from bench/pip-task.c, which it includes.
bench_pipbench_SOURCES = bench/pipbench.c bench/pipbench-groups.c bench/pipbench-measures.c \
	bench/pipbench.h bench/median.h
bench_pipbench_CPPFLAGS = $(AM_CPPFLAGS) -DPIP_TASK_PATH='"$(abs_builddir)/bench/pip-task"'
bench_pipbench_LDADD = libpspawn/libpspawn.la
bench_pipbench_LDFLAGS = $(AM_LDFLAGS) -no-install -pthread
# Its task program: a PiP task must be PIE with main exported and is not
# linked against libpspawn (nor built with sanitizers: it is loaded into
# a namespace of the PiP root's address space).
noinst_PROGRAMS += bench/pip-task
bench_pip_task_SOURCES = bench/pip-task.c
bench_pip_task_CFLAGS = -std=c11 $(WARN_CFLAGS) -fPIE
bench_pip_task_LDFLAGS = -fPIE -pie -rdynamic -pthread
EXTRA_DIST += bench/pip
# What keeping zygotes costs: their memory (PSS, USS, page tables) and
# their CPU while they wait (bench/overhead runs it).
noinst_PROGRAMS += bench/overheadbench
bench_overheadbench_SOURCES = bench/overheadbench.c
bench_overheadbench_LDADD = libpspawn/libpspawn.la libpspawn/libpspawn-wire.la
bench_overheadbench_LDFLAGS = $(AM_LDFLAGS) -no-install
