#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where the page faults of a zygote's tasks go.

    bench/faults.py [-n N] [--floor SO] -- PROG [ARGS]

Runs PROG once as the floor does (bench/floor.c's library preloaded, LD_BIND_NOW=1,
PSPAWN_FLOOR=N: the parked program forks N children itself, each runs main
and exits), traces every page fault of those children with the kernel's
exceptions:page_fault_user and page_fault_kernel events (tracefs; needs
root), and prints the faults per task by kind (copy-on-write, or a page
not mapped yet: read, write, instruction fetch) and by the zygote's mapping
they fall in (the program, ld.so, libc, the floor library, other libraries, heap,
stack, anonymous memory, or a mapping the task made itself), with the code
that faulted.  A task forked from a zygote shares every page with it:
each page it writes costs a copy (`bench/forkcost GLOB --cow PAGES` times
one here), each file page it runs or reads is mapped again on demand.

The floor library is --floor, else $PSPAWN_FLOOR_LIB, else the one bench/run
builds (_build/bench/bench/.libs/libpspawn-floor.so).
"""
import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import time

TRACEFS = "/sys/kernel/tracing"
EVENTS = ("events/exceptions/page_fault_user", "events/exceptions/page_fault_kernel")
LINE = re.compile(r"-(\d+)\s+\[\d+\].*?page_fault_(user|kernel): address=(\S+) ip=(\S+) "
                  r"error_code=0x([0-9a-f]+)")


def die(msg):
    sys.exit(f"faults: {msg}")


def tw(path, value):
    with open(os.path.join(TRACEFS, path), "w") as f:
        f.write(value)


def tr(path):
    with open(os.path.join(TRACEFS, path)) as f:
        return f.read()


class Maps:
    """The zygote's /proc/PID/maps, each range named by what it is."""

    def __init__(self, text, prog, floor):
        self.ranges = []
        files = set()
        prog = os.path.realpath(prog)
        floor = os.path.realpath(floor)
        for line in text.splitlines():
            f = line.split(None, 5)
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            path = f[5].strip() if len(f) > 5 else ""
            base = os.path.basename(path)
            if path == prog:
                what = "the program"
            elif path == floor:
                what = "the floor library"
            elif base.startswith("ld-linux") or base.startswith("ld-musl"):
                what = "ld.so"
            elif base.startswith("libc.so") or base.startswith("libc-"):
                what = "libc"
            elif path.startswith("/"):
                what = "other libraries"
                files.add(path)
            elif path in ("[heap]", "[stack]", "[vdso]", "[vvar]"):
                what = path
            else:
                what = "anonymous"
            self.ranges.append((lo, hi, f[1], what))
        self.ranges.sort()
        self.starts = [r[0] for r in self.ranges]
        self.nfiles = len(files)

    def find(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and self.ranges[i][0] <= addr < self.ranges[i][1]:
            return self.ranges[i]
        return None

    def where(self, addr):
        r = self.find(addr)
        return (r[3], r[2]) if r else ("the task's own mapping", "")

    def who(self, ip, kernel):
        if kernel:
            return "the kernel (for the task)"
        r = self.find(ip)
        return r[3] if r else "elsewhere"


def kind(code, kernel):
    if code & 0x1 and code & 0x2:
        k = "copy-on-write"
    elif code & 0x10:
        k = "exec, not mapped"
    elif code & 0x2:
        k = "write, not mapped"
    elif code & 0x1:
        k = "read, protection"
    else:
        k = "read, not mapped"
    return k


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="children (default 200)")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--floor", default=os.environ.get(
        "PSPAWN_FLOOR_LIB", os.path.join(here, "..", "_build", "bench", "bench", ".libs",
                                         "libpspawn-floor.so")))
    ap.add_argument("prog", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.prog[1:] if a.prog[:1] == ["--"] else a.prog
    if not argv:
        ap.error("no program")
    if not os.path.exists(a.floor):
        die(f"no floor library at {a.floor} (set PSPAWN_FLOOR_LIB or --floor)")
    if os.geteuid() != 0:
        die("needs root (tracefs)")
    if not os.path.isdir(os.path.join(TRACEFS, "events/exceptions")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=False)
        if not os.path.isdir(os.path.join(TRACEFS, "events/exceptions")):
            die(f"no exceptions:page_fault_user event under {TRACEFS}")

    comm = os.path.basename(argv[0])[:15]
    saved = {"tracing_on": tr("tracing_on").strip(),
             "buffer_size_kb": tr("buffer_size_kb").split()[0]}
    for e in EVENTS:
        saved[e + "/enable"] = tr(e + "/enable").strip()
        saved[e + "/filter"] = tr(e + "/filter").strip()
    env = dict(os.environ)
    pre = env.get("LD_PRELOAD", "")
    env.update(LD_PRELOAD=(pre + " " if pre else "") + a.floor, LD_BIND_NOW="1",
               PSPAWN_FLOOR=str(a.n))
    try:
        tw("tracing_on", "0")
        tw("trace", "")
        tw("buffer_size_kb", str(max(8192, a.n * 200)))   # ~100 bytes a fault
        for e in EVENTS:
            tw(e + "/filter", f'comm == "{comm}"')
            tw(e + "/enable", "1")
        tw("tracing_on", "1")
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        maps = None
        while p.poll() is None and maps is None:
            if children(p.pid):           # parked: the forks have begun
                with open(f"/proc/{p.pid}/maps") as f:
                    maps = f.read()
            else:
                time.sleep(0.002)
        err = p.communicate()[1]
        tw("tracing_on", "0")
        trace = tr("trace")
    finally:
        for e in EVENTS:
            tw(e + "/enable", saved[e + "/enable"])
            tw(e + "/filter", "0" if saved[e + "/filter"] == "none" else saved[e + "/filter"])
        tw("buffer_size_kb", saved["buffer_size_kb"])
        tw("tracing_on", saved["tracing_on"])
    if maps is None or "pspawn-floor:" not in err:
        die(f"{argv[0]} did not park and fork (is the floor library preloadable?): {err.strip()[-300:]}")
    kept = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", trace)
    if kept and kept.group(1) != kept.group(2):
        print("faults: the trace buffer overflowed: figures are low; try a smaller -n")
    m = Maps(maps, argv[0], a.floor)
    by = collections.Counter()
    total = collections.Counter()
    tasks = set()
    for line in trace.splitlines():
        g = LINE.search(line)
        if not g or int(g.group(1)) == p.pid:
            continue
        tasks.add(g.group(1))
        kernel = g.group(2) == "kernel"
        try:
            addr = int(g.group(3), 16)
            ip = int(g.group(4), 16)
        except ValueError:
            continue                      # a symbol name: not a task address
        k = kind(int(g.group(5), 16), kernel)
        where, perm = m.where(addr)
        by[(k, where, perm, m.who(ip, kernel))] += 1
        total[k] += 1
    n = len(tasks)
    if not n:
        die("no fault of a child was traced")
    print(f"faults: {n} children of {argv[0]} traced ({len(m.ranges)} mappings in the "
          f"zygote, {m.nfiles} files as 'other libraries'); faults per task:")
    print(f"  {'count':>7}  {'kind':<18} {'in (zygote mapping)':<28} {'by code in'}")
    for (k, where, perm, who), c in by.most_common():
        if c / n < 0.05:
            continue
        print(f"  {c / n:7.1f}  {k:<18} {(where + ' ' + perm).strip():<28} {who}")
    print(f"  {sum(total.values()) / n:7.1f}  in all: " +
          ", ".join(f"{k} {c / n:.1f}" for k, c in total.most_common()))


if __name__ == "__main__":
    main()
