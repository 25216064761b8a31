# SPDX-License-Identifier: BSD-3-Clause
# The warm Python zygote's bootstrap, its first part (python-embed.c runs
# it with warm.py after it, in one namespace of their own): what the zygote
# learns and checks of the modules it may import ahead.  The cache of what
# a script's tasks imported, per script; what importing a module left
# behind in the process or drew for it (tried in forked children); what
# an import reads of what differs between tasks.

import os
import sys
import time

_SCRIPT, _COMMAND, _MODULE = 0, 1, 2      # wire/python.h, enum pspawn_py_run


def _identity(kind, what, options, env, cache_dir, real=None):
    """The cache file and the key its first line must hold: the
    interpreter (path, device, inode, mtime), its options and start-up
    environment, and what it runs (a script's path and mtime; REAL: its
    real path, when known)."""
    import zlib
    st = os.stat(sys.executable)
    parts = [os.path.realpath(sys.executable), st.st_dev, st.st_ino, st.st_mtime_ns]
    parts += options
    parts += sorted('%s=%s' % kv for kv in env.items()
                    if kv[0].startswith(('PYTHON', 'LC_')) or kv[0] in ('LANG', 'HOME'))
    if kind == _SCRIPT:
        path = real or os.path.realpath(what)
        parts += ['script', path, os.stat(path).st_mtime_ns]
        name = os.path.basename(path)
    else:
        parts += ['-m' if kind == _MODULE else '-c', what]
        name = what if kind == _MODULE else 'command'
    key = '\x1f'.join(map(str, parts))
    name = ''.join(c if c.isalnum() or c in '._-' else '_' for c in name)[:64]
    return os.path.join(cache_dir, '%s-%08x' % (name, zlib.crc32(key.encode()))), key

def _read_cache(path, key):
    """{name: [verdict, file]}: the verdict 'ok', 'untried', or why the
    module is left out; the identity of the file it was learnt from
    (device:inode:size:mtime), '-' for none."""
    try:
        with open(path, encoding='utf-8') as f:
            if f.readline().rstrip('\n') != repr(key):
                return {}
            return {w[1]: [w[0], w[2] if len(w) > 2 else '-']
                    for w in (line.rstrip('\n').split(' ') for line in f) if len(w) > 1}
    except (OSError, ValueError):
        return {}

def _write_cache(path, key, verdicts):
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = '%s.%d' % (path, os.getpid())
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(repr(key) + '\n')
            for name, (verdict, ident) in verdicts.items():
                f.write('%s %s %s\n' % (verdict, name, ident))
        os.replace(tmp, path)
    except OSError:
        pass

def _file_of(module):
    """The file a module's code came from, or None."""
    spec = getattr(module, '__spec__', None)
    origin = getattr(spec, 'origin', None)
    if not isinstance(origin, str) or not getattr(spec, 'has_location', False):
        return None
    return origin

def _file_identity(path):
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return '%d:%d:%d:%d' % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

# ---- what importing a module left behind -----------------------------
def _streams_state():
    """The standard streams as a task rebuilds them: which objects,
    how they buffer and encode; who holds them (a module's reference
    would keep the zygote's); the logging handlers there are."""
    out = []
    for s in (sys.stdin, sys.stdout, sys.stderr):
        out.append((id(s), sys.getrefcount(s) if s is not None else 0,
                    getattr(s, 'line_buffering', None), getattr(s, 'write_through', None),
                    getattr(s, 'encoding', None), getattr(s, 'errors', None)))
    logging = sys.modules.get('logging')
    handlers = len(getattr(getattr(logging, 'root', None), 'handlers', ()))
    return out, handlers

_HELD_STREAM = 'kept a reference to a standard stream'

def _stream_holders(streams):
    """Where objects hold the standard streams STREAMS (stdin, stdout,
    stderr): the places a task points at its own streams instead, as
    (kind, holder, slot, index into STREAMS), kind 'item' (a dict's key
    or a list's index: module globals, instance attributes, keyword
    defaults), 'attr' (an object's attribute: threading's main thread's
    _stderr) or 'defaults' (a function's positional defaults); and how many holders a task could not re-point (a tuple
    that is no function's defaults, an object of C)."""
    import gc
    import types
    places, fixed = [], 0
    ignored = (id(sys.__dict__), id(streams))
    for i, s in enumerate(streams):
        if s is None:
            continue
        for r in gc.get_referrers(s):
            if id(r) in ignored or isinstance(r, types.FrameType):
                continue
            if type(r) is dict:
                places += [('item', r, k, i) for k, v in list(r.items()) if v is s]
            elif type(r) is list:
                places += [('item', r, k, i) for k, v in enumerate(r) if v is s]
            elif type(r) is tuple:
                funcs = [f for f in gc.get_referrers(r)
                         if isinstance(f, types.FunctionType) and f.__defaults__ is r]
                places += [('defaults', f, k, i) for f in funcs for k, v in enumerate(r)
                           if v is s]
                fixed += not funcs
            else:
                # An instance whose attributes live in the object itself
                # (3.11's inline values): threading's main thread.
                attrs = getattr(r, '__dict__', None)
                keys = [k for k, v in attrs.items() if v is s] if type(attrs) is dict else []
                places += [('attr', r, k, i) for k in keys]
                fixed += not keys
    return places, fixed

def _point_at(places, streams):
    """In a task: what PLACES held of the zygote's streams is STREAMS'."""
    for kind, holder, slot, i in places:
        if kind == 'item':
            holder[slot] = streams[i]
        elif kind == 'attr':
            setattr(holder, slot, streams[i])
        else:
            d = list(holder.__defaults__)
            d[slot] = streams[i]
            holder.__defaults__ = tuple(d)

def _process_state():
    maps = set()
    with open('/proc/self/maps') as f:
        for line in f:
            path = line.split(None, 5)[5:]
            if path and path[0].startswith('/dev/') and not path[0].startswith('/dev/zero'):
                maps.add(path[0].strip())
    return (len(os.listdir('/proc/self/task')), set(os.listdir('/proc/self/fd')), maps,
            _streams_state())

def _left_behind(before, after):
    if after[0] > before[0]:
        return 'started a thread'
    if after[1] - before[1]:
        return 'kept a file descriptor open'
    if after[2] - before[2]:
        return 'mapped a device (%s)' % sorted(after[2] - before[2])[0]
    (was, was_handlers), (now, now_handlers) = before[3], after[3]
    if any(a[0] != b[0] or a[2:] != b[2:] for a, b in zip(was, now)):
        return 'replaced or reconfigured a standard stream'
    if now_handlers > was_handlers:
        return 'added a logging handler'
    if any(b[1] > a[1] for a, b in zip(was, now)):
        return _HELD_STREAM
    return None

# What a module may draw for its process at import, which an exec'd
# task draws for itself: random generators, a UUID, bytes (a key from
# os.urandom), the pid, a time.  Those the task regenerates are left
# out: random's and numpy's global generators (reseeded), logging's
# start time (set at the task's start).
_REGENERATED = ('random._inst', 'numpy.random.mtrand._rand', 'logging._startTime')

def _fingerprint(v, top=True):
    t = type(v)
    if t is int:
        return ('pid', v) if v == os.getpid() else None
    if t is float:
        clocks = (time.time, time.monotonic, time.perf_counter)
        return repr(v) if any(abs(v - c()) < 86400 for c in clocks) else None
    if t in (bytes, bytearray):
        return hash(bytes(v)) if len(v) <= 4096 else None
    if top and t in (list, tuple) and len(v) <= 64:
        fps = tuple(_fingerprint(x, False) for x in v)
        return fps if any(f is not None for f in fps) else None
    kinds = [c.__name__ for c in t.__mro__]
    try:
        if 'Random' in kinds and 'SystemRandom' not in kinds:
            return hash(v.getstate())
        if 'Generator' in kinds and hasattr(v, 'bit_generator'):
            return repr(v.bit_generator.state)
        if 'RandomState' in kinds and hasattr(v, 'get_state'):
            return repr(v.get_state(legacy=False))
        if 'BitGenerator' in kinds or 'UUID' in kinds:
            return repr(v.state if 'BitGenerator' in kinds else v)
    except Exception:
        pass
    return None

def _drawn(modules):
    """{module.name: fingerprint} of what MODULES hold at module level
    that an import may have drawn for its process."""
    out = {}
    for mname in modules:
        d = getattr(sys.modules.get(mname), '__dict__', None)
        if not isinstance(d, dict) or mname in ('__main__', '__mp_main__'):
            continue
        for k, v in list(d.items()):
            key = mname + '.' + k
            if not (k.startswith('__') and k.endswith('__')) and key not in _REGENERATED:
                fp = _fingerprint(v)
                if fp is not None:
                    out[key] = repr(fp)
    return out

class _ImportReads:
    """What the imports of one module (IMPORTING) read of what differs
    between tasks: environment variables (through os.environ: a C getenv is
    not seen), {name: (value, module)} in ENV, and sys.argv (the modules
    that read it, in ARGV)."""

    def __init__(self, environ):
        self.environ, self.env, self.argv, self.importing = environ, {}, set(), None
        plain, reads = type(environ), self

        class RecordingEnviron(plain):
            def __getitem__(self, key):
                value = None
                try:
                    value = plain.__getitem__(self, key)
                    return value
                finally:
                    if reads.importing:
                        reads.env.setdefault(key, (value, reads.importing))

        class RecordingArgv(list):
            def read(self):
                if reads.importing:
                    reads.argv.add(reads.importing)

            def __getitem__(self, i):
                self.read()
                return list.__getitem__(self, i)

            def __iter__(self):
                self.read()
                return list.__iter__(self)

            def __len__(self):
                self.read()
                return list.__len__(self)

        self.kinds = (plain, RecordingEnviron, RecordingArgv)

    def recording(self, on):
        """Record what the imports read (ON), or stop."""
        plain, recording_environ, recording_argv = self.kinds
        self.importing = None
        self.environ.__class__ = recording_environ if on else plain
        sys.argv = recording_argv(sys.argv) if on else list(sys.argv)


def _trial_child(names, w, reads):
    """In a forked child: import NAMES one by one, and write for each
    its verdict and what its import drew (tab-separated lines)."""
    try:
        # What the modules print at import is the tasks' to print, not
        # the trials'.
        for out in (sys.stdout, sys.stderr):
            if out is not None:
                out.flush()
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        os.close(quiet)
        # What the zygote froze (gc.freeze: a zygote that imports more
        # between steps did) is hidden from gc.get_referrers: the holders
        # of the streams there would not be counted.
        import gc
        gc.unfreeze()
        state = _process_state()
        streams = (sys.stdin, sys.stdout, sys.stderr)
        fixed = _stream_holders(streams)[1]    # holders a task cannot re-point
        reads.recording(True)
        for name in names:
            had = set(sys.modules)
            reads.importing = name
            try:
                __import__(name)
                now = _process_state()
                verdict = _left_behind(state, now) or 'ok'
                if verdict == _HELD_STREAM:
                    # Held where a task can point it at its own: fine.
                    reads.recording(False)
                    held = _stream_holders(streams)[1]
                    reads.recording(True)
                    if held <= fixed:
                        verdict = 'ok'
                    else:
                        verdict = _HELD_STREAM + ' where a task cannot point it at its own'
                    fixed = held
                if name in reads.argv:
                    verdict = 'reads sys.argv at import'
                state = now
            except BaseException as e:
                verdict = 'does not import (%s)' % type(e).__name__
            lines = ['V\t%s\t%s\n' % (name, verdict)]
            lines += ['S\t%s\t%s\t%s\n' % (name, k, fp)
                      for k, fp in _drawn(set(sys.modules) - had).items()]
            os.write(w, ''.join(lines).encode('utf-8', 'replace'))
    finally:
        os._exit(0)

_TRIAL_S = 120     # the longest a trial may import

def _trial(names, reads):
    """Import NAMES in two forked children at once, and say of each
    whether it may be imported in a zygote: what it left behind in the
    process, or what it drew for its process at import (which the two
    children drew differently)."""
    children = []
    for _ in range(2):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                _trial_child(names, w, reads)
            finally:
                os._exit(0)     # the child never goes back to the zygote's code
        os.close(w)
        children.append((pid, r))
    # Never waited for without end: a zygote that serves steps between
    # its trials would hang with it.
    import select
    deadline = time.monotonic() + _TRIAL_S
    reports = []
    gone = 'the trial import ended the process'
    for pid, r in children:
        out = b''
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, 9)
                out += ('T\t%d\n' % _TRIAL_S).encode()
                break
            chunk = os.read(r, 65536)
            if not chunk:
                break
            out += chunk
        os.close(r)
        os.waitpid(pid, 0)
        verdicts, states = {}, {}
        for line in out.decode('utf-8', 'replace').splitlines():
            f = line.split('\t')
            if f[0] == 'V' and len(f) == 3:
                verdicts[f[1]] = f[2]
            elif f[0] == 'T':
                gone = 'the trial import took longer than %s s' % f[1]
            elif f[0] == 'S' and len(f) == 4:
                states.setdefault(f[1], {})[f[2]] = f[3]
        reports.append((verdicts, states))
    (verdicts, states), (_, other) = reports
    for name in names:
        verdicts.setdefault(name, gone)
        mine, theirs = states.get(name, {}), other.get(name, {})
        differ = sorted(k for k in mine if k in theirs and mine[k] != theirs[k])
        if verdicts[name] == 'ok' and differ:
            verdicts[name] = 'draws per-process state at import (%s)' % differ[0]
    return {n: v.replace(' ', '_') if v != 'ok' else v for n, v in verdicts.items()}
