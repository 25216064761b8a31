#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws the suite's plots and summary from the CSVs in a results directory.

    plots.py DIR

Writes DIR/*.png (one per experiment present) and DIR/summary.txt: the
figures the project's targets are about, with met / NOT met.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {
    "sfork": ("tab:gray", "v"), "afork": ("tab:blue", "o"),
    "forkexec": ("tab:blue", "o"), "vfork": ("tab:cyan", "s"),
    "posix_spawn": ("tab:red", "D"), "pfork": ("tab:olive", "^"),
    "pspawn": ("tab:green", "*"), "pspawn-warm": ("tab:green", "x"),
    "floor": ("black", "."), "floor-warm": ("black", "+"),
}
ORDER = ["sfork", "afork", "vfork", "posix_spawn", "pfork", "pspawn", "floor"]
ENV_LABEL = {"empty": "empty environment",
             "paper": "100 variables + LD_LIBRARY_PATH of 10 entries"}


def read(d, name):
    path = os.path.join(d, name + ".csv")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return list(csv.DictReader(f))


def machine(d):
    path = os.path.join(d, "machine.txt")
    info = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(": ")
                info.setdefault(k.strip(), v.strip())
    cpu = info.get("cpu", "?")
    return "%s, %s cores, Linux %s, glibc %s" % (
        cpu, info.get("cores", "?").split()[0], info.get("kernel", "?").replace("Linux ", ""),
        info.get("glibc", "?"))


def series(rows, xkey, scheme, **match):
    pts = sorted((float(r[xkey]), float(r["median_ms"]), float(r["min_ms"]),
                  float(r["max_ms"]))
                 for r in rows
                 if r["scheme"] == scheme and all(r[k] == v for k, v in match.items()))
    return pts


def plot_lines(ax, rows, xkey, schemes, **match):
    for s in schemes:
        pts = series(rows, xkey, s, **match)
        if not pts:
            continue
        c, m = STYLE.get(s, (None, "o"))
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
        ax.errorbar(xs, ys, yerr=err, color=c, marker=m, label=s, capsize=2,
                    linewidth=1.2, markersize=5)


def med(rows, scheme, **match):
    for r in rows:
        if r["scheme"] == scheme and all(r[k] == str(v) for k, v in match.items()):
            return float(r["median_ms"])
    return None


def fig_nsweep(d, rows, title, out, summary):
    envs = [e for e in ("empty", "paper") if any(r["env"] == e for r in rows)]
    fig, axes = plt.subplots(1, len(envs), figsize=(6.2 * len(envs), 4.6), squeeze=False)
    for ax, env in zip(axes[0], envs):
        plot_lines(ax, rows, "n", ORDER, env=env)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (instances launched, then all waited for)")
        ax.set_ylabel("time per spawn (ms)")
        ax.set_title(ENV_LABEL[env], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("%s\n%s" % (title, machine(d)), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, out), dpi=110)
    plt.close(fig)

    if out != "nsweep.png":
        return
    # The paper's claim: pspawn's throughput >= 1.2x afork's and vfork's.
    summary.append("nsweep: throughput of pspawn over afork / vfork / posix_spawn "
                   "(time per spawn of the other / pspawn's; target >= 1.20 at N >= 100, "
                   "paper environment)")
    for env in envs:
        for n in sorted({int(r["n"]) for r in rows if r["env"] == env}):
            p = med(rows, "pspawn", env=env, n=n)
            if not p:
                continue
            parts = []
            ok = True
            for other in ("afork", "vfork", "posix_spawn", "pfork"):
                o = med(rows, other, env=env, n=n)
                if o:
                    parts.append("%s %.2fx" % (other, o / p))
                    if other in ("afork", "vfork") and o / p < 1.2:
                        ok = False
            verdict = ""
            if env == "paper" and n >= 100:
                verdict = "  target met" if ok else "  target NOT met"
            summary.append("  %-5s N=%-5d %s%s" % (env, n, "  ".join(parts), verdict))


def fig_cow(d, rows, summary):
    variants = [v for v in ("dirty", "clean") if any(r.get("variant", "dirty") == v for r in rows)]
    for r in rows:
        r.setdefault("variant", "dirty")
    fig, axes = plt.subplots(1, len(variants), figsize=(6.2 * len(variants), 4.6),
                             squeeze=False)
    mb = rows[0]["mb"]
    label = {"dirty": "region written by a constructor too\n(a zygote holds it dirty)",
             "clean": "region written by main only\n(first touch in every task)"}
    for ax, v in zip(axes[0], variants):
        plot_lines(ax, rows, "n", ORDER, variant=v)
        ax.set_xscale("log")
        ax.set_xlabel("N (instances)")
        ax.set_ylabel("time per spawn (ms)")
        ax.set_title(label[v], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("copy-on-write test: each task writes the first byte of every page of "
                 "%s MB of data (cf. the paper's Figure 5)\n%s" % (mb, machine(d)), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "cow.png"), dpi=110)
    plt.close(fig)
    for v in variants:
        nmax = max(int(r["n"]) for r in rows if r["variant"] == v)
        summary.append("cow (%s): N=%d, ms per task: %s" % (v, nmax, "  ".join(
            "%s %.2f" % (s, med(rows, s, n=nmax, variant=v)) for s in ORDER
            if med(rows, s, n=nmax, variant=v))))


def fig_libs(d, rows, summary):
    envs = [e for e in ("empty", "paper") if any(r["env"] == e for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(12.4, 4.6))
    ax = axes[0]
    for env, ls in zip(envs, ("-", "--")):
        for s in ("vfork", "posix_spawn", "pfork", "pspawn", "floor"):
            pts = series(rows, "libs", s, env=env)
            if not pts:
                continue
            c, m = STYLE[s]
            ax.plot([max(p[0], 0.5) for p in pts], [p[1] for p in pts], ls, color=c,
                    marker=m, label="%s (%s env)" % (s, env))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("shared libraries (0 plotted at 0.5)")
    ax.set_ylabel("time per spawn (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax = axes[1]
    summary.append("libs: posix_spawn / pspawn (time per spawn; target >= 20x at 1000 libraries)")
    for env, ls in zip(envs, ("-", "--")):
        xs, ys = [], []
        for l in sorted({int(r["libs"]) for r in rows if r["env"] == env}):
            a, p = med(rows, "posix_spawn", env=env, libs=l), med(rows, "pspawn", env=env, libs=l)
            if a and p:
                xs.append(max(l, 0.5))
                ys.append(a / p)
        ax.plot(xs, ys, ls, marker="o", color="tab:green", label="posix_spawn / pspawn (%s env)" % env)
        summary.append("  %-5s %s" % (env, "  ".join(
            "L=%d %.2fx" % (0 if x == 0.5 else x, y) for x, y in zip(xs, ys))))
        if 1000 in [int(x) for x in xs]:
            r = ys[[int(x) for x in xs].index(1000)]
            summary.append("        1000 libraries: %.1fx: target %s" % (r, "met" if r >= 20 else "NOT met"))
    ax.axhline(20, color="gray", linestyle=":", label="target 20x at 1000")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("shared libraries")
    ax.set_ylabel("pspawn speed-up")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("time per spawn against the number of shared libraries (N=%s)\n%s"
                 % (rows[0]["n"], machine(d)), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "libs.png"), dpi=110)
    plt.close(fig)


def fig_simple(d, rows, xkey, xlabel, title, out, logx):
    fig, ax = plt.subplots(1, 1, figsize=(6.4, 4.6))
    plot_lines(ax, rows, xkey, ORDER)
    if logx:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("time per spawn (ms)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(machine(d), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, out), dpi=110)
    plt.close(fig)


def fig_python(d, rows, summary):
    variants = [v for v in ("plain", "preloaded") if any(r["variant"] == v for r in rows)]
    schemes = [s for s in ("posix_spawn", "pspawn", "floor") if any(r["scheme"] == s for r in rows)]
    fig, ax = plt.subplots(1, 1, figsize=(6.4, 4.6))
    w = 0.8 / len(schemes)
    for k, s in enumerate(schemes):
        ys = [med(rows, s, variant=v) or 0 for v in variants]
        ax.bar([i + k * w for i in range(len(variants))], ys, w, label=s,
               color=STYLE[s][0])
        for i, y in enumerate(ys):
            ax.text(i + k * w, y, "%.1f" % y, ha="center", va="bottom", fontsize=8)
    ax.set_xticks([i + w * (len(schemes) - 1) / 2 for i in range(len(variants))])
    ax.set_xticklabels(["plain: imports dlopen\nthe modules in every task",
                        "modules in LD_PRELOAD:\nloaded before main"][:len(variants)])
    ax.set_ylabel("time per task (ms)")
    ax.set_title("python3 driver importing %s C extension modules, N=%s"
                 % (rows[0]["modules"], rows[0]["n"]), fontsize=9)
    ax.legend(fontsize=8)
    fig.suptitle(machine(d), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "python.png"), dpi=110)
    plt.close(fig)
    summary.append("python (%s modules, N=%s), ms per task:" % (rows[0]["modules"], rows[0]["n"]))
    for v in variants:
        a, p = med(rows, "posix_spawn", variant=v), med(rows, "pspawn", variant=v)
        summary.append("  %-9s posix_spawn %.2f  pspawn %.2f  floor %s  posix_spawn/pspawn %.2fx" % (
            v, a, p, "%.2f" % med(rows, "floor", variant=v) if med(rows, "floor", variant=v) else "-",
            a / p))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    summary = ["machine: " + machine(d)]
    rows = read(d, "nsweep")
    if rows:
        fig_nsweep(d, rows, "time per spawn against N (cf. the paper's Figure 4)",
                   "nsweep.png", summary)
    rows = read(d, "cow")
    if rows:
        fig_cow(d, rows, summary)
    rows = read(d, "libs")
    if rows:
        fig_libs(d, rows, summary)
    rows = read(d, "exesize")
    if rows:
        fig_simple(d, rows, "bytes", "executable size (bytes; text padded)",
                   "time per spawn against executable size, N=%s" % rows[0]["n"],
                   "exesize.png", True)
        summary.append("exesize: ms per task for afork / pspawn: " + "  ".join(
            "%sB %.3f/%.3f" % (r["bytes"], med(rows, "afork", pad_kb=r["pad_kb"]),
                               med(rows, "pspawn", pad_kb=r["pad_kb"]))
            for r in rows if r["scheme"] == "pspawn"))
    rows = read(d, "cpus")
    if rows:
        fig_simple(d, rows, "cpus", "CPUs the launcher and its tasks may use (taskset)",
                   "time per spawn against the number of CPUs, N=%s, paper's environment"
                   % rows[0]["n"], "cpus.png", False)
        summary.append("cpus: ms per task for afork / pspawn: " + "  ".join(
            "%s CPUs %.3f/%.3f" % (r["cpus"], med(rows, "afork", cpus=r["cpus"]),
                                   med(rows, "pspawn", cpus=r["cpus"]))
            for r in rows if r["scheme"] == "pspawn"))
    rows = read(d, "python")
    if rows:
        fig_python(d, rows, summary)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
