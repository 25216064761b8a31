#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The model's concurrency term, fitted to the wall-time curves that
scalebench measured on many-core machines (bench/results/*.csv, as
bench/device-fanout writes them), and its projection to 64, 128 and 192
cores.  A model, not a measurement.

The 2-core model (bench/README.md, "Fan-out") takes each task's CPU as
fixed.  On 16 cores it is not: when C processes fork and exit at once,
each task costs more.  The term is

    cost(C) = cost(1) * (1 + c * log2 C)

one c per variant, fitted by least squares to 1 / efficiency - 1, where
efficiency(C) = tasks/s at C CPUs / (C * tasks/s at 1 CPU).  The same form
for one fork of a zygote: its CPU per task it served, at C CPUs
launching at once, fitted as d.  Then

    tasks/s(C) = min(C * r1 / (1 + c log2 C),      the tasks' own CPU
                     k / (s1 (1 + d log2 C)),       the k zygotes
                     1 / launcher)                  the launcher's loop

with r1 the 1-CPU rate and s1 the 1-CPU fork cost, both measured, and k
the zygotes at C CPUs (as many per CPU as at the top of the curve: C
with fanout=core, 1 with fanout=none).

    bench/concurrency-model.py [--label big] [CSV...]
"""
import argparse
import csv
import glob
import math
import os
import statistics
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


def load(paths, label):
    """{(file, variant): {cpus: [rows]}} for LABEL's runs."""
    runs = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("what") != "run" or row.get("label") != label:
                    continue
                runs[(os.path.basename(path), row["variant"])][int(row["cpus"])].append(row)
    return runs


def med(rows, key):
    return statistics.median(float(r[key]) for r in rows)


def fit_log2(points):
    """c of y = c * log2(x) through the origin, least squares; None if no point."""
    num = sum(math.log2(x) * y for x, y in points if x > 1)
    den = sum(math.log2(x) ** 2 for x, y in points if x > 1)
    return num / den if den else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="big")
    ap.add_argument("--cores", default="16,64,128,192")
    ap.add_argument("csv", nargs="*")
    a = ap.parse_args()
    paths = a.csv or sorted(glob.glob(os.path.join(HERE, "results", "fanout-16core-*.csv")))
    cores = [int(c) for c in a.cores.split(",")]
    runs = load(paths, a.label)
    if not runs:
        sys.exit("concurrency-model: no '%s' runs in %s" % (a.label, " ".join(paths)))
    print("Fitted to: %s (label %s; medians of the repeats)" % (", ".join(
        os.path.basename(p) for p in paths), a.label))
    print("\n%-44s %6s %6s %8s %8s   tasks/s at C cores (model)" % (
        "file: variant", "c", "d", "r1/s", "launch"))
    print("%-44s %6s %6s %8s %8s  " % ("", "", "", "", "ms") +
          "".join(" %8d" % c for c in cores))
    fitted = defaultdict(dict)
    for (name, variant), by_cpus in sorted(runs.items()):
        if 1 not in by_cpus or len(by_cpus) < 2:
            continue
        r1 = med(by_cpus[1], "tasks_per_s")
        eff = [(c, med(rows, "tasks_per_s") / (c * r1)) for c, rows in by_cpus.items()]
        c_fit = fit_log2([(c, 1 / e - 1) for c, e in eff if e > 0])
        # One fork: the busiest zygote's CPU per task of the run, times the
        # zygotes that shared the run, against the CPUs launching at once.
        forks = [(c, med(rows, "busiest_zygote_ms") * int(rows[0]["zygotes"]))
                 for c, rows in by_cpus.items() if int(rows[0]["zygotes"]) > 0]
        s1 = [s for c, s in forks if c == 1]
        d_fit = fit_log2([(c, s / s1[0] - 1) for c, s in forks]) if s1 else None
        top = max(by_cpus)
        zyg_top = int(by_cpus[top][0]["zygotes"])
        launcher = med(by_cpus[top], "launcher_ms")
        proj = []
        for C in cores:
            t = C * r1 / (1 + (c_fit or 0) * math.log2(C))
            if s1 and d_fit is not None and zyg_top > 0:
                # As many zygotes per CPU as at the top of the curve.
                k = max(1, round(zyg_top * C / top)) if zyg_top > 1 else 1
                t = min(t, k * 1e3 / (s1[0] * (1 + d_fit * math.log2(C))))
            if launcher > 0:
                t = min(t, 1e3 / launcher)
            proj.append(t)
        fitted[name][variant] = proj
        print("%-44s %6.3f %6s %8.1f %8.4f  " % (
            "%s: %s" % (name.replace("fanout-16core-", "").replace(".csv", ""), variant),
            c_fit or 0, "%.3f" % d_fit if d_fit is not None else "-", r1, launcher) +
            "".join(" %8.0f" % t for t in proj))
    print("\nfanout=core / posix_spawn, by the model:")
    for name, v in sorted(fitted.items()):
        if "fanout=core" in v and "posix_spawn" in v:
            print("  %-40s" % name + "".join(
                " %8.2f" % (x / y) for x, y in zip(v["fanout=core"], v["posix_spawn"])))
    print("\nc: how much a task's CPU grows per doubling of the CPUs launching at once;"
          "\nd: the same for one fork of a zygote."
          "\nA model fitted to 1-16 CPUs on one machine: beyond 16 it extrapolates.")


if __name__ == "__main__":
    main()
