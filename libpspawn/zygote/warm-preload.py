# SPDX-License-Identifier: BSD-3-Clause
# The warm Python zygote's bootstrap, its second part (after
# warm-learn.py, before warm.py): the modules imported into the zygote,
# at its start and, for a zygote that serves more than one step (reuse=job,
# an interception scope's), again while it is idle between them: what its
# tasks learned since.  And what a task must know of them.

def _path_keys(path):
    """What would tell a change in what each sys.path entry's finder lists:
    the (device, inode, ctime, mtime) of each directory (the working
    directory for ''), None where there is none.  ctime too: a tool that
    keeps a directory's mtime (rsync -a) still moves its ctime."""
    keys = []
    for d in path:
        try:
            st = os.stat(d or '.')
            keys.append((st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns))
        except (OSError, TypeError, ValueError):
            keys.append(None)
    return keys

def _found(name):
    """(origin, search locations) of what sys.meta_path finds for NAME
    now, as the import system would look it up; None for nothing."""
    for finder in sys.meta_path:
        find = getattr(finder, 'find_spec', None)
        try:
            spec = find(name, None) if find else None
        except Exception:
            return None
        if spec is not None:
            return spec.origin, list(spec.submodule_search_locations or ())
    return None

def _plain_finders(names):
    """Whether the finders are the interpreter's own (and setuptools'
    distutils hack, which answers for its own few names only), so that
    where they find NAMES depends on sys.path's directories' listings
    alone."""
    bootstrap = sys.modules['_frozen_importlib']
    external = sys.modules['_frozen_importlib_external']
    for f in sys.meta_path:
        if f in (bootstrap.BuiltinImporter, bootstrap.FrozenImporter, external.PathFinder):
            continue
        if type(f).__module__ == '_distutils_hack' and \
                not any(hasattr(f, 'spec_for_' + n) for n in names):
            continue
        return False
    zipimport = sys.modules.get('zipimport')
    hooks = sys.path_hooks
    return len(hooks) == 2 and zipimport is not None and hooks[0] is zipimport.zipimporter and \
        getattr(hooks[1], '__qualname__', '').startswith('FileFinder.path_hook')


class _Preloader:
    """The modules imported into the zygote for its tasks, and what each
    task needs of them: where they hold the standard streams, what they
    printed at their import, the fork hooks they registered, which
    top-level names the task's sys.path must find where the zygote found
    them.  Importing more later is importing them at the start in
    another order: the zygote never ran a task's code (tasks are forks)."""

    def __init__(self, env, reads, denied, debug, startup_modules, start_handlers, proxy,
                 zygote_path0, zygote_cwd):
        self.env, self.reads, self.denied, self.debug = env, reads, denied, debug
        self.startup_modules, self.start_handlers = startup_modules, start_handlers
        self.proxy = proxy
        self.zygote_path0, self.zygote_cwd = zygote_path0, zygote_cwd
        self.real_register_at_fork = os.register_at_fork
        self.recorded_fork_hooks = []
        self.importing = False
        self.import_output = []     # [(fd, bytes)], in the order printed
        self.watched = set()
        self.resolved = {}
        self.stream_places = []
        self.preloaded = set(sys.modules)
        self.parked_path = list(sys.path)
        self.from_path0 = False
        self.own_sigs = 0
        # sys.path and its directories' keys before the first import, and
        # (lookups) what a task compares with to skip asking the finders
        # for each preloaded name: None when it cannot.
        self.first_path = self.first_keys = None
        self.before_first = set()
        self.ask_anyway = set()
        self.lookups = None

    @staticmethod
    def given(before, after_in_child, after_in_parent):
        """The hooks as keywords, None left out (the real one refuses it)."""
        return {k: v for k, v in (('before', before), ('after_in_child', after_in_child),
                                  ('after_in_parent', after_in_parent)) if v is not None}

    def register_at_fork(self, *, before=None, after_in_child=None, after_in_parent=None):
        """os.register_at_fork while the modules import: recorded, not
        registered.  Their "before" and "after_in_parent" hooks would run
        in the zygote at every task it forks (an exec'd task runs none);
        their "after_in_child" ones run in each task once it is the task
        (a module reseeds or repairs itself there: random does)."""
        if not self.importing:
            return self.real_register_at_fork(**self.given(before, after_in_child,
                                                           after_in_parent))
        hooks = (before, after_in_child, after_in_parent)
        if all(h is None for h in hooks):
            raise TypeError('At least one argument is required.')
        for what, h in zip(('before', 'after_in_child', 'after_in_parent'), hooks):
            if h is not None and not callable(h):
                raise TypeError("'%s' must be callable, not %s" % (what, type(h).__name__))
        self.recorded_fork_hooks.append(hooks)

    def load(self, wanted, verdicts, cache):
        """Import WANTED (module names; VERDICTS, what the cache said of
        them): each tried in forked children first unless the cache says
        'ok'.  What was found goes to CACHE ((file, key), or None).
        Returns how many it imported."""
        if self.first_path is None:
            self.first_path = list(sys.path)
            self.first_keys = _path_keys(self.first_path)
            self.before_first = set(sys.modules)
        refused = {n: 'is_on_the_deny_list' for n in wanted if self.denied(n)}
        wanted = [n for n in wanted if n not in refused]
        untried = [n for n in wanted if verdicts.get(n, ('',))[0] != 'ok']
        posix = sys.modules['posix']
        os.register_at_fork = posix.register_at_fork = self.register_at_fork
        self.importing = True
        caught, imported = [], 0
        # (Put back whatever fails: a zygote that imports between steps
        # goes on serving.)
        try:
            if untried:
                refused.update({n: v for n, v in _trial(untried, _ImportReads(self.env)).items()
                                if v != 'ok'})
            # What the modules print at their import goes to each task's own
            # standard output and error, at its start, as an exec'd one prints
            # it: caught here (fds 1 and 2, memory files meanwhile), not
            # printed once by the zygote.
            for out in (sys.stdout, sys.stderr):
                if out is not None:
                    out.flush()
            for fd in (1, 2):
                try:
                    os.fstat(fd)
                    held = os.memfd_create('pspawn-import-output', os.MFD_CLOEXEC)
                except (OSError, AttributeError):
                    continue
                caught.append((fd, os.dup(fd), held))
                os.dup2(held, fd)
            self.reads.recording(True)
            for name in wanted:
                if name in refused:
                    continue
                self.reads.importing = name
                try:
                    __import__(name)
                except BaseException as e:
                    refused[name] = 'does_not_import_(%s)' % type(e).__name__
                    continue
                imported += 1
                # Learnt from another file than this one (changed between
                # runs): served now (the zygote has today's), left out from the
                # next run.
                learnt = verdicts.get(name, (None, '-'))[1]
                now = _file_identity(_file_of(sys.modules.get(name)))
                if learnt != '-' and now != learnt:
                    refused[name] = 'changed_between_runs'
        finally:
            self.importing = False
            self.reads.recording(False)
            os.register_at_fork = posix.register_at_fork = self.real_register_at_fork
            for out in (sys.stdout, sys.stderr):
                if out is not None:
                    out.flush()
            for fd, saved, held in caught:
                os.dup2(saved, fd)
                os.close(saved)
                size = os.lseek(held, 0, os.SEEK_END)
                if size:
                    self.import_output.append((fd, os.pread(held, size, 0)))
                os.close(held)
        if cache and (untried or refused):
            merged = dict(verdicts)
            merged.update({n: ['ok', _file_identity(_file_of(sys.modules.get(n))) or '-']
                           for n in wanted if n not in refused})
            merged.update({n: [v, merged.get(n, ('', '-'))[1]] for n, v in refused.items()})
            _write_cache(cache[0], cache[1], merged)
        for name, why in refused.items():
            self.debug(self.env.get('PSPAWN_DEBUG'),
                       'module %s left out: %s' % (name, why.replace('_', ' ')))
        self.settle()
        return imported

    def to_look_up(self, path):
        """In a task, its sys.path PATH: the preloaded top-level names
        (name, (origin, locations)) whose finders it must ask where they
        find them.  All of them, unless it finds them where the zygote
        did, shown by the directories' keys (see settle): then only those
        imported before the preloads (the bootstrap's own, imported with
        another sys.path) that this sys.path finds elsewhere."""
        if self.lookups is not None and list(path) == self.lookups[0] and \
                _path_keys(path) == self.lookups[1]:
            return [kv for kv in self.resolved.items() if kv[0] in self.ask_anyway]
        return list(self.resolved.items())

    def settle(self):
        """What a task needs of what is imported now; then freeze it."""
        import gc, _signal
        # What an earlier settle froze is hidden from gc.get_referrers,
        # which finds the streams' holders below.
        gc.unfreeze()
        self.preloaded = set(sys.modules)
        self.parked_path = list(sys.path)
        # What a task's own sys.path must find for the top-level names the
        # zygote imported that an exec'd interpreter would import itself:
        # {name: (origin, search locations)}.  A module is never asked
        # again once it is in sys.modules, so this is checked at the task's
        # start.  Their files are watched on disk, as the libraries are.
        self.resolved = {}
        for name in self.preloaded - self.startup_modules:
            m = sys.modules.get(name)
            f = _file_of(m)
            if f and f not in self.watched:
                self.watched.add(f)
                self.proxy.pspawn_python_watch(os.fsencode(f))
            spec = getattr(m, '__spec__', None)
            if '.' in name or spec is None or getattr(spec, 'name', None) != name:
                continue    # a submodule (its package decides), or an alias
            self.resolved[name] = (spec.origin, list(spec.submodule_search_locations or ()))
        # A task whose sys.path is this one, each directory unchanged since
        # before the first import (one stat each), finds every preloaded
        # name where the zygote found it, as long as the finders go by the
        # directories' listings alone and no namespace package spans other
        # directories: the per-name look-up (three stats a name) is
        # skipped.  (A regular package's own directory is watched: a
        # change there makes the zygote stale.)
        namespace = any(origin in (None, 'namespace') for origin, _ in self.resolved.values())
        same = self.first_path == self.parked_path and self.first_keys is not None and \
            _path_keys(self.parked_path) == self.first_keys
        self.lookups = (self.parked_path, self.first_keys) \
            if same and not namespace and _plain_finders(self.resolved) else None
        # The names imported before the first preload (the bootstrap's own)
        # were found with another sys.path: asked again here, once, with
        # this one; those found elsewhere now each task asks itself.
        self.ask_anyway = {name for name in self.before_first & set(self.resolved)
                           if _found(name) != self.resolved[name]}
        at = os.path.join(self.zygote_path0 or self.zygote_cwd, '')
        self.from_path0 = self.zygote_path0 is not None and any(
            (getattr(m, '__file__', None) or '').startswith(at) for m in list(sys.modules.values()))
        # Where the preloaded modules hold the zygote's standard streams (a
        # default argument, a module's global, threading's main thread):
        # each task points them at its own.  The trial refused a module
        # that holds one elsewhere.
        self.stream_places = _stream_holders((sys.__stdin__, sys.__stdout__, sys.__stderr__))[0] \
            if self.preloaded - self.startup_modules else []
        for s in (sys.stdout, sys.stderr):
            if s is not None:
                s.flush()
        # What the zygote made goes to the collector's permanent
        # generation: a task's collections and its finalization then leave
        # those objects' pages alone instead of copying them
        # (bench/README.md, "Warm Python").
        gc.collect()
        if self.env.get('PSPAWN_PYTHON_FREEZE') != '0':
            gc.freeze()
        # The signals no preloaded module gave another handler: a task
        # whose caller ignores one of them gets SIG_IGN, as an exec'd
        # interpreter records it at its start (and then sets no SIGINT
        # handler).
        self.own_sigs = sum(1 << (n - 1) for n, h in self.start_handlers.items()
                            if _signal.getsignal(n) is h)
