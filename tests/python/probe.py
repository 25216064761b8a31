# What a Python task sees of its start: run exec'd and warm, the outputs
# are compared line by line (tests/python-warm.sh).  Lines starting with
# "random" must differ between tasks instead.
import sys, os, signal, threading

def show(name, value):
    print('%s %r' % (name, value))

show('argv', sys.argv)
show('orig_argv', sys.orig_argv)
show('executable', sys.executable)
show('environ', sorted((k, v) for k, v in os.environ.items()))
show('path', sys.path)
show('flags', tuple(sys.flags))
show('name', __name__)
show('file', globals().get('__file__'))
show('spec', None if __spec__ is None else (__spec__.name, __spec__.origin))
show('loader', type(globals().get('__loader__')).__name__)
show('main_keys', sorted(k for k in globals() if k.startswith('__')))
show('cwd', os.getcwd())
for s in (sys.stdin, sys.stdout, sys.stderr):
    show('stdio', None if s is None else (s.name, s.encoding, s.errors, s.line_buffering,
                                          s.write_through, s.mode, type(s.buffer).__name__))
show('stdio_same', (sys.stdin is sys.__stdin__, sys.stdout is sys.__stdout__,
                    sys.stderr is sys.__stderr__))
show('signals', [(n, str(signal.getsignal(n))) for n in range(1, signal.NSIG)
                 if n not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(n) is not None])
show('recursionlimit', sys.getrecursionlimit())
show('filesystem_encoding', (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()))
show('fds', sorted(int(f) for f in os.listdir('/proc/self/fd')))
try:
    import numpy
    from threadpoolctl import threadpool_info
    show('pools', sorted((i['internal_api'], i['num_threads']) for i in threadpool_info()))
    show('random_numpy', numpy.random.random())
except ImportError:
    pass
# After numpy's import: a warm task has its pool's threads before it.
show('threads', (threading.active_count(), len(os.listdir('/proc/self/task'))))
import random
show('random', random.random())
