"""The deployments the benchmarks drive.

``MultiProcessDeployment``: the production shape, as the integration tests
start it (and reusing their PostgreSQL and RabbitMQ helpers from
``tests/integration/conftest.py``): two fresh PostgreSQL databases, a
RabbitMQ virtual host of its own, a config file, ``volattach-manage db
sync``, then ``volattach-volume``, ``volattach-conductor``, N
``volattach-compute`` (hosts ``compute1``..``computeN``, the fake driver
with the given latencies) and ``volattach-api`` (gunicorn, W workers of T
threads), each its own process (session) logging to ``<workdir>/logs``.
Ready when the volume service and the API answer and os-services shows the
conductor and every compute up.

``AllInOneProcess``: ``volattach-all`` (``volattach.cmd.all.AllInOne``: every
role in one process over the in-memory transport, SQLite) in a subprocess,
so that its CPU time is measured apart from the benchmark's clients.

Both expose ``api_url``, ``volume_url``, ``cpu_groups()`` (role -> pids, for
``benchmarks.cpu.CpuMeter``), ``stop()`` and ``logs_report()``, and are
context managers.
"""
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import requests

from benchmarks import cpu

ADMIN_TOKEN = "admin:admin:admin"
REPO = pathlib.Path(__file__).resolve().parent.parent
START_TIMEOUT = float(os.environ.get("VOLATTACH_BENCH_START_TIMEOUT", "120"))
# Seconds a daemon gets to exit after SIGTERM before its process group is
# killed: the deployments are thrown away (their databases and vhost are
# dropped), so there is nothing to wait for beyond a short grace.
STOP_TIMEOUT = float(os.environ.get("VOLATTACH_BENCH_STOP_TIMEOUT", "3"))


class DeploymentError(Exception):
    """The deployment could not be started."""


def console_script(name):
    candidate = pathlib.Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    raise DeploymentError("console script %s not found next to %s (pip install "
                          "-e . in this venv)" % (name, sys.executable))


def tree_script(tree, name="volattach-all"):
    """``name`` of another checkout, from its own ``.venv`` (the A/B
    benchmarks' trees); SystemExit when it has none."""
    script = os.path.join(os.path.abspath(tree), ".venv", "bin", name)
    if not os.path.exists(script):
        raise SystemExit("no %s (a checkout with its own .venv)" % script)
    return script


def write_conf(path, sections):
    lines = []
    for section, options in sections.items():
        lines.append("[%s]" % section)
        lines.extend("%s = %s" % (k, v) for k, v in options.items() if v is not None)
        lines.append("")
    pathlib.Path(path).write_text("\n".join(lines))


def override_in_process(conf, workdir, api_port, volume_port, extra=()):
    """Set ``conf`` (the global CONF) for a volattach-all run in this
    process: SQLite databases under ``workdir``, the two APIs on the given
    ports, the compute's volume client on this volume service; ``extra``:
    more ``(group, name, value)`` overrides."""
    conf([], project="volattach", default_config_files=[])
    for group, name, value in (
            (None, "state_path", workdir),
            ("database", "connection", "sqlite:///%s/volattach.sqlite" % workdir),
            ("volume", "connection", "sqlite:///%s/volume.sqlite" % workdir),
            ("api", "port", api_port), ("volume", "port", volume_port),
            ("cinder", "endpoint", "http://127.0.0.1:%d/v3" % volume_port),
            *extra):
        conf.set_override(name, value, group=group)


def free_port():
    from tests import utils
    return utils.free_port()


def service_urls(need_rabbit=True, need_pg=True):
    """(rabbit_url, pg_url): from VOLATTACH_TEST_RABBIT_URL/_PG_URL, else
    from ``tools/start-rabbitmq.sh`` / ``tools/start-postgres.sh`` (which
    start the services when they are not running, and print their URL)."""
    urls = []
    for needed, env, script in (
            (need_rabbit, "VOLATTACH_TEST_RABBIT_URL", "start-rabbitmq.sh"),
            (need_pg, "VOLATTACH_TEST_PG_URL", "start-postgres.sh")):
        if not needed:
            urls.append(None)
            continue
        value = os.environ.get(env)
        if not value:
            result = subprocess.run(["bash", str(REPO / "tools" / script)],
                                    capture_output=True, text=True, timeout=600)
            lines = result.stdout.strip().splitlines()
            if result.returncode != 0 or not lines:
                raise DeploymentError("tools/%s failed (%d): %s" % (
                    script, result.returncode, result.stderr[-2000:]))
            value = lines[-1].strip()
        urls.append(value)
    return tuple(urls)


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200 * lines))
            text = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return "(cannot read %s: %s)" % (path, exc)
    return "\n".join(text.splitlines()[-lines:])


class _Processes:
    """Daemons started in sessions of their own, logging to files."""

    def __init__(self, workdir):
        self.workdir = pathlib.Path(workdir)
        self.log_dir = self.workdir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes = {}
        self._logs = {}

    def env(self, name, extra=None):
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        runtime = self.workdir / "run" / name
        runtime.mkdir(parents=True, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env.update(extra or {})
        return env

    def log_path(self, name):
        return self.log_dir / ("%s.log" % name)

    def spawn(self, name, cmd, extra_env=None):
        log = open(self.log_path(name), "ab")
        log.write(("=== %s starting %s\n" % (time.strftime("%H:%M:%S"), " ".join(cmd))).encode())
        log.flush()
        self._logs[name] = log
        self.processes[name] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=self.env(name, extra_env), cwd=str(self.workdir),
            start_new_session=True)
        return self.processes[name]

    def check(self):
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise DeploymentError("%s exited with status %s; tail of %s:\n%s" % (
                    name, proc.returncode, self.log_path(name), _tail(self.log_path(name))))

    def stop_all(self):
        if self.processes:
            from benchmarks.report import log
            log("stopping %s" % ", ".join(self.processes))
        for name in reversed(list(self.processes)):
            proc = self.processes[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in self.processes.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # whatever is left in the daemon's session (gunicorn workers)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        self.processes.clear()

    def logs_report(self, lines=40):
        parts = []
        for path in sorted(self.log_dir.glob("*.log")):
            parts.append("----- %s\n%s" % (path, _tail(path, lines)))
        return "\n".join(parts)


def _wait_http(url, deadline, check, what):
    last = None
    while time.monotonic() < deadline:
        check()
        try:
            resp = requests.get(url, timeout=5)
            if resp.status_code < 500:
                return
            last = resp.status_code
        except requests.RequestException as exc:
            last = exc
        time.sleep(0.2)
    raise DeploymentError("%s not answering at %s: %s" % (what, url, last))


class _Deployment:
    """What both deployments share: a context manager that stops what it
    started, even when starting fails, and the tails of their logs."""

    def logs_report(self):
        return self.procs.logs_report()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


class AllInOneProcess(_Deployment):
    """``volattach-all`` in a subprocess on SQLite and the in-memory bus
    (``script``: another checkout's, see ``tree_script``)."""

    def __init__(self, workdir, computes=2, reserve_latency=0.0,
                 attach_latency=0.0, detach_latency=0.0, command_prefix=None,
                 script=None):
        self.workdir = pathlib.Path(workdir)
        self.script = script
        self.procs = _Processes(workdir)
        self.computes = computes
        self.latency = (reserve_latency, attach_latency, detach_latency)
        self.command_prefix = list(command_prefix or [])
        self.api_port, self.volume_port = free_port(), free_port()
        while self.volume_port == self.api_port:
            self.volume_port = free_port()
        self.api_url = "http://127.0.0.1:%d" % self.api_port
        self.volume_url = "http://127.0.0.1:%d" % self.volume_port
        self.conf_path = self.workdir / "volattach.conf"
        self.pid = None

    def start(self, attempts=3):
        """Start volattach-all; a start-up that dies is retried on a fresh
        state directory (``notes`` says so: that is a bug to report)."""
        self.notes = []
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(attempt)
            except DeploymentError as exc:
                self.procs.stop_all()
                reason = str(exc).strip().splitlines()
                reason = next((line for line in reversed(reason) if "Error" in line
                               or "Exception" in line), reason[-1] if reason else "?")
                self.notes.append("volattach-all start-up attempt %d failed: %s" % (
                    attempt, reason[-300:]))
                from benchmarks.report import log
                log(self.notes[-1])
                if attempt == attempts:
                    raise

    def _start_once(self, attempt):
        state = self.workdir / ("state-%d" % attempt)
        state.mkdir(parents=True, exist_ok=True)
        reserve, attach, detach = self.latency
        write_conf(self.conf_path, {
            "DEFAULT": {"state_path": state, "debug": "false"},
            "database": {"connection": "sqlite:///%s/volattach.sqlite" % state},
            "api": {"listen": "127.0.0.1", "port": self.api_port},
            "volume": {"listen": "127.0.0.1", "port": self.volume_port,
                       "connection": "sqlite:///%s/volume.sqlite" % state},
            "cinder": {"endpoint": "http://127.0.0.1:%d/v3" % self.volume_port},
            "all": {"compute_hosts": ",".join(
                "compute%d" % (i + 1) for i in range(self.computes))},
            "fake_driver": {"reserve_latency": reserve, "attach_latency": attach,
                            "detach_latency": detach},
        })
        cmd = self.command_prefix + [self.script or console_script("volattach-all"),
                                     "--config-file", str(self.conf_path)]
        from benchmarks.report import log
        log("starting volattach-all")
        proc = self.procs.spawn("all-%d" % attempt, cmd)
        deadline = time.monotonic() + START_TIMEOUT
        _wait_http(self.volume_url + "/", deadline, self.procs.check, "volume service")
        _wait_http(self.api_url + "/", deadline, self.procs.check, "compute API")
        self.pid = self._python_pid(proc.pid)
        log("volattach-all ready")
        return self

    @staticmethod
    def _python_pid(pid):
        """The volattach-all process itself (under a profiler, its child)."""
        import psutil
        proc = psutil.Process(pid)
        if "volattach-all" in " ".join(proc.cmdline()) and not proc.name().startswith("py-spy"):
            return pid
        for child in proc.children(recursive=True):
            if "volattach-all" in " ".join(child.cmdline()):
                return child.pid
        return pid

    def cpu_groups(self):
        pid = self.pid
        return {"volattach-all": lambda: {pid}}

    def describe(self):
        return {"kind": "all-in-one", "transport": "volattach-inproc", "database": "sqlite",
                "start_notes": self.notes,
                "computes": self.computes,
                "api_server": "waitress in process (volattach-all, volattach.embedded_server)",
                "fake_driver_latency": dict(zip(("reserve", "attach", "detach"), self.latency))}

    def stop(self):
        self.procs.stop_all()



class MultiProcessDeployment(_Deployment):
    """The real daemons over RabbitMQ and PostgreSQL (see module doc)."""

    def __init__(self, workdir, rabbit_url, pg_url, workers=2, threads=4,
                 computes=2, reserve_latency=0.0, attach_latency=0.0,
                 detach_latency=0.0, volume_workers=1, keep=False):
        # The integration harness's helpers: throw-away PG databases and a
        # RabbitMQ vhost, named so that its stale-run cleanup knows them.
        from tests.integration import conftest as harness
        self.harness = harness
        self.workdir = pathlib.Path(workdir)
        self.procs = _Processes(workdir)
        self.rabbit_url, self.pg_url = rabbit_url, pg_url
        self.workers, self.threads = workers, threads
        self.computes = computes
        self.hosts = ["compute%d" % (i + 1) for i in range(computes)]
        self.latency = (reserve_latency, attach_latency, detach_latency)
        self.volume_workers = volume_workers
        self.keep = keep
        self.run_id = "%s%d_bench%s" % (harness.NAME_PREFIX, int(time.time()),
                                        uuid.uuid4().hex[:6])
        self.databases = harness.PostgresDatabases(pg_url)
        self.vhost = harness.RabbitVhost(rabbit_url, self.run_id)
        self.api_port, self.volume_port = free_port(), free_port()
        while self.volume_port == self.api_port:
            self.volume_port = free_port()
        self.api_url = "http://127.0.0.1:%d" % self.api_port
        self.volume_url = "http://127.0.0.1:%d" % self.volume_port
        self.conf_path = self.workdir / "volattach.conf"
        self.database_url = self.volume_database_url = None
        self.pg_backends = None

    # -- start ----------------------------------------------------------------
    def start(self):
        from benchmarks.report import log
        log("multi-process deployment: databases and vhost %s" % self.run_id)
        self.databases.drop_stale()
        self.database_url = self.databases.create(self.run_id + "_nova")
        self.volume_database_url = self.databases.create(self.run_id + "_volume")
        transport_url = self.vhost.create()
        state = self.workdir / "state"
        state.mkdir(parents=True, exist_ok=True)
        reserve, attach, detach = self.latency
        write_conf(self.conf_path, {
            "DEFAULT": {"transport_url": transport_url,
                        "control_exchange": self.run_id,
                        "state_path": state, "debug": "false"},
            "database": {"connection": self.database_url},
            # the daemons default to keystone; the load speaks noauth tokens
            "api": {"listen": "127.0.0.1", "port": self.api_port,
                    "workers": self.workers, "threads": self.threads,
                    "auth_strategy": "noauth"},
            "volume": {"listen": "127.0.0.1", "port": self.volume_port,
                       "workers": self.volume_workers,
                       "connection": self.volume_database_url,
                       "auth_strategy": "noauth"},
            "cinder": {"endpoint": "http://127.0.0.1:%d/v3" % self.volume_port,
                       "auth_strategy": "noauth"},
            "fake_driver": {"reserve_latency": reserve, "attach_latency": attach,
                            "detach_latency": detach},
        })
        for host in self.hosts:
            write_conf(self.workdir / ("%s.conf" % host), {"compute": {"host": host}})
        result = subprocess.run(
            [console_script("volattach-manage"), "--config-file", str(self.conf_path),
             "db", "sync"], capture_output=True, text=True, timeout=300,
            env=self.procs.env("manage"))
        if result.returncode != 0:
            raise DeploymentError("volattach-manage db sync failed:\n%s%s" % (
                result.stdout, result.stderr))
        log("db synced; starting volume, conductor, %d computes, api (%d x %d)" % (
            self.computes, self.workers, self.threads))
        conf = ["--config-file", str(self.conf_path)]
        env = {"VOLATTACH_CONFIG_FILE": str(self.conf_path)}
        # The conductor first: a compute whose registration call reaches no
        # conductor queue waits for the whole rpc_response_timeout (60 s).
        self.procs.spawn("volume", [console_script("volattach-volume")] + conf, env)
        self.procs.spawn("conductor", [console_script("volattach-conductor")] + conf, env)
        self.procs.spawn("api", [console_script("volattach-api")] + conf, env)
        self.wait_until_ready(hosts=())
        time.sleep(0.5)
        for host in self.hosts:
            self.procs.spawn(host, [console_script("volattach-compute")] + conf + [
                "--config-file", str(self.workdir / ("%s.conf" % host))], env)
        self.wait_until_ready()
        log("deployment ready")
        from sqlalchemy.engine import make_url
        url = make_url(self.pg_url)
        self.pg_backends = cpu.PostgresBackends(
            dict(host=url.host or "127.0.0.1", port=url.port or 5432,
                 user=url.username, password=url.password,
                 dbname=url.database or "postgres"),
            [self.run_id + "_nova", self.run_id + "_volume"])
        return self

    def wait_until_ready(self, timeout=START_TIMEOUT, hosts=None):
        """Until the volume service and the API answer and os-services shows
        the conductor and the computes ``hosts`` (default: all) up."""
        hosts = self.hosts if hosts is None else hosts
        deadline = time.monotonic() + timeout
        _wait_http(self.volume_url + "/", deadline, self.procs.check, "volume service")
        _wait_http(self.api_url + "/", deadline, self.procs.check, "compute API")
        missing = "?"
        while time.monotonic() < deadline:
            self.procs.check()
            try:
                resp = requests.get(self.api_url + "/v2.1/os-services",
                                    headers={"X-Auth-Token": ADMIN_TOKEN}, timeout=10)
                services = resp.json().get("services", []) if resp.status_code == 200 else []
            except (requests.RequestException, ValueError) as exc:
                services, missing = [], str(exc)
            up = {(s.get("binary", "").rsplit("-", 1)[-1], s.get("host"))
                  for s in services if s.get("state") == "up"}
            need = [] if any(b == "conductor" for b, _ in up) else ["conductor"]
            need += [h for h in hosts if ("compute", h) not in up]
            if not need:
                return
            missing = ", ".join(need)
            time.sleep(0.3)
        raise DeploymentError("not ready after %ss (missing: %s)\n%s" % (
            timeout, missing, self.logs_report()))

    def connect(self, which="nova"):
        """A psycopg2 connection (autocommit) to the deployment's ``nova``
        (compute) or ``volume`` database."""
        import psycopg2
        from sqlalchemy.engine import make_url
        url = make_url(self.pg_url)
        conn = psycopg2.connect(host=url.host or "127.0.0.1", port=url.port or 5432,
                                user=url.username, password=url.password,
                                dbname="%s_%s" % (self.run_id, which), connect_timeout=10)
        conn.autocommit = True
        return conn

    # -- measurement ------------------------------------------------------------
    def cpu_groups(self):
        groups = {}
        for name in ("api", "conductor", *self.hosts, "volume"):
            pid = self.procs.processes[name].pid
            groups[name] = (lambda pid=pid: cpu.tree_pids(pid))
        groups["broker"] = lambda: cpu.pids_named("beam.smp")
        if self.pg_backends is not None:
            groups["database"] = self.pg_backends.backends
            groups["database-aux"] = self.pg_backends.aux
        return groups

    def describe(self):
        return {"kind": "multi-process", "transport": "rabbit (own vhost)",
                "database": "postgresql", "api_workers": self.workers,
                "api_threads": self.threads, "computes": self.computes,
                "volume_workers": self.volume_workers,
                "fake_driver_latency": dict(zip(("reserve", "attach", "detach"), self.latency))}

    # -- stop -------------------------------------------------------------------
    def stop(self):
        self.procs.stop_all()
        if self.pg_backends is not None:
            self.pg_backends.close()
        if not self.keep:
            for cleanup in (self.vhost.delete, self.databases.drop_all):
                try:
                    cleanup()
                except Exception as exc:  # noqa: BLE001 - reported, not fatal
                    print("benchmark teardown: %s failed: %r" % (cleanup.__qualname__, exc),
                          file=sys.stderr)

