# SPDX-License-Identifier: BSD-3-Clause
# spank/: the SPANK plugin spank_pspawn.so (`srun --pspawn`), built where
# configure finds slurm/spank.h (--with-slurm), installed into Slurm's
# plugin directory (--with-slurm-plugindir; config/pspawn_spank.m4).
#
# The plugin links against no Slurm library: its spank_* and slurm_* calls
# resolve in the process that loads it (srun, sbatch, salloc, slurmd,
# slurmstepd).  It is never instrumented: slurmstepd has no sanitizer
# runtime to give it.  It exports only what Slurm looks up.

spank_plugin_sources = \
	spank/pspawn_spank.c spank/pspawn_spank.h \
	spank/pspawn_srun.c spank/pspawn_slurmstepd.c \
	spank/pspawn_config.c spank/pspawn_config.h \
	spank/pspawn_cgroup.h spank/pspawn_mover.c spank/mover-request.c \
	spank/pspawn_jobzygote.c spank/pspawn_jobzygote.h spank/pspawn_jobstart.c spank/pspawn_jobstate.c \
	spank/pspawn_slurmconf.c

# One test program: the fake slurmstepd, the plugin's tests, the mover's.
spank_test_plugin_sources = \
	tests/integration/spank-plugin.c tests/integration/spank-plugin.h \
	tests/integration/spank-slurmstepd.c tests/integration/spank-mover.c \
	tests/integration/spank-mover.h tests/integration/spank-mover-play.c tests/fixtures/paused.h

# Also in the tarball of a build without Slurm.
EXTRA_DIST += $(spank_plugin_sources) tests/unit/spank-config.c $(spank_test_plugin_sources) \
	tests/unit/spank-cgroup.c tests/integration/spank-jobzygote.c

# make distcheck installs as a user, under its own prefix.
AM_DISTCHECK_CONFIGURE_FLAGS = --with-slurm-plugindir='$${libdir}/slurm'

if HAVE_SLURM
slurmplugindir = $(SLURM_PLUGINDIR)
slurmplugin_LTLIBRARIES = spank/spank_pspawn.la
spank_spank_pspawn_la_SOURCES = $(spank_plugin_sources)
spank_spank_pspawn_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-DPSPAWN_SHIM_PATH='"$(pkglibexecdir)/pspawn-shim"'
spank_spank_pspawn_la_CFLAGS = -std=c11 -pthread $(WARN_CFLAGS)
spank_spank_pspawn_la_LDFLAGS = -module -avoid-version -shared \
	-pthread -export-symbols-regex '^(plugin_|spank_plugin_version|slurm_spank_)'
spank_spank_pspawn_la_LIBADD = libpspawn/libpspawn-wire.la

# The parser, with no Slurm at all.
check_PROGRAMS += tests/unit/spank-config
TESTS += tests/unit/spank-config
tests_unit_spank_config_SOURCES = tests/unit/spank-config.c spank/pspawn_config.c spank/pspawn_config.h
tests_unit_spank_config_LDADD = libpspawn/libpspawn-wire.la
tests_unit_spank_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank \
	-DPSPAWN_SHIM_PATH='"/test/pspawn-shim"'

# Which cgroup.procs files the mover writes, from /proc text.
check_PROGRAMS += tests/unit/spank-cgroup
TESTS += tests/unit/spank-cgroup
tests_unit_spank_cgroup_SOURCES = tests/unit/spank-cgroup.c spank/pspawn_cgroup.h
tests_unit_spank_cgroup_LDADD = libpspawn/libpspawn-wire.la
tests_unit_spank_cgroup_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank

# The built plugin in a fake slurmstepd that defines the SPANK calls.
check_PROGRAMS += tests/integration/spank-plugin
TESTS += tests/integration/spank-plugin
tests_integration_spank_plugin_SOURCES = $(spank_test_plugin_sources)
tests_integration_spank_plugin_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) -I$(top_srcdir)/spank \
	-DPLUGIN_PATH='"$(abs_top_builddir)/spank/.libs/spank_pspawn.so"'
tests_integration_spank_plugin_LDFLAGS = $(AM_LDFLAGS) -export-dynamic -no-install
tests_integration_spank_plugin_LDADD = libpspawn/libpspawn-wire.la
tests_integration_spank_plugin_DEPENDENCIES = spank/spank_pspawn.la

# reuse=job's root side (the job's zygote manager, its starter, the
# clean-up), called directly as slurmstepd calls it; root only.
check_PROGRAMS += tests/integration/spank-jobzygote
TESTS += tests/integration/spank-jobzygote
tests_integration_spank_jobzygote_SOURCES = tests/integration/spank-jobzygote.c \
	spank/pspawn_jobzygote.c spank/pspawn_jobzygote.h spank/pspawn_jobstart.c spank/pspawn_jobstate.c \
	tests/fixtures/tap.h tests/fixtures/paused.h
tests_integration_spank_jobzygote_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank
tests_integration_spank_jobzygote_LDADD = libpspawn/libpspawn-wire.la
tests_integration_spank_jobzygote_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
