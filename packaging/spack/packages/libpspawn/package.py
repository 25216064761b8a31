# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe for libpspawn, written to Spack's conventions
# (AutotoolsPackage).  Not tested: Spack is not installed where libpspawn
# is tested; the EasyBuild recipe (packaging/easybuild) is.
from spack.package import *


class Libpspawn(AutotoolsPackage):
    """Starts many copies of one program faster than fork+exec: the program
    is exec'd once per node as a parked zygote and each task is a fork of
    it.  The pspawn command, the C library, the Slurm SPANK plugin and the
    Open MPI 5 ODLS component."""

    # No public home or release URL yet: put `make dist`'s tarball in a
    # Spack mirror (spack mirror add) under this name.
    homepage = "https://example.invalid/libpspawn"
    url = "https://example.invalid/libpspawn/libpspawn-0.1.0.tar.gz"

    license("BSD-3-Clause")

    version("0.1.0")

    variant("slurm", default=True, description="Build the Slurm SPANK plugin (srun --pspawn)")
    variant("hwloc", default=True, description="CPU groups of fan-out (a zygote per few cores)")

    depends_on("c", type="build")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("slurm", when="+slurm")
    depends_on("numactl")

    def configure_args(self):
        args = []
        if self.spec.satisfies("+slurm"):
            args.append("--with-slurm={0}".format(self.spec["slurm"].prefix))
            # into this prefix: a site points plugstack.conf at it
            args.append("--with-slurm-plugindir={0}".format(self.prefix.lib.slurm))
        else:
            args.append("--without-slurm")
        # The ODLS component needs the exact PRRTE's internal headers and
        # source (prte-plugin/README.md): not built by this recipe.
        args.append("--without-prrte")
        return args
