"""Harness of the integration tests: the real daemons, as separate processes.

The session fixture ``deployment`` builds one deployment for the whole run:

- a fresh PostgreSQL database for the compute side and one for the volume
  service (``vatest_<epoch>_<hex>_nova`` / ``_volume``, created next to the
  database of ``VOLATTACH_TEST_PG_URL`` and dropped at the end);
- its own RabbitMQ virtual host (``vatest_<epoch>_<hex>``, created with
  rabbitmqctl on the broker of ``VOLATTACH_TEST_RABBIT_URL``; when rabbitmqctl
  cannot be used, the URL's own virtual host with a unique control_exchange);
- a ``volattach.conf`` in a tmp dir (free ports for the compute API and the
  volume service, ``[cinder] endpoint`` at that volume service), plus one
  override file per compute host (``[compute] host = compute1`` / ``compute2``);
- ``volattach-manage db sync``, then the daemons ``volattach-volume``,
  ``volattach-conductor``, two ``volattach-compute`` and ``volattach-api``
  (gunicorn, 2 workers), each logging to ``<log_dir>/<name>.log``;
- readiness: the volume service and ``GET /`` of the API answer, and
  ``GET /v2.1/os-services`` shows the conductor and both computes ``up``.

Without ``VOLATTACH_TEST_RABBIT_URL`` / ``VOLATTACH_TEST_PG_URL`` the tests
skip, except under CI (``CI=true``), where they fail: ``scripts/test`` sets
both.  ``VOLATTACH_TEST_KEEP=1`` keeps the databases and virtual host;
``VOLATTACH_TEST_START_TIMEOUT`` (seconds, default 120) bounds start-up;
``VOLATTACH_TEST_BIN_DIR`` takes the daemons from another bin directory
(default: the one of the running Python).

A test module that needs a deployment of its own (other daemons, e.g. a
compute of an older release) builds one with ``running_deployment(workdir,
daemons=...)``; ``Deployment.add_daemon`` defines one more daemon, from any
bin directory, with its own config override, to ``start`` when wanted.

A test that stops the broker or the database must not touch the shared
ones: ``OwnRabbitNode`` and ``OwnPostgresCluster`` start a RabbitMQ node and a
PostgreSQL cluster of its own (other ports, state in a directory of the
test, through tools/start-rabbitmq.sh and tools/start-postgres.sh), which
``running_deployment(..., rabbit_url=, pg_url=, rabbit_node=)`` uses;
``prepare(dep)`` there defines daemons with overrides before any starts.

When a test that used the deployment fails, the tail of every daemon's log
is printed at the end of the run.
"""
import contextlib
import datetime
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import uuid
import warnings

import pytest
import requests
from sqlalchemy.engine import make_url

from tests import utils

START_TIMEOUT = float(os.environ.get("VOLATTACH_TEST_START_TIMEOUT", "120"))
STOP_TIMEOUT = 20
DB_SYNC_TIMEOUT = 300
LOG_TAIL_LINES = 60
ADMIN_TOKEN = "admin:admin:admin"
COMPUTE_HOSTS = ("compute1", "compute2")
NAME_PREFIX = "vatest_"
# Databases/vhosts of runs that died without cleaning up are dropped by a
# later run once they are this old.
STALE_SECONDS = 6 * 3600
RABBIT_NODE = os.environ.get("VOLATTACH_TEST_RABBIT_NODE", "rabbit@localhost")

# name -> (console script, extra config file names); started in this order.
DAEMONS = {
    "volume": ("volattach-volume", ()),
    "conductor": ("volattach-conductor", ()),
    "compute1": ("volattach-compute", ("compute1.conf",)),
    "compute2": ("volattach-compute", ("compute2.conf",)),
    "api": ("volattach-api", ()),
}
# volattach-manage commands run before the daemons start.
MANAGE_COMMANDS = (("db", "sync"),)

# nodeids of failed tests that used the deployment, and the log tails to
# show in the terminal summary.
_FAILED_TESTS = []
_LOG_REPORT = []


class DeploymentError(Exception):
    """The deployment could not be set up."""


def _console_script(name):
    if os.path.isabs(name):
        # a daemon of another installation (Deployment.add_daemon)
        if not os.path.exists(name):
            raise DeploymentError(f"{name} not found")
        return name
    # VOLATTACH_TEST_BIN_DIR: take the daemons from another installation.
    bindir = os.environ.get("VOLATTACH_TEST_BIN_DIR")
    candidate = pathlib.Path(bindir or pathlib.Path(sys.executable).parent) / name
    if candidate.exists():
        return str(candidate)
    if bindir:
        raise DeploymentError(f"{candidate} not found (VOLATTACH_TEST_BIN_DIR)")
    found = shutil.which(name)
    if not found:
        raise DeploymentError(f"console script {name} not found "
                              f"(pip install -e . in this venv)")
    return found


def _tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200 * lines))
            text = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def _is_stale(name, now):
    # vatest_<epoch>_<hex>[_suffix]
    try:
        epoch = int(name[len(NAME_PREFIX):].split("_")[0])
    except ValueError:
        return False
    return now - epoch > STALE_SECONDS


def _timestamp(value):
    """Epoch seconds of an API timestamp (naive ones are UTC); 0 if none."""
    if not value:
        return 0.0
    try:
        parsed = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


class PostgresDatabases:
    """Creates and drops throw-away databases on the server of ``url``."""

    def __init__(self, url):
        self.url = make_url(url)
        self.created = []

    def _connect(self):
        import psycopg2
        conn = psycopg2.connect(
            host=self.url.host or "127.0.0.1", port=self.url.port or 5432,
            user=self.url.username, password=self.url.password,
            dbname=self.url.database or "postgres", connect_timeout=10)
        conn.autocommit = True
        return conn

    def _drop(self, cur, name):
        from psycopg2 import sql
        cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))

    def drop_stale(self):
        now = time.time()
        conn = self._connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT datname FROM pg_database "
                            "WHERE datname LIKE %s", (NAME_PREFIX + "%",))
                for (name,) in cur.fetchall():
                    if _is_stale(name, now):
                        self._drop(cur, name)
        finally:
            conn.close()

    def create(self, name):
        """Create database ``name``; return its SQLAlchemy URL."""
        from psycopg2 import sql
        conn = self._connect()
        try:
            with conn.cursor() as cur:
                self._drop(cur, name)
                cur.execute(sql.SQL("CREATE DATABASE {}").format(
                    sql.Identifier(name)))
        finally:
            conn.close()
        self.created.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def drop_all(self):
        conn = self._connect()
        try:
            with conn.cursor() as cur:
                for name in self.created:
                    self._drop(cur, name)
        finally:
            conn.close()
        self.created = []


class RabbitVhost:
    """A virtual host of its own on the broker of ``url``, when possible.

    Needs rabbitmqctl against the local node (root or the rabbitmq user, as
    in CI).  Otherwise ``transport_url`` stays the given URL: the run shares
    the broker's virtual host and only its control_exchange is unique.
    """

    def __init__(self, url, name, node=None):
        self.url = url
        self.name = name
        self.node = node or RABBIT_NODE
        self.created = False
        self.transport_url = url

    def _ctl(self, *args):
        exe = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
        return subprocess.run([exe, "-q", "-n", self.node, *args],
                              capture_output=True, text=True, timeout=120)

    def create(self):
        parts = urllib.parse.urlsplit(self.url)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            return self.transport_url
        user = urllib.parse.unquote(parts.username or "guest")
        try:
            self._drop_stale()
            result = self._ctl("add_vhost", self.name)
            if result.returncode == 0:
                self.created = True
                result = self._ctl("set_permissions", "-p", self.name, user,
                                   ".*", ".*", ".*")
        except (OSError, subprocess.TimeoutExpired) as exc:
            result = None
            reason = str(exc)
        else:
            reason = (result.stderr or result.stdout).strip()
        if result is None or result.returncode != 0:
            warnings.warn(f"cannot create RabbitMQ vhost {self.name} "
                          f"({reason}); sharing the broker's vhost with a "
                          f"unique control_exchange only")
            self.delete()
            return self.transport_url
        self.transport_url = urllib.parse.urlunsplit(
            parts._replace(path="/" + self.name))
        return self.transport_url

    def _drop_stale(self):
        result = self._ctl("list_vhosts", "name")
        now = time.time()
        for line in result.stdout.split():
            if line.startswith(NAME_PREFIX) and _is_stale(line, now):
                self._ctl("delete_vhost", line)

    def delete(self):
        if self.created:
            self._ctl("delete_vhost", self.name)
            self.created = False


TOOLS_DIR = pathlib.Path(__file__).resolve().parents[2] / "tools"
SERVER_TIMEOUT = 120


def _run_tool(script, env, *args, timeout=SERVER_TIMEOUT):
    """Run tools/<script> with ``env`` added; its last stdout line, or
    DeploymentError with its output."""
    try:
        result = subprocess.run(
            ["bash", str(TOOLS_DIR / script), *args], capture_output=True,
            text=True, timeout=timeout, env=dict(os.environ, **env))
    except subprocess.TimeoutExpired as exc:
        raise DeploymentError(f"{script} {' '.join(args)}: no end after "
                              f"{timeout}s: {exc.stderr}") from exc
    if result.returncode != 0:
        raise DeploymentError(f"{script} {' '.join(args)} failed "
                              f"({result.returncode}):\n{result.stdout}"
                              f"{result.stderr}")
    lines = result.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _free_ports(count):
    ports = set()
    while len(ports) < count:
        ports.add(utils.free_port())
    return sorted(ports)


class OwnRabbitNode:
    """A RabbitMQ node of a test's own, beside the shared one: its own node
    name, AMQP and distribution ports, mnesia, logs and (empty) config
    under ``state_dir``, started by tools/start-rabbitmq.sh.  ``stop`` and
    ``start`` again restart it (the node's process ends in between);
    ``destroy`` stops it for good.  Needs root (or the rabbitmq user)."""

    def __init__(self, state_dir):
        self.state_dir = str(state_dir)
        self.node = f"vatest{uuid.uuid4().hex[:8]}@localhost"
        self.port, self.dist_port = _free_ports(2)
        self.url = f"rabbit://guest:guest@127.0.0.1:{self.port}/"
        self.pid_file = os.path.join(self.state_dir, "rabbit.pid")

    def _env(self):
        return {"VOLATTACH_RABBIT_PORT": str(self.port),
                "VOLATTACH_RABBIT_DIST_PORT": str(self.dist_port),
                "VOLATTACH_RABBIT_NODE": self.node,
                "VOLATTACH_RABBIT_STATE_DIR": self.state_dir}

    def _ctl(self, *args, timeout=60):
        exe = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
        return subprocess.run([exe, "-q", "-n", self.node, *args],
                              capture_output=True, text=True, timeout=timeout)

    def start(self):
        """Start the node (again); returns its transport URL."""
        _run_tool("start-rabbitmq.sh", self._env())
        return self.url

    def _pid(self):
        try:
            with open(self.pid_file) as f:
                return int(f.read().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def stop(self):
        """``rabbitmqctl stop``: the node closes its connections and its
        process ends (waited for through the pid file)."""
        result = self._ctl("stop", self.pid_file)
        if result.returncode != 0:
            raise DeploymentError(f"rabbitmqctl -n {self.node} stop: "
                                  f"{result.stdout}{result.stderr}")

    def destroy(self):
        """Stop the node whatever its state: rabbitmqctl, then SIGKILL of
        the pid it wrote if that is still running."""
        pid = self._pid()
        try:
            self._ctl("stop", self.pid_file, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def log_tail(self, lines=LOG_TAIL_LINES):
        return _tail(os.path.join(self.state_dir, "log", f"{self.node}.log"),
                     lines)


class OwnPostgresCluster:
    """A PostgreSQL cluster of a test's own, beside the shared one: its own
    port and data under ``state_dir`` (which the server's user must be able
    to reach), made and started by tools/start-postgres.sh, stopped with
    its ``--stop`` (a fast shutdown: sessions are cut)."""

    def __init__(self, state_dir):
        self.state_dir = str(state_dir)
        self.port = utils.free_port()
        self.url = None

    def _env(self):
        return {"VOLATTACH_PG_DIR": self.state_dir,
                "VOLATTACH_PG_PORT": str(self.port)}

    def start(self):
        """Start the cluster (made on first use); returns its URL."""
        self.url = _run_tool("start-postgres.sh", self._env())
        return self.url

    def stop(self):
        _run_tool("start-postgres.sh", self._env(), "--stop")

    def destroy(self):
        """Stop the cluster whatever its state: ``--stop``, then an
        immediate shutdown (SIGQUIT) of its postmaster if that still runs."""
        try:
            self.stop()
        except (DeploymentError, OSError) as exc:
            warnings.warn(f"stopping the test's PostgreSQL cluster: {exc}")
        try:
            with open(os.path.join(self.state_dir, "data",
                                   "postmaster.pid")) as f:
                pid = int(f.readline().strip() or 0)
        except (OSError, ValueError):
            return
        if pid:
            try:
                os.kill(pid, signal.SIGQUIT)
            except (ProcessLookupError, PermissionError):
                pass

    def log_tail(self, lines=LOG_TAIL_LINES):
        return _tail(os.path.join(self.state_dir, "postgres.log"), lines)


def _write_conf(path, sections):
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {value}" for key, value in options.items())
        lines.append("")
    path.write_text("\n".join(lines))


class Deployment:
    """A running multi-process volattach deployment.

    Attributes: ``api_url`` (http://127.0.0.1:<port>, no /v2.1),
    ``volume_url`` (http://127.0.0.1:<port>, no /v3), ``conf_path`` (the base
    config file), ``conf_files`` (name -> list of config files of that
    daemon), ``processes`` (name -> Popen), ``log_dir``, ``transport_url``,
    ``database_url``, ``volume_database_url``, ``daemons`` (name ->
    (console script, extra config file names), by default ``DAEMONS``) and
    ``compute_hosts`` (compute daemon name -> its host: readiness waits for
    these in os-services).
    """

    def __init__(self, workdir, transport_url, control_exchange,
                 database_url, volume_database_url, daemons=None):
        self.workdir = pathlib.Path(workdir)
        self.log_dir = str(self.workdir / "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.transport_url = transport_url
        self.control_exchange = control_exchange
        self.database_url = database_url
        self.volume_database_url = volume_database_url
        self.api_port = utils.free_port()
        self.volume_port = utils.free_port()
        while self.volume_port == self.api_port:
            self.volume_port = utils.free_port()
        self.api_url = f"http://127.0.0.1:{self.api_port}"
        self.volume_url = f"http://127.0.0.1:{self.volume_port}"
        self.conf_path = str(self.workdir / "volattach.conf")
        self.conf_files = {}
        self.processes = {}
        self._log_files = {}
        self.daemons = dict(DAEMONS if daemons is None else daemons)
        self.compute_hosts = {
            name: extra[0].rsplit(".", 1)[0]
            for name, (script, extra) in self.daemons.items()
            if script == "volattach-compute" and extra}

    # configuration

    def write_config(self):
        state_path = self.workdir / "state"
        state_path.mkdir(exist_ok=True)
        _write_conf(pathlib.Path(self.conf_path), {
            "DEFAULT": {
                "transport_url": self.transport_url,
                "control_exchange": self.control_exchange,
                "state_path": str(state_path),
                "debug": "true",
                "report_interval": "2",
                "service_down_time": "20",
            },
            "database": {"connection": self.database_url},
            # the daemons default to keystone: these tests use noauth tokens
            "api": {"listen": "127.0.0.1", "port": self.api_port,
                    "workers": 2, "threads": 2, "auth_strategy": "noauth"},
            "volume": {"listen": "127.0.0.1", "port": self.volume_port,
                       "workers": 1, "connection": self.volume_database_url,
                       "compute_endpoint": f"{self.api_url}/v2.1",
                       "auth_strategy": "noauth"},
            "cinder": {"endpoint": f"{self.volume_url}/v3",
                       "retry_seconds": 10, "auth_strategy": "noauth"},
            # tests share a project across many servers: no server quota
            "quota": {"instances": -1, "cores": -1, "ram": -1},
        })
        for name, (_, extra) in self.daemons.items():
            files = [self.conf_path]
            for extra_name in extra:
                host = extra_name.rsplit(".", 1)[0]
                path = self.workdir / extra_name
                _write_conf(path, {"compute": {"host": host}})
                files.append(str(path))
            self.conf_files[name] = files

    def add_daemon(self, name, script, bin_dir=None, overrides=None):
        """Define (or redefine) daemon ``name``: console script ``script``
        from ``bin_dir`` (default: where the others come from), with the
        base config file plus ``<name>.conf`` holding ``overrides``
        ({section: {option: value}}).  Not started: ``start(name)``.  A
        ``volattach-compute`` with ``[compute] host`` counts for readiness.
        """
        if bin_dir is not None:
            script = str(pathlib.Path(bin_dir) / script)
        files = [self.conf_path]
        if overrides:
            path = self.workdir / f"{name}.conf"
            _write_conf(path, overrides)
            files.append(str(path))
        self.daemons[name] = (script, ())
        self.conf_files[name] = files
        host = (overrides or {}).get("compute", {}).get("host")
        if os.path.basename(script) == "volattach-compute" and host:
            self.compute_hosts[name] = host
        else:
            self.compute_hosts.pop(name, None)

    def remove_daemon(self, name):
        """Stop daemon ``name`` and forget it (readiness and the checks of
        the running processes no longer count it)."""
        self.stop(name)
        self.processes.pop(name, None)
        self.daemons.pop(name, None)
        self.conf_files.pop(name, None)
        self.compute_hosts.pop(name, None)
        log = self._log_files.pop(name, None)
        if log:
            log.close()

    def _config_args(self, name):
        args = []
        for path in self.conf_files[name]:
            args += ["--config-file", path]
        return args

    def _env(self, name):
        env = dict(os.environ)
        if os.path.isabs(self.daemons.get(name, ("",))[0]):
            # another installation must import its own code
            env.pop("PYTHONPATH", None)
        env["PYTHONUNBUFFERED"] = "1"
        env["VOLATTACH_CONFIG_FILE"] = self.conf_path
        # gunicorn's control socket defaults to one path per user: give
        # every daemon its own.
        runtime = self.workdir / "run" / name
        runtime.mkdir(parents=True, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        bindir = str(pathlib.Path(sys.executable).parent)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        return env

    def manage(self, *args, timeout=DB_SYNC_TIMEOUT):
        """Run volattach-manage with the deployment's config; return it."""
        cmd = [_console_script("volattach-manage"), "--config-file",
               self.conf_path, *args]
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=timeout, env=self._env("manage"))
        with open(os.path.join(self.log_dir, "manage.log"), "a") as log:
            log.write(f"=== {' '.join(cmd)} -> {result.returncode}\n")
            log.write(result.stdout + result.stderr)
        return result

    # processes

    def log_path(self, name):
        return os.path.join(self.log_dir, f"{name}.log")

    def log_tail(self, name, lines=LOG_TAIL_LINES):
        return _tail(self.log_path(name), lines)

    def start(self, name):
        """Start daemon ``name`` (a key of DAEMONS); return its Popen."""
        proc = self.processes.get(name)
        if proc is not None and proc.poll() is None:
            raise DeploymentError(f"{name} is already running")
        script, _ = self.daemons[name]
        cmd = [_console_script(script), *self._config_args(name)]
        log = open(self.log_path(name), "ab")
        log.write(f"=== {time.strftime('%H:%M:%S')} starting "
                  f"{' '.join(cmd)}\n".encode())
        log.flush()
        old = self._log_files.pop(name, None)
        if old:
            old.close()
        self._log_files[name] = log
        # A session of its own: the whole process group (gunicorn master
        # and workers) can be signalled at once.
        self.processes[name] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=self._env(name), cwd=str(self.workdir), start_new_session=True)
        return self.processes[name]

    def start_all(self):
        for name in self.daemons:
            self.start(name)

    def _killpg(self, proc, sig):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, name, timeout=STOP_TIMEOUT):
        """SIGTERM the daemon, SIGKILL its process group after ``timeout``."""
        proc = self.processes.get(name)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._killpg(proc, signal.SIGKILL)
                proc.wait(10)
        # Whatever the daemon left behind in its group (orphaned workers).
        self._killpg(proc, signal.SIGKILL)
        return proc.returncode

    def stop_all(self):
        for name in reversed(list(self.processes)):
            self.stop(name)
        for log in self._log_files.values():
            log.close()
        self._log_files.clear()

    def kill(self, name, sig=signal.SIGKILL):
        """Send ``sig`` to the daemon's whole process group.

        For SIGKILL, waits until the daemon is gone.  Bring it back with
        ``start(name)`` or ``restart(name)``.
        """
        proc = self.processes[name]
        self._killpg(proc, sig)
        if sig == signal.SIGKILL:
            proc.wait(30)
        return proc

    def restart(self, name, wait=True):
        """Stop (gracefully) and start the daemon; wait until ready.

        For the conductor and the computes, ready means a heartbeat of the
        new process (``updated_at`` in os-services after the restart), not
        the last one of the old process.
        """
        self.stop(name)
        since = time.time()
        proc = self.start(name)
        if wait:
            self.wait_until_ready(fresh=name, since=since)
        return proc

    # readiness

    def _check_processes(self):
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise DeploymentError(
                    f"{name} exited with status {proc.returncode}; tail of "
                    f"{self.log_path(name)}:\n{self.log_tail(name)}")

    def services(self):
        """The os-services list of the API (admin), or None."""
        resp = requests.get(f"{self.api_url}/v2.1/os-services",
                            headers={"X-Auth-Token": ADMIN_TOKEN}, timeout=10)
        if resp.status_code != 200:
            return None
        return resp.json().get("services")

    def _ready(self, fresh=None, since=None):
        """None when ready, else what is missing."""
        try:
            resp = requests.get(self.volume_url + "/", timeout=5)
            if resp.status_code >= 500:
                return f"volume service: GET / -> {resp.status_code}"
            resp = requests.get(self.api_url + "/", timeout=5)
            if resp.status_code != 200:
                return f"compute API: GET / -> {resp.status_code}"
            services = self.services()
        except (requests.ConnectionError, requests.Timeout) as exc:
            return f"not answering: {exc}"
        except ValueError as exc:
            return f"os-services is not JSON: {exc}"
        if services is None:
            return "GET /v2.1/os-services did not answer 200"
        up = {(s.get("binary", "").rsplit("-", 1)[-1], s.get("host"))
              for s in services if s.get("state") == "up"}
        missing = []
        if not any(binary == "conductor" for binary, _ in up):
            missing.append("a conductor")
        missing += [f"compute {host}" for host in self.compute_hosts.values()
                    if ("compute", host) not in up]
        if missing:
            return f"not up in os-services: {', '.join(missing)} ({services})"
        if (fresh == "conductor" or fresh in self.compute_hosts) \
                and since is not None:
            binary = "conductor" if fresh == "conductor" else "compute"
            rows = [s for s in services
                    if s.get("binary", "").endswith("-" + binary)
                    and (binary == "conductor"
                         or s.get("host") == self.compute_hosts[fresh])]
            if not any(_timestamp(s.get("updated_at")) >= since - 1
                       for s in rows):
                return f"no heartbeat of the restarted {fresh} yet ({rows})"
        return None

    def wait_until_ready(self, timeout=START_TIMEOUT, fresh=None, since=None):
        """Wait until the API, the volume service and the services are up.

        ``fresh``/``since``: also wait for a heartbeat of daemon ``fresh``
        newer than ``since`` (epoch seconds).  Raises DeploymentError, with
        the logs, when a daemon exits or ``timeout`` passes.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._check_processes()
            missing = self._ready(fresh, since)
            if missing is None:
                return
            if time.monotonic() >= deadline:
                raise DeploymentError(
                    f"deployment not ready after {timeout}s: {missing}\n"
                    + self.logs_report())
            time.sleep(0.5)

    def logs_report(self, lines=LOG_TAIL_LINES):
        parts = []
        for name in ["manage", *self.daemons]:
            path = self.log_path(name)
            if os.path.exists(path):
                parts.append(f"----- {path} (last {lines} lines)\n"
                             f"{_tail(path, lines)}")
        return "\n".join(parts)


@contextlib.contextmanager
def running_deployment(workdir, daemons=None, rabbit_url=None, pg_url=None,
                       rabbit_node=None, prepare=None):
    """A ready deployment with databases and a virtual host of its own in
    ``workdir`` (see module doc), torn down on exit; ``daemons`` replaces
    ``DAEMONS``.  ``rabbit_url``/``pg_url`` (with ``rabbit_node``, the
    broker's node name for rabbitmqctl) replace the servers of
    ``VOLATTACH_TEST_RABBIT_URL``/``VOLATTACH_TEST_PG_URL`` (e.g. those of
    ``OwnRabbitNode``/``OwnPostgresCluster``); ``prepare(dep)`` runs once
    the config is written, before any daemon starts (``add_daemon`` there
    defines the daemons with overrides of their own)."""
    if rabbit_url is None:
        rabbit_url = utils.require_env(utils.RABBIT_URL_ENV,
                                       "the integration deployment")
    if pg_url is None:
        pg_url = utils.require_env(utils.PG_URL_ENV,
                                   "the integration deployment")
    keep = os.environ.get("VOLATTACH_TEST_KEEP") == "1"
    run_id = f"{NAME_PREFIX}{int(time.time())}_{uuid.uuid4().hex[:8]}"

    databases = PostgresDatabases(pg_url)
    vhost = RabbitVhost(rabbit_url, run_id, node=rabbit_node)
    dep = None
    try:
        databases.drop_stale()
        database_url = databases.create(run_id + "_nova")
        volume_database_url = databases.create(run_id + "_volume")
        transport_url = vhost.create()
        dep = Deployment(workdir, transport_url, run_id, database_url,
                         volume_database_url, daemons=daemons)
        dep.write_config()
        if prepare is not None:
            prepare(dep)
        for command in MANAGE_COMMANDS:
            result = dep.manage(*command)
            if result.returncode != 0:
                raise DeploymentError(
                    f"volattach-manage {' '.join(command)} failed "
                    f"({result.returncode}):\n{result.stdout}{result.stderr}")
        dep.start_all()
        dep.wait_until_ready()
        yield dep
    finally:
        if dep is not None:
            _best_effort(dep.stop_all)
            if _FAILED_TESTS:
                _LOG_REPORT.append(
                    f"tests that failed with the deployment: "
                    f"{', '.join(_FAILED_TESTS)}\nlogs in {dep.log_dir}\n"
                    + dep.logs_report())
        if not keep:
            _best_effort(vhost.delete)
            _best_effort(databases.drop_all)


@pytest.fixture(scope="session")
def deployment(tmp_path_factory):
    """The multi-process deployment of this test session (see module doc)."""
    with running_deployment(tmp_path_factory.mktemp("deployment")) as dep:
        yield dep


def _best_effort(cleanup):
    # A failing cleanup must not hide the error that got us here.
    try:
        cleanup()
    except Exception as exc:  # noqa: BLE001 - reported, not swallowed
        warnings.warn(f"integration teardown: {cleanup.__qualname__} "
                      f"failed: {exc!r}")


def pytest_collection_modifyitems(config, items):
    # Everything under tests/integration is an integration test
    # (select or deselect with -m).
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(item.path).parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and any(name.endswith("deployment") for name in
                             getattr(item, "fixturenames", ())):
        if item.nodeid not in _FAILED_TESTS:
            _FAILED_TESTS.append(item.nodeid)


def pytest_terminal_summary(terminalreporter):
    if _LOG_REPORT:
        terminalreporter.section("volattach daemon logs")
        for text in _LOG_REPORT:
            terminalreporter.write_line(text)
