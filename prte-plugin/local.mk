# SPDX-License-Identifier: BSD-3-Clause
# prte-plugin/: the PRRTE ODLS component prte_mca_odls_pspawn.so
# (`mpirun --mca odls pspawn`), built where configure finds PRRTE's internal
# headers and can make prte_config.h (config/pspawn_prrte.m4), installed
# into PRRTE's component directory (--with-prrte-componentdir).
#
# It is loaded into prted, which has no sanitizer runtime: never
# instrumented.  It exports only the component structure (and, built
# against PRRTE 5, the pointer to it that PRRTE 5's components have).

prte_plugin_sources = \
	prte-plugin/odls_pspawn.h \
	prte-plugin/odls_pspawn_compat.h \
	prte-plugin/odls_pspawn_compat.c \
	prte-plugin/odls_pspawn_rank.h \
	prte-plugin/odls_pspawn_rank.c \
	prte-plugin/odls_pspawn_component.c \
	prte-plugin/odls_pspawn_zygotes.h \
	prte-plugin/odls_pspawn_zygotes.c \
	prte-plugin/odls_pspawn_tally.h \
	prte-plugin/odls_pspawn_tally.c \
	prte-plugin/odls_pspawn_module.c

EXTRA_DIST += $(prte_plugin_sources) config/prte-config-h

# make distcheck installs as a user, under its own prefix.
AM_DISTCHECK_CONFIGURE_FLAGS += --with-prrte-componentdir='$${libdir}/prte'

if HAVE_PRRTE
prtecomponent_LTLIBRARIES = prte-plugin/prte_mca_odls_pspawn.la
prte_plugin_prte_mca_odls_pspawn_la_SOURCES = $(prte_plugin_sources)
prte_plugin_prte_mca_odls_pspawn_la_CPPFLAGS = $(AM_CPPFLAGS) $(PRRTE_CPPFLAGS) $(HWLOC_CFLAGS)
prte_plugin_prte_mca_odls_pspawn_la_CFLAGS = -std=gnu11 $(WARN_CFLAGS)
prte_plugin_prte_mca_odls_pspawn_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^prte_mca_odls_pspawn_component(_ptr)?$$'
prte_plugin_prte_mca_odls_pspawn_la_LIBADD = libpspawn/libpspawn.la libpspawn/libpspawn-wire.la \
	$(PRRTE_LIBS) $(HWLOC_LIBS) -ldl
endif
