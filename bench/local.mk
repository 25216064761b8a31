# Launch benchmarks (issue 2); bench/run builds and runs them.
noinst_PROGRAMS += bench/spawnbench
bench_spawnbench_SOURCES = bench/spawnbench.c
bench_spawnbench_LDADD = libpspawn/libpspawn.la
# No libtool wrapper script: it would put LD_LIBRARY_PATH in the
# environment of every task and slow down each exec'd one.
bench_spawnbench_LDFLAGS = $(AM_LDFLAGS) -no-install
# Fork and exit alone, for a process with many libraries (bench/README.md).
noinst_PROGRAMS += bench/forkcost
bench_forkcost_SOURCES = bench/forkcost.c
bench_forkcost_LDADD = -ldl
EXTRA_DIST += bench/genlibs.py bench/faults.py bench/README.md bench/suite bench/suite.py \
	bench/plots.py bench/genpymods.py
