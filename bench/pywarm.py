#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Warm Python launches against exec'd ones, side by side in one run.

For each workload, N tasks are launched with `pspawn -n N` through the warm
Python zygote and with `pspawn --exec`, interleaved, R times; the table
gives the median wall time of a launch (zygote start and imports
included) and per task, and their ratio.  Workloads:

  sci       imports numpy and scipy (linalg, sparse, optimize, signal) and
            computes a 5x5 determinant (the issue's script)
  empty     an empty script: the floor of a warm task
  pynamic   bench/genpymods.py's generated package of C extension
            modules (--modules M), imported and called by its driver
  nofreeze  sci with the zygote's gc.freeze() off (PSPAWN_PYTHON_FREEZE=0):
            what the way a warm task ends costs
  PACKAGE   with --packages: a script that imports PACKAGE (matplotlib
            with the Agg backend); the "zygote" column says whether the
            zygote imported it or left it out, and why

The warm runs use the module cache (PSPAWN_CACHE_DIR, a fresh directory):
two learning launches first (one learns, one tries the imports once), as a
user's third job would find it.  The
"import removed" column is 1 - (warm - warm empty) / (exec - exec empty):
the share of the import time (what a task spends beyond an empty
interpreter) that the warm zygote removes.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SCI = """import numpy as np
import scipy.linalg, scipy.sparse, scipy.optimize, scipy.signal
a = np.arange(25, dtype=float).reshape(5, 5) + np.eye(5)
print(round(scipy.linalg.det(a), 6))
"""


def launch(pspawn, n, argv, env, exec_=False, errors=None):
    cmd = [pspawn, "-n", str(n)] + (["--exec"] if exec_ else []) + argv
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("pywarm: %s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                 r.stderr.decode()[-500:]))
    if errors is not None:
        errors.append(r.stderr.decode("utf-8", "replace"))
    return dt


def package_script(name):
    if name == "matplotlib":
        return "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot\n"
    return "import %s\n" % name


def verdict(name, stderr):
    """accepted, or why the zygote left the package out (PSPAWN_DEBUG)."""
    for line in stderr.splitlines():
        if "module %s left out: " % name in line:
            return "out: " + line.split(" left out: ", 1)[1]
    return "imported" if "parked inside Python" in stderr else "not warm"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pspawn", required=True, help="the pspawn binary")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("-n", type=int, default=64, help="tasks per launch (default 64)")
    ap.add_argument("-r", type=int, default=3, help="repeats, interleaved (default 3)")
    ap.add_argument("--modules", type=int, default=300,
                    help="extension modules of the pynamic workload (default 300; 0: none)")
    ap.add_argument("--packages", default="",
                    help="comma-separated packages, a workload each (e.g. torch,numba)")
    ap.add_argument("--work", default=None, help="where to write the workloads")
    ap.add_argument("--out", default=None, help="also write the table here")
    args = ap.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="pywarm.")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "sci.py"), "w") as f:
        f.write(SCI)
    open(os.path.join(work, "empty.py"), "w").close()
    workloads = [("sci", [args.python, os.path.join(work, "sci.py")], {}),
                 ("empty", [args.python, os.path.join(work, "empty.py")], {}),
                 ("nofreeze", [args.python, os.path.join(work, "sci.py")],
                  {"PSPAWN_PYTHON_FREEZE": "0"})]
    if args.modules:
        d = os.path.join(work, "pynamic-%d" % args.modules)
        subprocess.run([sys.executable, os.path.join(HERE, "genpymods.py"), "--out", d,
                        "--modules", str(args.modules), "--python", args.python],
                       check=True, stdout=subprocess.DEVNULL)
        workloads.append(("pynamic", [args.python, os.path.join(d, "driver.py")], {}))

    for name in filter(None, args.packages.split(",")):
        path = os.path.join(work, "import_%s.py" % name)
        with open(path, "w") as f:
            f.write(package_script(name))
        workloads.append((name, [args.python, path], {}))

    base = dict(os.environ)
    base["PSPAWN_CACHE_DIR"] = tempfile.mkdtemp(prefix="cache.", dir=work)
    base.setdefault("OPENBLAS_NUM_THREADS", "1")
    times, verdicts = {}, {}
    packages = set(filter(None, args.packages.split(",")))
    for name, argv, extra in workloads:
        env = dict(base, **extra)
        launch(args.pspawn, 2, argv, env)            # learns what the tasks import
        said = []
        launch(args.pspawn, 2, argv, dict(env, PSPAWN_DEBUG="1"), errors=said)  # tries it once
        if name in packages:
            verdicts[name] = verdict(name, said[0])
        for _ in range(args.r):
            times.setdefault((name, "exec"), []).append(
                launch(args.pspawn, args.n, argv, env, exec_=True))
            times.setdefault((name, "warm"), []).append(launch(args.pspawn, args.n, argv, env))
    med = {k: statistics.median(v) for k, v in times.items()}

    lines = ["pywarm: %d tasks per launch, median of %d, %s" % (args.n, args.r, args.python),
             "%-10s %10s %10s %10s %10s %8s %10s  %s" % ("workload", "exec s", "warm s",
                                                        "exec ms/t", "warm ms/t", "ratio",
                                                        "import rm", "zygote")]
    for name, _, _ in workloads:
        e, w = med[(name, "exec")], med[(name, "warm")]
        removed = ""
        if name not in ("empty",):
            ee, we = med[("empty", "exec")], med[("empty", "warm")]
            if e > ee:
                removed = "%.1f%%" % (100 * (1 - (w - we) / (e - ee)))
        lines.append("%-10s %10.3f %10.3f %10.2f %10.2f %7.2fx %10s  %s" % (
            name, e, w, 1000 * e / args.n, 1000 * w / args.n, e / w, removed,
            verdicts.get(name, "")))
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
