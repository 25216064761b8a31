#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The benchmark suite's experiments (bench/suite runs this after building).

Each experiment generates its programs (cached in the build directory,
keyed by their parameters), runs bench/spawnbench with the schemes
interleaved and repeated, and writes one CSV under the results directory:
one row per point and scheme, with the median, min and max over the
repeats of the time per task.  plots.py draws the PNGs from these CSVs.

Experiments (--only NAME):
  nsweep   time per spawn against N, every scheme, empty and the paper's
           environment (the paper's Figure 4)
  cow      the copy-on-write test: each task writes the first byte of every
           page of 100 MB of data set up before main (Figure 5)
  libs     time per spawn against the number of shared libraries
  exesize  time per spawn against the size of the executable
  cpus     time per spawn against the number of CPUs (taskset)
  python   a Pynamic-like Python code: python3 importing M generated C
           extension modules, pspawn (python3 as the zygote) against
           posix_spawn, plain and with the modules preloaded
"""

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import time

ALL_SCHEMES = ["sfork", "afork", "vfork", "posix_spawn", "pfork", "pspawn", "floor"]
EXPERIMENTS = ["nsweep", "cow", "libs", "exesize", "cpus", "python"]
PADS_KB = [0, 64, 1024, 10240, 102400]
COW_MB = 100

# Parameters of the two modes.
MODES = {
    "quick": {
        "nsweep_n": [1, 10, 100, 1000], "repeats": 3,
        "cow_n": [10, 50], "cow_repeats": 2,
        "libs": [0, 10, 50, 100, 200], "libs_n": 100,
        "exesize_kb": [0, 1024, 102400], "exesize_n": 100,
        "cpus_n": 200,
        "py_modules": 50, "py_n": 20, "py_repeats": 3,
    },
    "full": {
        "nsweep_n": [1, 3, 10, 30, 100, 300, 1000, 3000, 10000], "repeats": 3,
        "cow_n": [10, 200], "cow_repeats": 3,
        "libs": [0, 10, 50, 100, 200, 500, 1000], "libs_n": 200,
        "exesize_kb": PADS_KB, "exesize_n": 500,
        "cpus_n": 1000,
        "py_modules": 200, "py_n": 50,
        # 50 tasks of 100+ ms at once on 2 cores: noisy, so more repeats.
        "py_repeats": 9,
    },
}

# bench/suite's start, so that its progress lines and ours count alike.
try:
    T0 = time.monotonic() - (time.time() - float(os.environ["BENCH_SUITE_START"]))
except (KeyError, ValueError):
    T0 = time.monotonic()


def say(msg):
    el = int(time.monotonic() - T0)
    print("[%02d:%02d] %s" % (el // 60, el % 60, msg), flush=True)


class Suite:
    def __init__(self, args):
        self.args = args
        self.mode = "quick" if args.quick else "full"
        self.p = MODES[self.mode]
        self.build = os.path.abspath(args.build)
        self.src = os.path.dirname(os.path.abspath(__file__))
        self.work = os.path.join(self.build, "work")
        self.out = os.path.abspath(args.out)
        self.sb = os.path.join(self.build, "bench", "spawnbench")
        self.ldpath = os.path.join(self.work, "ldpath")
        self.env = dict(os.environ)
        self.env["PSPAWN_PROXY"] = os.path.join(self.build, "libpspawn", ".libs",
                                                "libpspawn-proxy.so")
        self.log = open(os.path.join(self.out, "spawnbench.log"), "a")
        self.notes = []     # lines for machine.txt

    # ---- helpers ---------------------------------------------------------
    def env_arg(self, env):
        return "paper:" + self.ldpath if env == "paper" else env

    def gen(self, script, *args):
        cmd = [sys.executable, os.path.join(self.src, script)] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True)
        self.log.write("$ %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        self.log.flush()
        if r.returncode:
            sys.stderr.write(r.stdout + r.stderr)
            sys.exit("suite: %s failed" % script)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        say("  " + last)

    def spawnbench(self, prog, n, schemes, repeats, env="empty", extra=(), cpus=None):
        """Runs spawnbench; returns {scheme: [per_task_ms...]}, fell_back."""
        cmd = [self.sb, "-R", "-n", str(n), "-r", str(repeats),
               "-s", ",".join(schemes), "-e", self.env_arg(env)]
        for x in extra:
            cmd += ["-x", x]
        cmd += ["--"] + (prog if isinstance(prog, list) else [prog])
        if cpus is not None:
            cmd = ["taskset", "-c", "0-%d" % (cpus - 1)] + cmd
        self.log.write("$ %s\n" % " ".join(cmd))
        self.log.flush()
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env)
        self.log.write(r.stderr)
        self.log.flush()
        res = {}
        for row in csv.DictReader(r.stdout.splitlines()):
            res.setdefault(row["scheme"], []).append(float(row["per_task_ms"]))
        fell_back = "fell back to exec" in r.stderr
        if r.returncode:
            say("  WARNING: spawnbench exited %d (see %s): %s" % (
                r.returncode, self.log.name,
                " | ".join(l for l in r.stderr.splitlines()
                           if "failed" in l or "ended" in l)[:300]))
        if fell_back:
            say("  WARNING: pspawn fell back to exec: its numbers measure exec")
        return res, fell_back

    def rows(self, res, fell_back, **key):
        out = []
        for scheme, v in res.items():
            row = dict(key)
            row.update(scheme=scheme, repeats=len(v),
                       median_ms="%.5f" % statistics.median(v),
                       min_ms="%.5f" % min(v), max_ms="%.5f" % max(v),
                       fell_back=int(fell_back and scheme.startswith("pspawn")))
            out.append(row)
        return out

    def write(self, name, rows):
        path = os.path.join(self.out, name + ".csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        say("  wrote %s" % path)

    @staticmethod
    def brief(res, schemes=("afork", "vfork", "posix_spawn", "pspawn")):
        return "  ".join("%s %.3f" % (s, statistics.median(res[s]))
                         for s in schemes if s in res) + " ms/task"

    def load(self):
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])

    # ---- programs ----------------------------------------------------------
    def progs(self):
        """The trivial programs (padded) and the copy-on-write one."""
        d = os.path.join(self.work, "progs")
        self.gen("genlibs.py", "--out", d, "--libs", "0", "--trivial",
                 "--pad-kb", ",".join(map(str, PADS_KB)), "--cow-mb", str(COW_MB))
        return d

    # ---- experiments -------------------------------------------------------
    def exp_nsweep(self):
        prog = os.path.join(self.progs(), "trivial-pad1024k")
        rows = []
        points = [(env, n) for env in ("empty", "paper") for n in self.p["nsweep_n"]]
        for i, (env, n) in enumerate(points, 1):
            # Small N: more repeats, the runs are short and noisy.
            r = max(self.p["repeats"], min(15, 1000 // n))
            say("nsweep %d/%d: env=%s N=%d, %d repeats" % (i, len(points), env, n, r))
            res, fb = self.spawnbench(prog, n, ALL_SCHEMES, r, env=env)
            say("  " + self.brief(res))
            rows += self.rows(res, fb, env=env, n=n)
        self.write("nsweep", rows)

    def exp_cow(self):
        d = self.progs()
        rows = []
        # dirty: the region is written by a constructor (the zygote holds it
        # dirty, each task copies it on write); clean: only main writes it.
        points = [(v, n) for v in ("dirty", "clean") for n in self.p["cow_n"]]
        schemes = ["sfork", "afork", "vfork", "posix_spawn", "pfork", "pspawn"]
        for i, (variant, n) in enumerate(points, 1):
            prog = os.path.join(d, "cow-%dmb%s" % (COW_MB, "-clean" if variant == "clean" else ""))
            r = self.p["cow_repeats"]
            say("cow %d/%d: %d MB, first byte of every page written per task (%s before "
                "main), N=%d, %d repeats" % (i, len(points), COW_MB, variant, n, r))
            res, fb = self.spawnbench(prog, n, schemes, r)
            say("  " + self.brief(res))
            rows += self.rows(res, fb, variant=variant, mb=COW_MB, n=n)
        self.write("cow", rows)

    def exp_libs(self):
        libs = self.p["libs"]
        d = os.path.join(self.work, "libs-%d" % max(libs))
        say("libs: generating %d libraries and %d programs in %s (cached)"
            % (max(libs), len(libs), d))
        self.gen("genlibs.py", "--out", d, "--libs", str(max(libs)),
                 "--sizes", ",".join(map(str, libs)))
        # vfork left out: posix_spawn is glibc's vfork-like clone (CLONE_VM |
        # CLONE_VFORK) + exec, and at 1000 libraries each exec scheme costs
        # minutes.
        schemes = ["posix_spawn", "pfork", "pspawn", "floor"]
        rows = []
        points = [(env, l) for env in ("empty", "paper") for l in libs]
        n = self.p["libs_n"]
        for i, (env, l) in enumerate(points, 1):
            say("libs %d/%d: env=%s L=%d N=%d" % (i, len(points), env, l, n))
            res, fb = self.spawnbench(os.path.join(d, "pynamic-%d" % l), n, schemes,
                                      self.p["repeats"], env=env)
            if "posix_spawn" in res and "pspawn" in res:
                say("  %s  posix_spawn/pspawn %.2fx" % (
                    self.brief(res), statistics.median(res["posix_spawn"]) /
                    statistics.median(res["pspawn"])))
            rows += self.rows(res, fb, env=env, libs=l, n=n)
        self.write("libs", rows)

    def exp_exesize(self):
        d = self.progs()
        rows = []
        kbs = self.p["exesize_kb"]
        n = self.p["exesize_n"]
        for i, kb in enumerate(kbs, 1):
            prog = os.path.join(d, "trivial-pad%dk" % kb)
            size = os.path.getsize(prog)
            say("exesize %d/%d: %s (%d bytes) N=%d" % (i, len(kbs), prog, size, n))
            res, fb = self.spawnbench(prog, n, ALL_SCHEMES, self.p["repeats"])
            say("  " + self.brief(res))
            rows += self.rows(res, fb, pad_kb=kb, bytes=size, n=n)
        self.write("exesize", rows)

    def exp_cpus(self):
        prog = os.path.join(self.progs(), "trivial-pad1024k")
        ncpu = len(os.sched_getaffinity(0))
        ks = sorted({k for k in [1, 2, 4, 8, 16, 32, 64, 128, 256] if k < ncpu} | {ncpu})
        n = self.p["cpus_n"]
        rows = []
        for i, k in enumerate(ks, 1):
            say("cpus %d/%d: taskset -c 0-%d, env=paper N=%d" % (i, len(ks), k - 1, n))
            res, fb = self.spawnbench(prog, n, ALL_SCHEMES, self.p["repeats"],
                                      env="paper", cpus=k)
            say("  " + self.brief(res))
            rows += self.rows(res, fb, cpus=k, env="paper", n=n)
        self.write("cpus", rows)

    def exp_python(self):
        m = self.p["py_modules"]
        d = os.path.join(self.work, "py-%d" % m)
        say("python: generating %d extension modules in %s (cached)" % (m, d))
        self.gen("genpymods.py", "--out", d, "--modules", str(m),
                 "--python", self.args.python)
        with open(os.path.join(d, "preload.txt")) as f:
            preload = f.read().strip()
        prog = [self.args.python, os.path.join(d, "driver.py")]
        n = self.p["py_n"]
        rows = []
        variants = [("plain", ()), ("preloaded", ("LD_PRELOAD=" + preload,))]
        for i, (variant, extra) in enumerate(variants, 1):
            say("python %d/%d: %s, %d modules, N=%d" % (i, len(variants), variant, m, n))
            res, fb = self.spawnbench(prog, n, ["posix_spawn", "pspawn", "floor"],
                                      self.p["py_repeats"], extra=extra)
            say("  " + self.brief(res, ("posix_spawn", "pspawn", "floor")))
            rows += self.rows(res, fb, variant=variant, modules=m, n=n)
        self.write("python", rows)


def machine_lines():
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True,
                                  text=True).stdout.strip()
        except OSError:
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 1048576
    osname = sh(". /etc/os-release && echo \"$PRETTY_NAME\"")
    virt = sh("systemd-detect-virt 2>/dev/null") or "?"
    return [
        "cpu: %s" % cpu,
        "cores: %d online, %d usable here" % (os.cpu_count(), len(os.sched_getaffinity(0))),
        "numa nodes: %s" % (sh("ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l") or "?"),
        "memory: %.1f GiB" % mem,
        "kernel: Linux %s" % platform.release(),
        "glibc: %s" % sh("getconf GNU_LIBC_VERSION").replace("glibc ", ""),
        "os: %s" % osname,
        "virtualisation: %s" % virt,
        "python: %s" % platform.python_version(),
        "gcc: %s" % sh("gcc --version | head -n 1"),
        "hostname: %s" % platform.node(),
    ]


def wait_quiet(limit_s, threshold=0.7):
    """Waits until the 1-minute load average is below THRESHOLD."""
    t = time.monotonic()
    while True:
        with open("/proc/loadavg") as f:
            one = float(f.read().split()[0])
        if one < threshold:
            say("load average %.2f < %.2f: starting" % (one, threshold))
            return True
        if time.monotonic() - t >= limit_s:
            say("load average still %.2f after %d s: running anyway" % (one, limit_s))
            return False
        say("waiting for a quiet machine: load average %.2f" % one)
        time.sleep(30)


def main():
    ap = argparse.ArgumentParser(description="libpspawn's benchmark suite "
                                 "(run it through bench/suite)")
    ap.add_argument("--build", required=True, help="the suite's build directory")
    ap.add_argument("--out", required=True, help="results directory")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated experiments: "
                    + ", ".join(EXPERIMENTS))
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the Python of the python experiment")
    ap.add_argument("--wait-quiet", type=int, default=0, metavar="S",
                    help="first wait up to S seconds for a load average < 0.7")
    ap.add_argument("--command", default="", help="the command line, for machine.txt")
    args = ap.parse_args()
    only = [e for e in args.only.split(",") if e] or EXPERIMENTS
    bad = [e for e in only if e not in EXPERIMENTS]
    if bad:
        ap.error("unknown experiment(s) %s; known: %s" % (",".join(bad), ", ".join(EXPERIMENTS)))
    os.makedirs(args.out, exist_ok=True)
    s = Suite(args)
    if not os.access(s.sb, os.X_OK):
        sys.exit("suite: %s is not built" % s.sb)

    say("suite (%s mode): %s -> %s" % (s.mode, ", ".join(only), s.out))
    quiet = wait_quiet(args.wait_quiet) if args.wait_quiet else None
    info = machine_lines()
    info.append("date: %s" % time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    info.append("mode: %s" % s.mode)
    info.append("command: %s" % (args.command or "bench/suite"))
    commit = subprocess.run(["git", "-C", s.src, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    info.append("commit: %s" % (commit or "?"))
    if quiet is not None:
        info.append("waited for a quiet machine (1-min load < 0.7): %s"
                    % ("yes" if quiet else "NO, it never got quiet"))
    loads = []
    for e in only:
        load = s.load()
        loads.append("load average before %s: %s" % (e, load))
        say("== %s (load average %s)" % (e, load))
        getattr(s, "exp_" + e)()
    info += loads
    info.append("elapsed: %.0f s" % (time.monotonic() - T0))
    path = os.path.join(s.out, "machine.txt")
    # --only keeps what earlier runs measured: append their loads.
    with open(path, "w") as f:
        f.write("\n".join(info) + "\n")
    say("wrote %s" % path)

    r = subprocess.run([sys.executable, os.path.join(s.src, "plots.py"), s.out])
    if r.returncode:
        sys.exit("suite: plots.py failed")
    say("done in %.0f s" % (time.monotonic() - T0))


if __name__ == "__main__":
    main()
