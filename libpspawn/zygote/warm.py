# SPDX-License-Identifier: BSD-3-Clause
# The warm Python zygote's bootstrap, its last part (after
# warm-learn.py and warm-preload.py).  libpspawn's proxy starts the interpreter with the tasks'
# interpreter options and runs both in a namespace of their own
# (python-embed.c), in place of the program's own start; then it calls
# _pspawn_prepare, which imports the preload modules,
# freezes what it made for the garbage collector, and returns the function
# that imports more between steps (refresh) and the function
# that each task calls once the proxy has parked and forked it: it makes
# the interpreter what an exec'd `python3 ...` of the task's command line
# would be, and returns what to run (the proxy runs it, with no frame of
# ours under the task's __main__, and ends as the interpreter would).
# __main__ stays as a new interpreter has it.

def _pspawn_flush():
    # What the interpreter does once a script has run, before it reports
    # an error (flush_io in Python/pythonrun.c).
    import sys
    for s in (sys.stderr, sys.stdout):
        try:
            s.flush()
        except BaseException:
            pass


def _pspawn_prepare(options_b):
    import sys
    # What an exec'd interpreter has too before the first line it runs.
    startup_modules = set(sys.modules)
    import os, ctypes, _signal, time
    # Each signal's handler as the interpreter set it up at its start.
    start_handlers = {n: _signal.getsignal(n) for n in range(1, min(_signal.NSIG, 65))}

    main_dict = sys.modules['__main__'].__dict__
    proxy = ctypes.PyDLL(None)
    proxy.pspawn_python_task_argv.restype = ctypes.POINTER(ctypes.c_char_p)
    proxy.pspawn_python_exec_path.restype = ctypes.c_char_p
    proxy.pspawn_python_task_sigign.restype = ctypes.c_uint64
    SCRIPT, COMMAND, MODULE = _SCRIPT, _COMMAND, _MODULE
    if sys.version_info < (3, 8):
        proxy.pspawn_python_refuse(1)

    env = os.environ
    first = env.pop('PSPAWN_ZYGOTE_PYTHON', '')
    chosen = env.pop('PSPAWN_ZYGOTE_MODULES', None)
    if chosen is None:
        chosen = env.get('PSPAWN_PRELOAD_MODULES')
    safe_path = getattr(sys.flags, 'safe_path', False)

    def startup_vars(environ):
        # what the interpreter read at start (wire/python.c says the same)
        return {k: v for k, v in environ.items()
                if k.startswith(('PYTHON', 'LC_')) or k in ('LANG', 'HOME')}
    startup = startup_vars(env)
    # The interpreter's options, as the proxy started it with them.
    options = [os.fsdecode(o) for o in options_b.split(b'\0')] if options_b else []

    def skips_first_line(opts):
        """Whether OPTS hold -x (alone or among other one-letter options)."""
        takes_arg = False
        for o in opts:
            if takes_arg or not o.startswith('-') or o.startswith('--'):
                takes_arg = False
                continue
            for i, c in enumerate(o[1:]):
                if c == 'x':
                    return True
                if c in 'XWcmQ':
                    takes_arg = i == len(o) - 2     # its argument is the next one
                    break
        return False

    # Modules never imported in a zygote, whatever the trial (warm-learn.py)
    # sees, each for what its import does to the process by design:
    # - mpi4py.MPI calls MPI_Init at its import (mpi4py.rc.initialize,
    #   True by default): each task must call it once, itself;
    # - pycuda.autoinit makes a CUDA context at its import (that is what it
    #   is for), which a forked child cannot use.
    # Everything else (torch, numba, tensorflow, jax, cupy...) is tried:
    # refused only if its import leaves a thread, an fd or a device
    # mapping, or draws per-process state.
    deny = ('mpi4py.MPI', 'pycuda.autoinit')

    def denied(name):
        return any(name == d or name.startswith(d + '.') for d in deny)

    def debug(on, msg):
        if on:
            os.write(2, ('libpspawn: warm python: %s\n' % msg).encode('utf-8', 'replace'))

    def path0_of(kind, what, real=None):
        if safe_path:
            return None
        if kind == COMMAND:
            return ''
        if kind == MODULE:
            return os.getcwd()
        return os.path.dirname(real or os.path.realpath(what))

    # ---- the cache of what tasks imported, per script (warm-learn.py) ---
    cache_dir = os.path.join(env.get('PSPAWN_CACHE_DIR') or os.path.join(
        env.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache'),
        'pspawn'), 'python')

    def identity(kind, what, real=None):
        return _identity(kind, what, options, env, cache_dir, real)

    def forget(module, why):
        """Leave MODULE out from the next run of this zygote's script."""
        if cache_file and module:
            verdicts = _read_cache(cache_file, cache_key)
            if module in verdicts and verdicts[module][0] in ('ok', 'untried'):
                verdicts[module][0] = why
                _write_cache(cache_file, cache_key, verdicts)

    reads = _ImportReads(env)

    # ---- before parking: import, freeze ----------------------------------
    first_kind, first_what = (SCRIPT, first) if first not in ('', '-c', '-m') else \
        (COMMAND if first != '-m' else MODULE, '')
    # The zygote imports with the first task's sys.path[0]; with none
    # known, with none at all (started as the proxy starts it, the
    # interpreter put none there).
    zygote_path0 = path0_of(first_kind, first) if first else None
    if zygote_path0 is not None:
        sys.path.insert(0, zygote_path0)
    zygote_cwd = os.getcwd()
    # One thread in each runtime: a zygote with threads cannot fork.
    thread_vars = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS',
                   'GOTO_NUM_THREADS', 'BLIS_NUM_THREADS')
    for var in thread_vars:
        env[var] = '1'
    cache_file = cache_key = None
    verdicts = {}
    if first_kind == SCRIPT and first:
        try:
            cache_file, cache_key = identity(SCRIPT, first)
            verdicts = _read_cache(cache_file, cache_key)
        except OSError:
            pass
    # The sys.path the zygote imports with, as an exec'd interpreter has it
    # before its first line.
    start_path = list(sys.path)
    if chosen is not None:
        wanted = [m.strip() for m in chosen.split(',') if m.strip()]
    else:
        wanted = [n for n, (v, _) in verdicts.items() if v in ('ok', 'untried')]
    pre = _Preloader(env, reads, denied, debug, startup_modules, start_handlers, proxy,
                     zygote_path0, zygote_cwd)
    pre.load(wanted, verdicts, (cache_file, cache_key) if cache_file else None)
    del verdicts, wanted
    zygote_executable = sys.executable
    stdio_config = [(s.encoding, s.errors, s.write_through) if s is not None else None
                    for s in (sys.__stdin__, sys.__stdout__, sys.__stderr__)]
    learned = []
    task_path0 = [None]
    task_start_ns = [0]
    import atexit

    def learn():
        """At a task's end (atexit, so after the task's own handlers): what
        it imported that its zygote had not, for the next zygote of its
        script.  Never a module found in a directory the task added to
        sys.path (the zygote would not search it, and another run may add
        another), nor one whose file was written while the task ran (it
        is the task's to write, then import)."""
        if not learned:
            return
        path, key = learned
        dirs = [os.path.join(os.path.abspath(d), '') for d in sys.path
                if d not in pre.parked_path and isinstance(d, str) and d and d != task_path0[0]]
        new = {}
        for n, m in list(sys.modules.items()):
            if (n in pre.preloaded or m is None or n == '__main__' or denied(n) or
                    getattr(m, '__spec__', None) is None or
                    getattr(m.__spec__, 'origin', None) in ('built-in', 'frozen')):
                continue
            f = _file_of(m)
            ident = _file_identity(f) if f else '-'
            if f and any(f.startswith(d) for d in dirs):
                new[n] = ['found_in_a_directory_the_task_added_to_sys.path', ident]
            elif f and (ident is None or
                        int(ident.rsplit(':', 1)[1]) >= task_start_ns[0] - 50000000):
                new[n] = ['written_while_a_task_ran', ident or '-']
            else:
                new[n] = ['untried', ident]
        if not new:
            return
        old = _read_cache(path, key)
        if all(n in old for n in new):
            return
        for n, v in new.items():
            old.setdefault(n, v)
        _write_cache(path, key, old)

    atexit.register(learn)

    def refresh():
        """A zygote that serves more than one step (reuse=job, an
        interception scope's), idle between them: the modules its tasks
        learned since it started (or last looked) imported now, tried
        first as at the start, so that the next step's tasks find them
        imported.  (How many it imported, the signals still the
        interpreter's.)  Never with modules given by name."""
        if chosen is not None or not cache_file:
            return 0, pre.own_sigs
        try:
            verdicts = _read_cache(cache_file, cache_key)
            wanted = [n for n, (v, _) in verdicts.items()
                      if v in ('ok', 'untried') and n not in sys.modules]
            n = pre.load(wanted, verdicts, (cache_file, cache_key)) if wanted else 0
        except Exception as e:
            debug(env.get('PSPAWN_DEBUG'), 'refresh failed: %r' % (e,))
            pre.settle()
            n = 0
        if n:
            debug(env.get('PSPAWN_DEBUG'), 'imported %d more modules its tasks learned '
                  '(between steps)' % n)
        return n, pre.own_sigs

    def task():

        # ==== in a task: the function the proxy calls ========================
        task_start_ns[0] = sys.modules['time'].time_ns()
        # (python.c already ignores them at the system's level.)
        sigign = proxy.pspawn_python_task_sigign() & pre.own_sigs
        for n in start_handlers:
            if sigign >> (n - 1) & 1:
                try:
                    _signal.signal(n, _signal.SIG_IGN)
                except (OSError, ValueError):
                    pass
        del sigign
        argc = proxy.pspawn_python_task_argc()
        c_argv = proxy.pspawn_python_task_argv()
        argv_b = [c_argv[i] for i in range(argc)]
        c_env = ctypes.POINTER(ctypes.c_char_p).in_dll(proxy, 'environ')
        env_b = {}
        i = 0
        while c_env[i] is not None:
            k, sep, v = c_env[i].partition(b'=')
            if sep:
                env_b.setdefault(k, v)
            i += 1

        def exec_instead(why):
            debug(env_b.get(b'PSPAWN_DEBUG'), 'exec instead: ' + why)
            try:
                os.execve(proxy.pspawn_python_exec_path(), argv_b, env_b)
            except OSError as e:
                os.write(2, b'libpspawn: exec of the interpreter failed: %s\n' % str(e).encode())
                os._exit(127)

        end = ctypes.c_int(0)
        kind = proxy.pspawn_python_split(c_argv, ctypes.byref(end))
        argv = [os.fsdecode(a) for a in argv_b]
        run = argv[end.value:]
        if kind not in (SCRIPT, COMMAND, MODULE) or argv[1:end.value] != options:
            exec_instead('its interpreter options differ, or it runs no script, -c or -m')
        # (The launcher checks these too; a stand-in's task comes straight here.)
        task_startup = startup_vars({os.fsdecode(k): os.fsdecode(v) for k, v in env_b.items()})
        if task_startup != startup:
            exec_instead('its %s differs from the warm interpreter\'s (read at start)' %
                         sorted(set(task_startup.items()) ^ set(startup.items()))[0][0])
        # What a preloaded module read at its import must be what this
        # task would have it read; else it is exec'd, and the module is
        # left out from the next run of its script.  (The thread-count
        # variables read 1 there, documented: the task's pools are sized
        # from its own.)
        # (A key that is no string reads nothing: os.environ refuses it.)
        for key, (value, module) in sorted(kv for kv in reads.env.items()
                                           if isinstance(kv[0], str)):
            mine = env_b.get(os.fsencode(key))
            if key not in thread_vars and (os.fsdecode(mine) if mine is not None else None) != value:
                forget(module, 'read_%s_at_import,_which_differs_between_tasks' % key)
                exec_instead('the preloaded module %s read %s at its import, which this task '
                             'has %s' % (module, key, 'another value of' if mine is not None and
                                         value is not None else 'set' if mine is not None else
                                         'unset'))
        for module in sorted(reads.argv):
            forget(module, 'reads_sys.argv_at_import')
            exec_instead('the preloaded module %s read sys.argv at its import' % module)

        # The environment: os.environ and posix.environ are copies made at
        # start; the C environment is already the task's.
        posix = sys.modules['posix']
        posix.environ.clear()
        posix.environ.update(env_b)
        os.environ._data.clear()
        os.environ._data.update(env_b)
        # sys.executable: argv[0] made absolute, or found in PATH
        task_argv0 = argv[0]
        exe = os.path.abspath(task_argv0) if '/' in task_argv0 else None
        for d in [] if exe else os.environ.get('PATH', os.defpath).split(os.pathsep):
            p = os.path.join(d, task_argv0)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                exe = os.path.abspath(p)
                break
        if exe != zygote_executable:
            exec_instead('its argv[0] gives another sys.executable than the warm interpreter\'s')
        if sys.flags.inspect:
            exec_instead('the interpreter would go on interactively after the task\'s code (-i)')

        if kind == SCRIPT:
            script = run[0]
            # as the interpreter makes it absolute: joined, not normalized
            path = script if os.path.isabs(script) else os.path.join(os.getcwd(), script)
            try:
                with open(path, 'rb') as f:
                    source = f.read()
            except OSError:
                exec_instead("its script cannot be read (the interpreter says why)")
            # As the interpreter tells them (pymain_run_python, maybe_pyc_file):
            # a directory or a zip archive (a zipapp, #! line or not) runs its
            # __main__; a .pyc name or magic number, compiled code.
            if not os.path.isfile(path):
                exec_instead('its script is a directory')
            # (Asked of zipimport only when the end of central directory's
            # signature is where a zip's would be: a script is not read twice.)
            if source.rfind(b'PK\x05\x06', max(0, len(source) - 65557)) >= 0:
                try:
                    (sys.modules.get('zipimport') or __import__('zipimport')).zipimporter(path)
                    exec_instead('its script is a zip archive (a zipapp)')
                except (ImportError, OSError):
                    pass
            magic = sys.modules['_frozen_importlib_external'].MAGIC_NUMBER
            if path.endswith('.pyc') or source[:2] == magic[:2]:
                exec_instead('its script is compiled code')
            if skips_first_line(options):
                # -x: the first line is not source; its newline stays, so that
                # line numbers are the file's
                nl = source.find(b'\n')
                source = source[nl:] if nl >= 0 else b''
            sys.argv = run
            # (Resolved once: each name on the way is a stat, on a shared
            # file system a metadata request.)
            script_real = os.path.realpath(script)
            try:
                learned[:] = identity(SCRIPT, script, script_real)
            except OSError:
                pass
        elif kind == COMMAND:
            source = run[0][2:] or run[1]
            sys.argv = ['-c'] + run[1 if run[0][2:] else 2:]
        else:
            module = run[0][2:] or run[1]
            sys.argv = ['-m'] + run[1 if run[0][2:] else 2:]
        if hasattr(sys, 'orig_argv'):
            sys.orig_argv = argv
        path0 = path0_of(kind, run[0], script_real if kind == SCRIPT else None)
        task_path0[0] = path0
        if path0 is not None:
            if pre.from_path0 and (path0 or os.getcwd()) != (zygote_path0 or zygote_cwd):
                exec_instead('a preloaded module came from the directory of the zygote\'s script')
            # Where an exec'd interpreter has it: first, before what preloaded
            # modules put in front of it at their import (which stays there).
            if zygote_path0 is None:
                at = next((i for i, d in enumerate(sys.path) if start_path and d is start_path[0]),
                          0)
                sys.path.insert(at, path0)
            else:
                at = next((i for i, d in enumerate(sys.path) if d is zygote_path0), None)
                if at is None:
                    exec_instead('a preloaded module took the script\'s directory out of sys.path')
                sys.path[at] = path0
        # Each preloaded top-level module must be the one the task's sys.path
        # finds, as an exec'd interpreter would import it: shown by the
        # directories' keys where it can be, else asked of the finders.
        for name, (origin, locations) in pre.to_look_up(sys.path):
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, 'find_spec', None)
                try:
                    spec = find(name, None) if find else None
                except Exception:
                    spec = None
                    break
                if spec is not None:
                    break
            if spec is None or spec.origin != origin or \
                    list(spec.submodule_search_locations or ()) != locations:
                exec_instead('its sys.path finds %s at %s, not the preloaded %s' %
                             (name, getattr(spec, 'origin', None), origin))

        if 'time' in sys.modules:
            sys.modules['time'].tzset()
        proxy.pspawn_python_size_pools()
        torch = sys.modules.get('torch')
        if torch is not None and hasattr(torch, 'set_num_threads'):
            # torch sizes its pool itself, once per thread, from the task's
            # variables and the machine (its rule changes between versions):
            # the zygote's thread did it under OMP_NUM_THREADS=1, and the
            # line above sized libgomp's.  A thread of this task asks torch
            # what it chooses here, as an exec'd task's first call would.
            import threading
            chosen = []
            asker = threading.Thread(target=lambda: chosen.append(torch.get_num_threads()))
            asker.start()
            asker.join()
            if chosen:
                torch.set_num_threads(chosen[0])
        nprandom = sys.modules.get('numpy.random')
        if nprandom is not None and hasattr(nprandom, 'seed'):
            nprandom.seed()

        # Standard streams for the task's own fds 0-2, as the interpreter makes
        # them at start (create_stdio in Python/pylifecycle.c).
        import io
        streams = []
        for fd, conf, name in zip((0, 1, 2), stdio_config, ('<stdin>', '<stdout>', '<stderr>')):
            try:
                os.fstat(fd)
            except OSError:
                streams.append(None)
                continue
            if conf is None:
                exec_instead('the zygote had no standard stream to copy the encoding from')
            encoding, errors, unbuffered = conf
            write = fd > 0
            buffering = 0 if unbuffered and write else -1
            buf = io.open(fd, 'wb' if write else 'rb', buffering=buffering, closefd=False)
            raw = buf.raw if buffering else buf
            raw.name = name
            line_buffering = not unbuffered and (raw.isatty() or fd == 2)
            s = io.TextIOWrapper(buf, encoding, errors, '\n', line_buffering, unbuffered)
            s.mode = 'w' if write else 'r'
            streams.append(s)
        # What the preloaded modules printed at their import, as the task
        # would have printed it: first.
        for fd, data in pre.import_output:
            while data:
                try:
                    data = data[os.write(fd, data):]
                except OSError:
                    break
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
        _point_at(pre.stream_places, streams)
        del streams, buf, raw, s

        # What an exec'd interpreter's modules would have drawn or recorded at
        # their import, in this process: the hooks the preloaded modules left
        # for a child run once (random reseeds), in their order, and then all
        # their hooks registered, for the task's own forks; multiprocessing's
        # authentication key; logging's start time; the main thread's
        # native id.
        for before, after_in_child, after_in_parent in pre.recorded_fork_hooks:
            if after_in_child is None:
                continue
            try:
                after_in_child()
            except Exception:
                sys.stderr.write('Exception ignored in: %r\n' % (after_in_child,))
                __import__('traceback').print_exc()
        for hooks in pre.recorded_fork_hooks:
            pre.real_register_at_fork(**pre.given(*hooks))
        mp_process = sys.modules.get('multiprocessing.process')
        if mp_process is not None:
            mp_process.current_process()._config['authkey'] = \
                mp_process.AuthenticationString(os.urandom(32))
        logging = sys.modules.get('logging')
        if logging is not None and isinstance(getattr(logging, '_startTime', None), (int, float)):
            # relativeCreated counts from the task's start, not the zygote's
            logging._startTime = time.time_ns() if isinstance(logging._startTime, int) \
                else time.time()
        threading = sys.modules.get('threading')
        if threading is not None and getattr(threading, '_HAVE_THREAD_NATIVE_ID', False):
            threading.main_thread()._set_native_id()

        if kind == SCRIPT:
            main_dict['__file__'] = path
            main_dict['__cached__'] = None
            main_dict['__loader__'] = sys.modules['_frozen_importlib_external'].SourceFileLoader(
                '__main__', path)
            return SCRIPT, compile, (source, path, 'exec', 0, True)
        if kind == COMMAND:
            return COMMAND, compile, (source, '<string>', 'exec', 0, True)
        import runpy
        return MODULE, runpy._run_module_as_main, (module, True)

    return pre.own_sigs, task, refresh
