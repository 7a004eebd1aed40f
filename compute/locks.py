"""Per-instance locks of a compute host (threads, no eventlet).

Every operation on one server's devices runs under that server's lock, so
that device names are picked and plugged one at a time.  Locks are created
on demand and dropped when nobody holds or waits for them.
"""
import contextlib
import threading

_guard = threading.Lock()
_locks = {}  # name -> [lock, users]


@contextlib.contextmanager
def lock(name):
    with _guard:
        entry = _locks.setdefault(name, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _guard:
            entry[1] -= 1
            if entry[1] == 0:
                _locks.pop(name, None)
