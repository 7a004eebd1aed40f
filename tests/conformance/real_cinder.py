"""A real OpenStack Cinder 29.0.0 on loopback, for the conformance tests and
``benchmarks/cinder_latency.py``.

``start_real_cinder(tmp_dir)`` is a context manager that yields the root
URL (``http://127.0.0.1:<port>``; the API is under ``/v3/<project_id>``):

1. ``tools/real-cinder/setup.sh`` installs Cinder from PyPI into its own
   virtualenv (``.ci-state/cinder-venv``, or ``$VOLATTACH_CINDER_VENV``),
   at most ``INSTALL_TIMEOUT`` seconds, a no-op once installed;
2. ``tools/real-cinder/run_cinder.py`` runs in that venv on a free port with
   its state (SQLite, cinder.conf, cinder.log) under ``tmp_dir``;
3. it waits (at most ``START_TIMEOUT`` seconds) for READY and then until a
   volume can really be created (the scheduler has the backend's
   capabilities), deleting that probe volume;
4. on exit: SIGTERM, then SIGKILL after ``STOP_TIMEOUT`` seconds.

``backend="rbd"`` runs Cinder's own RBD driver on the Ceph cluster of
``tools/start-ceph.sh`` instead of the fake backend: ``ensure_ceph_user``
gives Cinder a cephx user of its own (``RBD_USER``, caps ``profile rbd``
on the pool, keyring at Ceph's standard path, where computes find it too),
and its connections name ``RBD_SECRET_UUID`` as the libvirt secret.
``ceph_unavailable()`` says why that cannot run here.

When the package index cannot be reached the install fails: under CI
(``CI=true``) the calling test fails with that message, otherwise it skips.
Outside pytest pass ``on_unavailable`` (a callable taking the message) to
decide yourself.  Any other failure raises ``RealCinderError`` with the tail
of Cinder's log.

Real Cinder under ``noauth_include_project_id`` takes everything after the
token's first colon as the project id (and makes every caller admin), so
tokens sent to it are ``<user>:<project>``, never with roles; the project id
must be hex (``[0-9a-f-]+``): use ``PROJECT_ID``.
"""
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

import requests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, "tools", "real-cinder")
SETUP = os.path.join(TOOLS, "setup.sh")
RUNNER = os.path.join(TOOLS, "run_cinder.py")
VENV_ENV = "VOLATTACH_CINDER_VENV"
DEFAULT_VENV = os.path.join(REPO, ".ci-state", "cinder-venv")

INSTALL_TIMEOUT = 900.0
START_TIMEOUT = 120.0
STOP_TIMEOUT = 10.0
INDEX_UNREACHABLE = 3  # setup.sh's exit status

# "localproject0001" in hex: Cinder's noauth wants [0-9a-f-]+.
PROJECT_ID = "6c6f63616c70726f6a65637430303031"
USER_ID = "admin"
TOKEN = "%s:%s" % (USER_ID, PROJECT_ID)


CEPH_CONF = "/etc/ceph/ceph.conf"
RBD_POOL = os.environ.get("VOLATTACH_TEST_CEPH_POOL", "volumes")
RBD_USER = "cinder-real"
# the libvirt secret of RBD_USER's key on computes (rbd_secret_uuid)
RBD_SECRET_UUID = "5b0c1a4e-6d1f-4a8e-9c2e-72a1c1de29e0"


class RealCinderError(RuntimeError):
    """Real Cinder could not be installed or started."""


class RealCinderUnavailable(RealCinderError):
    """The package index was unreachable: Cinder could not be installed."""


def venv_path():
    return os.environ.get(VENV_ENV) or DEFAULT_VENV


def _in_ci():
    return os.environ.get("CI", "").strip().lower() not in (
        "", "0", "false", "no")


def _pytest_unavailable(message):
    import pytest
    if _in_ci():
        pytest.fail("CI: real Cinder 29 is needed: %s" % message,
                    pytrace=False)
    pytest.skip("real Cinder 29 unavailable: %s" % message)


def install(timeout=INSTALL_TIMEOUT):
    """Run setup.sh; return the cinder venv's python.

    Raises RealCinderUnavailable (index unreachable, or the install did not
    finish in time) or RealCinderError (any other install failure)."""
    venv = venv_path()
    try:
        proc = subprocess.run(["bash", SETUP, venv], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RealCinderUnavailable(
            "tools/real-cinder/setup.sh did not finish in %ds (is the "
            "package index reachable?)" % timeout)
    if proc.returncode == INDEX_UNREACHABLE:
        raise RealCinderUnavailable(
            "the package index is unreachable, pip could not install "
            "cinder==29.0.0:\n%s" % proc.stderr[-3000:])
    if proc.returncode != 0:
        raise RealCinderError(
            "tools/real-cinder/setup.sh failed (exit %d):\n%s"
            % (proc.returncode, proc.stderr[-3000:]))
    return os.path.join(venv, "bin", "python")


def ceph_unavailable(pool=RBD_POOL):
    """Why real Cinder's RBD driver cannot run here, or None: the Ceph
    cluster of tools/start-ceph.sh, its pool, and Debian's rados/rbd
    bindings (which the cinder venv links) must be there."""
    import shutil
    if not os.path.exists(CEPH_CONF):
        return "no %s (tools/start-ceph.sh)" % CEPH_CONF
    if shutil.which("ceph") is None or shutil.which("rbd") is None:
        return "the ceph/rbd commands are missing (tools/start-ceph.sh)"
    try:
        subprocess.run(["rbd", "ls", pool], check=True, capture_output=True,
                       timeout=20)
    except (subprocess.SubprocessError, OSError) as e:
        return "Ceph or its pool %s does not answer (tools/start-ceph.sh): " \
            "%s" % (pool, getattr(e, "stderr", "") or e)
    if subprocess.run(["/usr/bin/python3", "-c", "import rados, rbd"],
                      capture_output=True).returncode != 0:
        return "Debian's python3-rados/python3-rbd are missing " \
            "(tools/start-ceph.sh installs them)"
    return None


def keyring_path(user, cluster="ceph"):
    return "/etc/ceph/%s.client.%s.keyring" % (cluster, user)


def ensure_ceph_user(user=RBD_USER, pool=RBD_POOL):
    """The cephx user ``client.<user>`` of Cinder's RBD driver (created
    when missing, as an operator does: ``profile rbd`` on ``pool``), its
    keyring written to Ceph's standard path; returns that path."""
    path = keyring_path(user)
    proc = subprocess.run(
        ["ceph", "auth", "get-or-create", "client.%s" % user,
         "mon", "profile rbd", "osd", "profile rbd pool=%s" % pool,
         "mgr", "profile rbd pool=%s" % pool],
        capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RealCinderError("ceph auth get-or-create client.%s: %s"
                              % (user, proc.stderr.strip()))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(proc.stdout)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def free_port(host="127.0.0.1"):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _headers(version="3.0"):
    return {"X-Auth-Token": TOKEN, "Content-Type": "application/json",
            "Accept": "application/json",
            "OpenStack-API-Version": "volume %s" % version}


def _log_tail(state_dir, stdout_path, lines=40):
    parts = []
    for path in (stdout_path, os.path.join(state_dir, "cinder.log")):
        try:
            with open(path, errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
        except OSError:
            continue
        parts.append("--- %s ---\n%s" % (path, "\n".join(tail)))
    return "\n".join(parts)


def _wait_ready(proc, stdout_path, deadline):
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with open(stdout_path, errors="replace") as f:
            if any(line.startswith("READY ") for line in f):
                return True
        time.sleep(0.1)
    return False


def _wait_volume_creatable(url, deadline):
    """Create probe volumes until one becomes available, then delete it.

    Right after start the scheduler may not have the backend's capabilities
    yet (the volume then goes to ``error``): try again until the deadline."""
    base = "%s/v3/%s" % (url, PROJECT_ID)
    last = "no attempt"
    while time.monotonic() < deadline:
        resp = requests.post(base + "/volumes", headers=_headers(), json={
            "volume": {"size": 1, "name": "probe-%s" % uuid.uuid4().hex[:8]}},
            timeout=30)
        if resp.status_code != 202:
            last = "POST /volumes: %d %s" % (resp.status_code, resp.text)
            time.sleep(0.5)
            continue
        volume_id = resp.json()["volume"]["id"]
        status = "creating"
        while status == "creating" and time.monotonic() < deadline:
            time.sleep(0.1)
            status = requests.get(base + "/volumes/" + volume_id,
                                  headers=_headers(),
                                  timeout=30).json()["volume"]["status"]
        requests.delete(base + "/volumes/" + volume_id, headers=_headers(),
                        timeout=30)
        if status == "available":
            return
        last = "probe volume %s went %s" % (volume_id, status)
        time.sleep(1.0)
    raise RealCinderError("real Cinder could not create a volume: %s" % last)


def stop(proc, timeout=STOP_TIMEOUT):
    """SIGTERM, then SIGKILL if it is still there after ``timeout``."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout)


@contextlib.contextmanager
def start_real_cinder(tmp_dir, on_unavailable=None, debug=False,
                      start_timeout=START_TIMEOUT,
                      install_timeout=INSTALL_TIMEOUT, transport_url=None,
                      backend="fake", rbd_pool=RBD_POOL, rbd_user=RBD_USER,
                      rbd_secret_uuid=RBD_SECRET_UUID):
    """Install (once) and run a real Cinder 29.0.0; yields its root URL.

    ``transport_url``: oslo.messaging URL between Cinder's api, scheduler and
    volume service (default ``fake:/``, in-memory, in its one process).
    ``backend``: ``fake`` or ``rbd`` (Cinder's RBD driver on ``rbd_pool`` of
    the local Ceph cluster as ``rbd_user``, made by ``ensure_ceph_user``)."""
    on_unavailable = on_unavailable or _pytest_unavailable
    try:
        python = install(install_timeout)
    except RealCinderUnavailable as exc:
        on_unavailable(str(exc))
        raise  # on_unavailable is expected to raise
    state_dir = os.path.join(str(tmp_dir), "real-cinder")
    os.makedirs(state_dir, exist_ok=True)
    stdout_path = os.path.join(state_dir, "stdout.log")
    port = free_port()
    cmd = [python, RUNNER, str(port), "--state-dir", state_dir]
    if debug:
        cmd.append("--debug")
    if transport_url:
        cmd += ["--transport-url", transport_url]
    if backend == "rbd":
        if subprocess.run([python, "-c", "import rados, rbd"],
                          capture_output=True).returncode != 0:
            raise RealCinderError(
                "%s cannot import Ceph's rados/rbd bindings, which Cinder's "
                "RBD driver needs (tools/real-cinder/setup.sh links Debian's "
                "python3-rados/python3-rbd)" % python)
        ensure_ceph_user(rbd_user, rbd_pool)
        cmd += ["--backend", "rbd", "--rbd-pool", rbd_pool,
                "--rbd-user", rbd_user, "--rbd-ceph-conf", CEPH_CONF,
                "--rbd-secret-uuid", rbd_secret_uuid]
    elif backend != "fake":
        raise ValueError("backend must be fake or rbd, not %r" % backend)
    env = dict(os.environ)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        env.pop(var, None)
    with open(stdout_path, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env,
                                cwd=state_dir, start_new_session=True)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + start_timeout
        if not _wait_ready(proc, stdout_path, deadline):
            raise RealCinderError(
                "real Cinder did not answer on %s within %ds (exit status "
                "%s)\n%s" % (url, start_timeout, proc.poll(),
                             _log_tail(state_dir, stdout_path)))
        try:
            _wait_volume_creatable(url, deadline)
        except (RealCinderError, requests.RequestException) as exc:
            raise RealCinderError("%s\n%s" % (
                exc, _log_tail(state_dir, stdout_path)))
        yield url
    finally:
        stop(proc)


def main(argv=None):
    """``python -m tests.conformance.real_cinder [DIR]``: run a real Cinder
    until Ctrl-C (handy to poke at it with curl)."""
    import tempfile
    argv = sys.argv[1:] if argv is None else argv
    tmp_dir = argv[0] if argv else tempfile.mkdtemp(prefix="real-cinder-")

    def unavailable(message):
        raise SystemExit(message)

    with start_real_cinder(tmp_dir, on_unavailable=unavailable) as url:
        print("real Cinder 29 at %s/v3/%s (X-Auth-Token: %s), state in %s"
              % (url, PROJECT_ID, TOKEN, tmp_dir), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
