#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The fault-injection soak's three parts (tests/e2e/faults.sh runs them).

  faults.py inject --uid UID --node NODE --dir DIR --run FILE [--seed S]
      root, on a compute node: while FILE exists, every 0.1-1 s, pick one of
      the user's zygotes, sub-zygotes, pspawn-shims or tasks at random and
      SIGKILL it, or SIGSTOP it for 0.1-3 s and SIGCONT it.  One JSON line
      per fault in DIR/inject-NODE.log.  A step the driver says hangs
      (DIR/hang-LABEL.mark) gets the node's process tree in
      DIR/hang-LABEL.NODE.txt.
  faults.py drive --dir DIR --prog PATH --steps N [--workers K] [--seed S]
      the user, on the controller: N steps, srun --pspawn (-N1..3,
      -n1..12, some with a fan-out of sub-zygotes) and salloc + mpirun
      --mca odls pspawn, mixed, K at a time, each under a time limit (srun
      -t / salloc -t, and a kill after --timeout s).  One JSON line per step
      in DIR/steps.log.
  faults.py check --dir DIR
      the user, on the controller: joins the steps, the faults, the tasks'
      lines and sacct; prints one "key value" line per figure and one
      "fail ..." line per failed expectation.  DIR/jobs.txt: the soak's job
      ids (for the leftover check).

A task (faults-task) writes "LABEL RANK PID start" at main and "... done"
before it exits 0.  What a step must show:
  - no task/shim of it SIGKILLed: exit 0, sacct COMPLETED 0:0, and every
    rank exactly one start and one done line (else a loss, or a duplicate);
  - one SIGKILLed: the signal in sacct (srun), a failed job (mpirun), and
    no rank with two start lines.  ("late": the victim had already written
    its done line, so the kill may have come after its end: not a failure.)
  - zygotes and sub-zygotes killed or stopped, shims and tasks stopped:
    the same as untouched.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

PROXY = 'libpspawn-proxy'
# poll, ppoll, epoll_wait, epoll_pwait, epoll_pwait2: a parked zygote waits
# in one of these; a held task (before its first instruction) in futex.
POLLISH = {7, 271, 232, 281, 441}


def read(path, mode='r'):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


# ---- inject -------------------------------------------------------------

def proc_info(pid):
    st = read(f'/proc/{pid}/status')
    stat = read(f'/proc/{pid}/stat')
    if not st or not stat:
        return None
    fields = stat[stat.rindex(')') + 2:].split()
    info = {'pid': pid, 'state': fields[0], 'ppid': int(fields[1]), 'start': int(fields[19]),
            'comm': stat[stat.index('(') + 1:stat.rindex(')')]}
    m = re.search(r'^Uid:\s+(\d+)', st, re.M)
    info['uid'] = int(m.group(1)) if m else -1
    return info


def snapshot(uid):
    procs = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            i = proc_info(int(d))
            if i:
                procs[i['pid']] = i
    for p in procs.values():
        if p['uid'] != uid:
            continue
        maps = read(f'/proc/{p["pid"]}/maps') or ''
        p['proxy'] = PROXY in maps
        sc = (read(f'/proc/{p["pid"]}/syscall') or '').split()
        p['syscall'] = int(sc[0]) if sc and sc[0].lstrip('-').isdigit() else -1
    return procs


def classify(procs, uid):
    """{class: [proc]} for the user's processes that are fair game."""
    out = {'zygote': [], 'subzygote': [], 'shim': [], 'task': []}
    direct = {}
    for p in procs.values():
        if p['uid'] != uid or p['state'] in 'ZX':
            continue
        parent = procs.get(p['ppid'], {})
        if p['comm'] == 'pspawn-shim':
            out['shim'].append(p)
        elif p['comm'] == 'faults-running':
            out['task'].append(p)
        elif p.get('proxy') and p['syscall'] in POLLISH:
            if parent.get('comm') == 'pspawn-shim':
                out['zygote'].append(p)
            elif parent.get('comm') == 'prted':
                # Direct mode: the root and its sub-zygotes are all prted's
                # children (CLONE_PARENT); the root is the oldest.
                direct.setdefault(p['ppid'], []).append(p)
            elif parent.get('proxy'):
                out['subzygote'].append(p)
    for group in direct.values():
        group.sort(key=lambda q: q['start'])
        out['zygote'].append(group[0])
        out['subzygote'].extend(group[1:])
    return out


def describe(p, faults_dir):
    """What the soak knows a victim by: its step's label, rank, job."""
    d = {}
    args = (read(f'/proc/{p["pid"]}/cmdline') or '').split('\0')
    if faults_dir in args:
        i = args.index(faults_dir)
        if i + 1 < len(args):
            d['label'] = args[i + 1]
    env = (read(f'/proc/{p["pid"]}/environ') or '').split('\0')
    envd = dict(e.split('=', 1) for e in env if '=' in e)
    for k in ('OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'SLURM_PROCID'):
        if envd.get(k):
            d['rank'] = envd[k]
            break
    m = re.search(r'job_(\d+)/step_(\w+)', read(f'/proc/{p["pid"]}/cgroup') or '')
    if m:
        d['job'], d['step'] = int(m.group(1)), m.group(2)
    return d


def same_process(p):
    """P is still the process we chose (its pid not reused), and alive."""
    i = proc_info(p['pid'])
    return i is not None and i['start'] == p['start'] and i['state'] not in 'ZX'


def dump_tree(uid, path):
    procs = snapshot(uid)
    lines = []
    for p in sorted(procs.values(), key=lambda q: q['pid']):
        if p['uid'] != uid:
            continue
        wchan = read(f'/proc/{p["pid"]}/wchan') or ''
        stack = (read(f'/proc/{p["pid"]}/stack') or '').replace('\n', ' | ')
        args = (read(f'/proc/{p["pid"]}/cmdline') or '').replace('\0', ' ')
        cg = re.search(r'job_\S*', read(f'/proc/{p["pid"]}/cgroup') or '')
        lines.append(f'{p["pid"]} ppid={p["ppid"]} {p["state"]} {p["comm"]} proxy={int(p.get("proxy", 0))} '
                     f'syscall={p.get("syscall")} wchan={wchan} cgroup={cg.group(0) if cg else ""} '
                     f'args={args} stack={stack[:400]}')
    unix = [l for l in (read('/proc/net/unix') or '').splitlines() if '@pspawn' in l]
    with open(path, 'w') as f:
        f.write('\n'.join(lines + ['-- pspawn sockets'] + unix) + '\n')


def inject(a):
    rng = random.Random(a.seed)
    weights = {'zygote': 4, 'subzygote': 3, 'shim': 1.5, 'task': 1.5}
    kill_p = {'zygote': 0.5, 'subzygote': 0.5, 'shim': 0.35, 'task': 0.35}
    stopped = {}
    log = open(os.path.join(a.dir, f'inject-{a.node}.log'), 'a')
    term = []
    signal.signal(signal.SIGTERM, lambda *_: term.append(1))
    try:
        while os.path.exists(a.run) and not term:
            # Now and then at once: a zygote's first milliseconds (parking,
            # forking its first tasks) are worth hitting too.
            time.sleep(rng.uniform(0, 0.05) if rng.random() < 0.3 else rng.uniform(0.1, 1.0))
            for mark in os.listdir(a.dir):
                if mark.startswith('hang-') and mark.endswith('.mark'):
                    out = os.path.join(a.dir, f'{mark[:-5]}.{a.node}.txt')
                    if not os.path.exists(out):
                        dump_tree(a.uid, out)
            procs = snapshot(a.uid)
            classes = classify(procs, a.uid)
            present = [c for c in classes if classes[c]]
            if not present:
                continue
            cls = rng.choices(present, [weights[c] for c in present])[0]
            p = rng.choice(classes[cls])
            kind = 'kill' if rng.random() < kill_p[cls] else 'stop'
            try:
                fd = os.pidfd_open(p['pid'])
            except OSError:
                continue
            try:
                # Through the pidfd: never another process that got the pid.
                if not same_process(p):
                    continue
                rec = {'t': time.time(), 'node': a.node, 'pid': p['pid'], 'class': cls, 'kind': kind,
                       'comm': p['comm'], 'ppid': p['ppid']}
                rec.update(describe(p, a.dir))
                if cls in ('zygote', 'subzygote'):
                    # How far it got: the tasks it forked (held ones wait in
                    # futex for their go), and the stand-ins of its step here.
                    kids = [q for q in procs.values() if q['ppid'] == p['pid']]
                    rec['kids'] = len(kids)
                    rec['held'] = sum(1 for q in kids if q.get('syscall') == 202)
                    uptime = float((read('/proc/uptime') or '0').split()[0])
                    rec['age_ms'] = int(1000 * (uptime - p['start'] / os.sysconf('SC_CLK_TCK')))
                if kind == 'stop':
                    rec['stop_ms'] = int(rng.uniform(100, 3000))
                signal.pidfd_send_signal(fd, signal.SIGKILL if kind == 'kill' else signal.SIGSTOP)
                log.write(json.dumps(rec) + '\n')
                log.flush()
                if kind == 'stop':
                    stopped[p['pid']] = fd
                    time.sleep(rec['stop_ms'] / 1000)
                    signal.pidfd_send_signal(fd, signal.SIGCONT)
                    del stopped[p['pid']]
            except ProcessLookupError:
                pass    # gone meanwhile
            finally:
                if stopped.pop(p['pid'], None) is not None:     # interrupted mid-stop
                    try:
                        signal.pidfd_send_signal(fd, signal.SIGCONT)
                    except OSError:
                        pass
                os.close(fd)
    finally:
        log.close()


# ---- drive --------------------------------------------------------------

def plan(n, rng, prog, d, max_ms, mpirun=True):
    steps = []
    for i in range(n):
        label = f's{i:05d}'
        nodes = rng.randint(1, 3)
        fan = rng.random() < 0.25
        task = [prog, d, label, str(max_ms)]
        # The same draws with or without mpirun: a seed plans the same srun steps.
        if rng.random() < 0.3 and mpirun:
            kind = 'mpirun'
            if fan:
                # 2 ranks on each node, bound to its 2 cores, each core's
                # from its own sub-zygote.  Whole nodes: the nodes claim 4
                # CPUs and have the host's 2, and a binding to cores 2-3
                # fails before any rank exists, pspawn or not.
                k = 2 * nodes
                alloc = ['--ntasks-per-node=2', '--exclusive']
                mp = ['--prtemca', 'odls_pspawn_fanout', 'core', '-n', str(k), '--map-by', 'ppr:2:node',
                      '--bind-to', 'core']
            else:
                k = rng.randint(nodes, 4 * nodes)
                alloc = []
                mp = ['-n', str(k), '--bind-to', 'none']
            cmd = ['salloc', '-Q', '-N', str(nodes), '-n', str(k)] + alloc + ['-t', '1', '-J', f'faults-{label}',
                   'mpirun', '--mca', 'odls', 'pspawn'] + mp + task
        else:
            kind = 'srun'
            if fan:
                k = rng.randint(nodes, 2 * nodes)
                opt = ['--pspawn=on,fanout=core', '--cpu-bind=cores', '--ntasks-per-node=2', '--exclusive']
            else:
                k = rng.randint(nodes, 4 * nodes)
                opt = ['--pspawn']
            cmd = ['srun'] + opt + ['-N', str(nodes), '-n', str(k), '-t', '1', '-J', f'faults-{label}'] + task
        steps.append({'label': label, 'kind': kind, 'nodes': nodes, 'tasks': k, 'fanout': fan, 'cmd': cmd})
    return steps


def run_step(s, d, timeout, log, lock):
    out = open(os.path.join(d, s['label'] + '.out'), 'w')
    t0 = time.time()
    p = subprocess.Popen(s['cmd'], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    timed_out = False
    marked = False
    while p.poll() is None:
        el = time.time() - t0
        if el > timeout - 10 and not marked:
            open(os.path.join(d, f'hang-{s["label"]}.mark'), 'w').close()
            marked = True
        if el > timeout:
            timed_out = True
            time.sleep(3)   # the injectors' dumps
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)
                except OSError:
                    pass
                try:
                    p.wait(5)
                    break
                except subprocess.TimeoutExpired:
                    pass
            subprocess.run(['scancel', '-n', f'faults-{s["label"]}'], timeout=30)
            break
        time.sleep(0.1)
    p.wait()
    out.close()
    rec = dict(s, rc=p.returncode, secs=round(time.time() - t0, 2), timed_out=timed_out,
               start=t0)
    with lock:
        log.write(json.dumps(rec) + '\n')
        log.flush()


def drive(a):
    rng = random.Random(a.seed)
    steps = plan(a.steps, rng, a.prog, a.dir, a.max_ms, not a.no_mpirun)
    log = open(os.path.join(a.dir, 'steps.log'), 'a')
    lock = threading.Lock()
    todo = list(steps)

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                s = todo.pop(0)
            run_step(s, a.dir, a.timeout, log, lock)
    threads = [threading.Thread(target=worker) for _ in range(a.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()


# ---- check --------------------------------------------------------------

def sacct(start):
    out = subprocess.run(['sacct', '-n', '-P', '-S', start, '-E', 'now',
                          '-o', 'JobID,JobName,State,ExitCode,ElapsedRaw'],
                         capture_output=True, text=True, timeout=120).stdout
    jobs = {}
    for line in out.splitlines():
        f = line.split('|')
        if len(f) < 5:
            continue
        jid = f[0]
        base = jid.split('.')[0]
        jobs.setdefault(base, {})[jid] = {'name': f[1], 'state': f[2], 'exit': f[3],
                                          'elapsed': int(f[4] or 0)}
    return jobs


def check(a):
    d = a.dir
    steps = [json.loads(l) for l in open(os.path.join(d, 'steps.log'))]
    faults = []
    for f in os.listdir(d):
        if f.startswith('inject-') and f.endswith('.log'):
            faults += [json.loads(l) for l in open(os.path.join(d, f)) if l.strip()]
    start = time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(min(s['start'] for s in steps) - 120))
    jobs = sacct(start)
    by_name = {}
    for jid, recs in jobs.items():
        name = recs.get(jid, {}).get('name', '')
        if name.startswith('faults-'):
            by_name[name[len('faults-'):]] = jid
    with open(os.path.join(d, 'jobs.txt'), 'w') as f:
        f.write('\n'.join(sorted(by_name.values(), key=int)) + '\n')
    label_of_job = {int(j): l for l, j in by_name.items()}
    per_step = {}
    unattributed = 0
    for f in faults:
        label = f.get('label') or label_of_job.get(f.get('job'))
        if label is None:
            unattributed += 1
            continue
        f['label'] = label
        per_step.setdefault(label, []).append(f)
    fig = {'steps': len(steps), 'srun': 0, 'mpirun': 0, 'faults': len(faults), 'hangs': 0,
           'losses': 0, 'duplicates': 0, 'mismatches': 0, 'late_kills': 0, 'killed_steps': 0,
           'anomalies': 0, 'unattributed': unattributed,
           # (sub-)zygote kills in its first half second (while it parks
           # and forks the first tasks), or with a task held before its go
           'early_zygote_kills': sum(1 for f in faults if f['kind'] == 'kill' and 'kids' in f and
                                     (f.get('held', 0) > 0 or f.get('age_ms', 1e9) < 500))}
    for c in ('zygote', 'subzygote', 'shim', 'task'):
        for k in ('kill', 'stop'):
            fig[f'{c}_{k}'] = sum(1 for f in faults if f['class'] == c and f['kind'] == k)
    fails = []
    for s in steps:
        label = s['label']
        fig[s['kind']] += 1
        fs = per_step.get(label, [])
        kills = [f for f in fs if f['kind'] == 'kill' and f['class'] in ('task', 'shim')]
        lines = (read(os.path.join(d, label)) or '').splitlines()
        starts, dones = {}, {}
        pid_done = set()
        for l in lines:
            w = l.split()
            if len(w) != 4 or w[0] != label or w[3] not in ('start', 'done'):
                fig['anomalies'] += 1
                fails.append(f'anomaly: {label}: malformed line "{l}"')
                continue
            (starts if w[3] == 'start' else dones).setdefault(w[1], []).append(int(w[2]))
            if w[3] == 'done':
                pid_done.add(int(w[2]))
        jid = by_name.get(label)
        recs = jobs.get(jid, {}) if jid else {}
        job = recs.get(jid, {})
        stepr = recs.get(f'{jid}.0', {}) if s['kind'] == 'srun' else job
        where = f'{label} ({s["kind"]} -N{s["nodes"]} -n{s["tasks"]}{" fanout" if s["fanout"] else ""}, job {jid})'
        faults_txt = '; '.join(f'{f["class"]} {f["kind"]} pid {f["pid"]} on {f["node"]}'
                               f'{" rank " + f["rank"] if f.get("rank") and f["class"] in ("task", "shim") else ""}'
                               for f in fs) or 'no fault'
        # time limit
        if s['timed_out'] or 'TIMEOUT' in job.get('state', '') or 'TIMEOUT' in stepr.get('state', ''):
            fig['hangs'] += 1
            fails.append(f'hang: {where}: rc {s["rc"]}, {s["secs"]} s, sacct {job.get("state")} '
                         f'{stepr.get("state")}; faults: {faults_txt}')
            continue
        if not jid:
            fig['mismatches'] += 1
            fails.append(f'mismatch: {where}: no sacct record, rc {s["rc"]}')
            continue
        dup = [r for r, p in starts.items() if len(p) > 1]
        if dup:
            fig['duplicates'] += len(dup)
            fails.append(f'duplicate: {where}: rank(s) {",".join(dup)} started twice '
                         f'({", ".join(str(starts[r]) for r in dup)}); faults: {faults_txt}')
        ranks = {str(r) for r in range(s['tasks'])}
        odd = (set(starts) | set(dones)) - ranks
        if odd:
            fig['anomalies'] += 1
            fails.append(f'anomaly: {where}: lines of unknown ranks {sorted(odd)}')
        sig = stepr.get('exit', '').split(':')[-1]
        if kills:
            fig['killed_steps'] += 1
            killed_ok = (s['rc'] != 0 and (sig == '9' if s['kind'] == 'srun' else stepr.get('exit') != '0:0'))
            if not killed_ok:
                # The kill came after the victim's end?  Then its rank is done.
                late = all((f['class'] == 'task' and f['pid'] in pid_done) or
                           (f['class'] == 'shim' and f.get('rank') in dones) for f in kills)
                if late and s['rc'] == 0:
                    fig['late_kills'] += 1
                else:
                    fig['mismatches'] += 1
                    fails.append(f'mismatch: {where}: a task or shim was SIGKILLed, yet rc {s["rc"]}, '
                                 f'sacct {stepr.get("state")} {stepr.get("exit")}; faults: {faults_txt}')
            continue
        lost = sorted((r for r in ranks if r not in starts or r not in dones), key=int)
        if s['rc'] != 0 or stepr.get('exit') != '0:0' or stepr.get('state') != 'COMPLETED':
            fig['mismatches'] += 1
            fails.append(f'mismatch: {where}: no task or shim killed, yet rc {s["rc"]}, sacct '
                         f'{stepr.get("state")} {stepr.get("exit")}, ranks not done: {",".join(lost) or "none"}; '
                         f'faults: {faults_txt}; output: '
                         f'{" / ".join((read(os.path.join(d, label + ".out")) or "").splitlines()[:4])}')
        elif lost:
            fig['losses'] += len(lost)
            fails.append(f'loss: {where}: rank(s) {",".join(lost)} '
                         f'{"never started" if all(r not in starts for r in lost) else "did not finish"} '
                         f'(rc {s["rc"]}, sacct {stepr.get("state")} {stepr.get("exit")}); faults: {faults_txt}')
    for k, v in fig.items():
        print(f'{k} {v}')
    for f in fails:
        print(f'fail {f}')


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    i = sub.add_parser('inject')
    i.add_argument('--uid', type=int, required=True)
    i.add_argument('--node', required=True)
    i.add_argument('--dir', required=True)
    i.add_argument('--run', required=True)
    i.add_argument('--seed', type=int, default=None)
    dr = sub.add_parser('drive')
    dr.add_argument('--dir', required=True)
    dr.add_argument('--prog', required=True)
    dr.add_argument('--steps', type=int, default=50)
    dr.add_argument('--workers', type=int, default=3)
    dr.add_argument('--seed', type=int, default=None)
    dr.add_argument('--timeout', type=int, default=100)
    dr.add_argument('--max-ms', type=int, default=1500)
    dr.add_argument('--no-mpirun', action='store_true',
                    help='srun steps only (no pspawn ODLS component on the nodes)')
    c = sub.add_parser('check')
    c.add_argument('--dir', required=True)
    a = ap.parse_args()
    {'inject': inject, 'drive': drive, 'check': check}[a.cmd](a)


if __name__ == '__main__':
    sys.exit(main())
