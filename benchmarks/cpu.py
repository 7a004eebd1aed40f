"""CPU seconds (user + system) of every process of a deployment, by role.

A ``CpuMeter`` is given *groups*: a name and a function returning the pids
that belong to it right now (the gunicorn master and its workers, the
conductor, each compute, the broker's ``beam.smp``, the PostgreSQL backends
serving the deployment's databases...).  ``start()`` reads every process's
CPU times, a background thread re-reads them every ``interval`` seconds (so
that a process that exits during the window, or a backend that appears,
still counts), and ``stop()`` returns the CPU seconds each group used in the
window.  A process first seen after ``start()`` counts from zero when it was
created inside the window, else from its first reading.

The machine's own counters (``psutil.cpu_times()``) give the CPU used by
everything else on the machine in the same window (``other``): on a shared
machine, a noise indicator for the figures.
"""
import os
import threading
import time

import psutil


def _cpu_seconds(proc):
    times = proc.cpu_times()
    return times.user + times.system


def tree_pids(pid):
    """``pid`` and all its descendants (gunicorn master + workers)."""
    try:
        proc = psutil.Process(pid)
        return {pid} | {c.pid for c in proc.children(recursive=True)}
    except psutil.Error:
        return set()


def pids_named(name):
    """Pids of every process whose name is ``name`` (e.g. ``beam.smp``)."""
    result = set()
    for proc in psutil.process_iter(["name"]):
        if proc.info.get("name") == name:
            result.add(proc.pid)
    return result


def machine_busy_seconds():
    """CPU seconds the whole machine spent not idle, since boot."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    return sum(t) - idle - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)


class CpuMeter:
    """CPU seconds per group of processes over a window.  See module doc."""

    def __init__(self, groups, interval=0.5):
        self.groups = dict(groups)           # name -> callable() -> set of pids
        self.interval = interval
        self._procs = {}                     # pid -> psutil.Process
        self._first = {}                     # (group, pid) -> seconds at start
        self._last = {}                      # (group, pid) -> last seconds seen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.started_at = None
        self.wall = None
        self.result = None

    def _proc(self, pid):
        proc = self._procs.get(pid)
        if proc is None:
            proc = psutil.Process(pid)
            self._procs[pid] = proc
        return proc

    def sample(self):
        with self._lock:
            for group, finder in self.groups.items():
                try:
                    pids = finder()
                except Exception:  # noqa: BLE001 - a finder may race a shutdown
                    continue
                for pid in pids:
                    key = (group, pid)
                    try:
                        proc = self._proc(pid)
                        seconds = _cpu_seconds(proc)
                        created = proc.create_time()
                    except psutil.Error:
                        continue
                    if key not in self._first:
                        fresh = (self.started_at is not None
                                 and created >= self.started_at - 0.05)
                        self._first[key] = 0.0 if fresh else seconds
                    self._last[key] = seconds

    def _run(self):
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self):
        self._first.clear()
        self._last.clear()
        self._machine0 = machine_busy_seconds()
        self.started_at = time.time()
        self._t0 = time.perf_counter()
        self.sample()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="cpu-meter",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Final reading; returns {group: cpu seconds, ..., "other": s}."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        self.wall = time.perf_counter() - self._t0
        machine = machine_busy_seconds() - self._machine0
        result = {group: 0.0 for group in self.groups}
        processes = {group: 0 for group in self.groups}
        for (group, _pid), first in self._first.items():
            result[group] += max(0.0, self._last[(group, _pid)] - first)
            processes[group] += 1
        result = {g: round(v, 4) for g, v in result.items()}
        ours = sum(result.values())
        result["other"] = round(max(0.0, machine - ours), 4)
        self.result = result
        self.processes = processes
        return result


def self_group():
    """The benchmark driver's own process (the HTTP clients)."""
    pid = os.getpid()
    return lambda: {pid}


class PostgresBackends:
    """Pids of the PostgreSQL backends serving some databases.

    Polls ``pg_stat_activity`` on its own connection (excluded from the
    result).  ``aux()`` gives the server's background processes
    (checkpointer, walwriter...), shared by every database of the server.
    """

    def __init__(self, connect_kwargs, databases):
        self.connect_kwargs = connect_kwargs
        self.databases = set(databases)
        self._conn = None
        self._lock = threading.Lock()

    def _rows(self):
        import psycopg2
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg2.connect(**self.connect_kwargs)
                self._conn.autocommit = True
            with self._conn.cursor() as cur:
                cur.execute("SELECT pid, datname, backend_type FROM "
                            "pg_stat_activity WHERE pid <> pg_backend_pid()")
                return cur.fetchall()

    def backends(self):
        return {pid for pid, db, _ in self._rows() if db in self.databases}

    def aux(self):
        return {pid for pid, db, kind in self._rows()
                if db is None and kind != "client backend"}

    def close(self):
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
