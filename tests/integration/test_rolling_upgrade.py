"""Rolling upgrade, tested for real (like grenade's partial upgrade).

The last commit before read-only attachments (compute API 2.105, compute RPC
1.2, BlockDeviceMapping 1.1, service version 3) is written in
``ROLLING_UPGRADE_BASE``.  This module installs that tree into a virtualenv
of its own (``.ci-state/upgrade-venv-<sha12>``, built once: a stamp file
marks it complete) and runs its ``volattach-compute`` as host
``compute-old`` beside the current API, conductor, volume service and a
current compute (``compute1``), over RabbitMQ and PostgreSQL, in a
deployment of its own (the session's ``deployment`` stays all-current).

What it proves, in order (one test: the steps build on each other):

1. the old compute registers through the current conductor: up in
   os-services, service version 2 in the services table;
2. servers on both computes attach read/write (the conductor sends the old
   compute RPC 1.0 and BlockDeviceMapping 1.1, which the old compute
   backports through the conductor);
3. a read-only attach to the server on the old compute is 409 and leaves
   nothing reserved: the volume stays available with no attachment in the
   volume service, and the server lists no attachment for it;
4. a read-only attach to the server on the current compute works;
5. after only the old compute is restarted on current code (same host), its
   row shows version 3 and, once the conductor's compute RPC cap has been
   refreshed, a read-only attach to the server there works too.  No other
   daemon was restarted.

The base commit must be reachable with ``git`` (CI clones with full
history); without it the test skips, and under CI fails.
"""
import fcntl
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
import sqlalchemy

from tests import utils
from tests.integration import conftest as harness
from volattach.compute import rpcapi as compute_rpcapi
from volattach.objects import service as service_obj
from tests.integration.client import ComputeClient, VolumeClient

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
BASE_FILE = pathlib.Path(__file__).with_name("ROLLING_UPGRADE_BASE")
OLD_HOST = "compute-old"
NEW_HOST = "compute1"
OLD_SERVICE_VERSION = 2
# the current code's: every later bump must keep this test passing
NEW_SERVICE_VERSION = service_obj.SERVICE_VERSION
NEW_COMPUTE_RPC = compute_rpcapi.ComputeAPI.VERSION
# The conductor caches its compute RPC cap ([upgrade_levels] compute = auto)
# for compute.rpcapi._CAP_TTL = 10 s.
CAP_TTL_MARGIN = 11.0
VENV_BUILD_TIMEOUT = 900
WAIT = 60
CREATE_MICROVERSION = "2.37"
RO_MICROVERSION = "2.105"
STAMP_NAME = ".volattach-upgrade-stamp"


# -- the old tree and its virtualenv -----------------------------------------

def _base_sha():
    return BASE_FILE.read_text().split()[0].strip()


def _unavailable(message):
    if utils.in_ci():
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


def _build_old_venv(sha, scratch):
    """The bin dir of a virtualenv with volattach at ``sha`` installed
    (non-editable); built once per sha under .ci-state, a stamp marks it
    complete, a lock file serializes concurrent builders."""
    venv = REPO / ".ci-state" / f"upgrade-venv-{sha[:12]}"
    stamp = venv / STAMP_NAME
    bin_dir = venv / "bin"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (stamp.exists() and stamp.read_text().strip() == sha
                and (bin_dir / "volattach-compute").exists()):
            return bin_dir
        git = shutil.which("git")
        if git is None:
            _unavailable("git is needed to build the rolling-upgrade base")
        probe = subprocess.run([git, "-C", str(REPO), "cat-file", "-e",
                                f"{sha}^{{commit}}"], capture_output=True)
        if probe.returncode != 0:
            _unavailable(f"rolling-upgrade base {sha} is not in this clone "
                         f"(shallow? git fetch --unshallow)")
        tree = scratch / "old-tree"
        tree.mkdir()
        archive = subprocess.Popen([git, "-C", str(REPO), "archive", sha],
                                   stdout=subprocess.PIPE)
        extract = subprocess.run(["tar", "-x", "-C", str(tree)],
                                 stdin=archive.stdout, capture_output=True)
        archive.stdout.close()
        if archive.wait() != 0 or extract.returncode != 0:
            raise harness.DeploymentError(
                f"git archive {sha} | tar -x failed: {extract.stderr!r}")
        if venv.exists():
            shutil.rmtree(venv)  # a build that did not finish
        log = scratch / "pip-install.log"
        for cmd in ([sys.executable, "-m", "venv", str(venv)],
                    [str(bin_dir / "python"), "-m", "pip", "install",
                     "--disable-pip-version-check", str(tree)]):
            with open(log, "ab") as out:
                result = subprocess.run(cmd, stdout=out,
                                        stderr=subprocess.STDOUT,
                                        timeout=VENV_BUILD_TIMEOUT)
            if result.returncode != 0:
                raise harness.DeploymentError(
                    f"{' '.join(cmd)} failed ({result.returncode}):\n"
                    + harness._tail(log))
        stamp.write_text(sha + "\n")
        return bin_dir


# -- the deployment ------------------------------------------------------------

@pytest.fixture(scope="module")
def upgrade_deployment(tmp_path_factory):
    """volume, conductor, api and compute1 on current code, compute-old on
    the base commit's code."""
    # Fail or skip on missing services before the (slow) venv build.
    utils.require_env(utils.RABBIT_URL_ENV, "the rolling-upgrade deployment")
    utils.require_env(utils.PG_URL_ENV, "the rolling-upgrade deployment")
    old_bin = _build_old_venv(_base_sha(),
                              tmp_path_factory.mktemp("upgrade-base"))
    daemons = {name: harness.DAEMONS[name]
               for name in ("volume", "conductor", NEW_HOST, "api")}
    with harness.running_deployment(tmp_path_factory.mktemp("upgrade"),
                                    daemons=daemons) as dep:
        # The old compute joins the running deployment, as in a rolling
        # upgrade (conductor and API upgraded first).  It predates
        # ConductorAPI.wait_until_ready: beside a conductor still starting,
        # its first call could be dropped and wait out the 60 s RPC timeout.
        dep.add_daemon(OLD_HOST, "volattach-compute", bin_dir=old_bin,
                       overrides={"compute": {"host": OLD_HOST}})
        dep.start(OLD_HOST)
        dep.wait_until_ready()
        yield dep


@pytest.fixture(scope="module")
def compute(upgrade_deployment):
    client = ComputeClient(upgrade_deployment.api_url,
                           microversion=CREATE_MICROVERSION)
    yield client
    client.close()


@pytest.fixture(scope="module")
def volumes(upgrade_deployment):
    client = VolumeClient(upgrade_deployment.volume_url)
    yield client
    client.close()


# -- helpers ---------------------------------------------------------------------

def _query(dep, sql, **params):
    """Rows of ``sql`` in the deployment's compute database."""
    engine = sqlalchemy.create_engine(dep.database_url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in
                    conn.execute(sqlalchemy.text(sql), params).all()]
    finally:
        engine.dispose()


def _compute_rows(dep):
    """host -> (version, rpc_version) of the compute rows in the database."""
    rows = _query(dep, "SELECT host, version, rpc_version FROM services "
                       "WHERE \"binary\" = 'volattach-compute'")
    return {host: (version, rpc) for host, version, rpc in rows}


def _bdm_modes(dep, volume_id):
    """(instance_uuid, attach_mode) of the volume's block-device records."""
    return _query(dep, "SELECT instance_uuid, attach_mode FROM "
                       "block_device_mappings WHERE volume_id = :v",
                  v=volume_id)


def _manage_service_list(dep):
    """(binary, host) -> (state, version) from `volattach-manage service list`."""
    result = dep.manage("service", "list", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].isdigit():
            rows[(cells[1], cells[2])] = (cells[4], int(cells[6]))
    return rows


def _services_up(compute):
    status, body, _ = compute.list_services()
    assert status == 200, (status, body)
    return {(s["binary"], s["host"]): s["state"] for s in body["services"]}


def _create_server_on(compute, name, host):
    # an admin's forced host (conductor/scheduler.py honours "zone:host")
    status, body, _ = compute.create_server(
        name=name, availability_zone=f"nova:{host}")
    assert status == 202, (status, body)
    server_id = body["server"]["id"]
    server = compute.wait_for_server_status(server_id, "ACTIVE", WAIT)
    assert server["OS-EXT-SRV-ATTR:host"] == host, server
    return server_id


def _new_volume(volumes, name):
    status, body, _ = volumes.create_volume(size=1, name=name)
    assert status == 202, (status, body)
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available", WAIT)
    return volume_id


def _volume_attachments(volumes, volume_id):
    """The volume service's attachment rows of the volume (any status)."""
    status, body, _ = volumes.request(
        "GET", volumes._path("/attachments/detail"),
        params={"volume_id": volume_id}, microversion="3.54")
    assert status == 200, (status, body)
    return [a for a in body["attachments"] if a["volume_id"] == volume_id]


def _attach(compute, volumes, server_id, volume_id, mode):
    """Attach at 2.105 (asynchronous: 202) and wait until the volume is
    in-use; check the mode in the compute API and the volume service."""
    status, body, _ = compute.attach_volume(
        server_id, volume_id, microversion=RO_MICROVERSION, attach_mode=mode)
    assert status == 202, (status, body)
    volume = volumes.wait_for_volume_status(volume_id, "in-use", WAIT)
    assert [a["server_id"] for a in volume["attachments"]] == [server_id]
    status, body, _ = compute.show_volume_attachment(
        server_id, volume_id, microversion=RO_MICROVERSION)
    assert status == 200, (status, body)
    assert body["volumeAttachment"]["attach_mode"] == mode, body
    assert body["volumeAttachment"]["device"].startswith("/dev/"), body
    rows = _volume_attachments(volumes, volume_id)
    assert [(r["instance"], r["status"], r["attach_mode"]) for r in rows] \
        == [(server_id, "attached", mode)], rows
    # (flat connection_info, as Cinder's attachment API returns it)
    assert rows[0]["connection_info"]["access_mode"] == mode, rows
    assert compute.show_server(server_id)[1]["server"][
        "OS-EXT-STS:task_state"] is None


def _server_volume_ids(compute, server_id):
    status, body, _ = compute.list_volume_attachments(
        server_id, microversion=RO_MICROVERSION)
    assert status == 200, (status, body)
    return sorted(a["volumeId"] for a in body["volumeAttachments"])


def _pids(dep, names):
    return {name: dep.processes[name].pid for name in names}


# -- the test ----------------------------------------------------------------------

def test_rolling_upgrade_of_one_compute(upgrade_deployment, compute, volumes):
    dep = upgrade_deployment
    others = ("volume", "conductor", NEW_HOST, "api")
    pids_before = _pids(dep, others)

    # 1. The old compute registered through the current conductor.
    services = _services_up(compute)
    assert services[("volattach-compute", OLD_HOST)] == "up", services
    assert services[("volattach-compute", NEW_HOST)] == "up", services
    rows = _compute_rows(dep)
    assert rows[OLD_HOST] == (OLD_SERVICE_VERSION, "1.1"), rows
    assert rows[NEW_HOST] == (NEW_SERVICE_VERSION, NEW_COMPUTE_RPC), rows
    listed = _manage_service_list(dep)
    assert listed[("volattach-compute", OLD_HOST)] == ("up", OLD_SERVICE_VERSION)
    assert listed[("volattach-compute", NEW_HOST)] == ("up", NEW_SERVICE_VERSION)

    server_old = _create_server_on(compute, "on-old", OLD_HOST)
    server_new = _create_server_on(compute, "on-new", NEW_HOST)

    # 2. Read/write attaches on both computes (explicitly rw at 2.105 on
    # the old one: only "ro" needs a new compute).
    rw_old = _new_volume(volumes, "rw-old")
    rw_new = _new_volume(volumes, "rw-new")
    _attach(compute, volumes, server_old, rw_old, "rw")
    _attach(compute, volumes, server_new, rw_new, "rw")
    assert _bdm_modes(dep, rw_old) == [(server_old, "rw")]
    assert _bdm_modes(dep, rw_new) == [(server_new, "rw")]

    # 3. Read-only on the old compute: 409, and nothing reserved.
    ro_old = _new_volume(volumes, "ro-old")
    status, body, _ = compute.attach_volume(
        server_old, ro_old, microversion=RO_MICROVERSION, attach_mode="ro")
    assert status == 409, (status, body)
    assert body["conflictingRequest"]["code"] == 409, body
    assert OLD_HOST in body["conflictingRequest"]["message"], body
    _, body, _ = volumes.show_volume(ro_old)
    assert body["volume"]["status"] == "available", body
    assert body["volume"]["attachments"] == [], body
    assert _volume_attachments(volumes, ro_old) == []
    assert _bdm_modes(dep, ro_old) == []
    assert _server_volume_ids(compute, server_old) == [rw_old]
    _, body, _ = compute.show_server(server_old)
    assert body["server"]["status"] == "ACTIVE", body
    assert body["server"]["OS-EXT-STS:task_state"] is None, body

    # 4. Read-only on the current compute works.
    ro_new = _new_volume(volumes, "ro-new")
    _attach(compute, volumes, server_new, ro_new, "ro")
    assert _bdm_modes(dep, ro_new) == [(server_new, "ro")]
    assert _server_volume_ids(compute, server_new) == sorted([rw_new, ro_new])

    # 5. Restart only the old compute, on current code, same host.
    dep.stop(OLD_HOST)
    dep.add_daemon(OLD_HOST, "volattach-compute",
                   overrides={"compute": {"host": OLD_HOST}})
    since = time.time()
    dep.start(OLD_HOST)
    dep.wait_until_ready(timeout=WAIT, fresh=OLD_HOST, since=since)
    deadline = time.monotonic() + WAIT
    while _compute_rows(dep)[OLD_HOST][0] != NEW_SERVICE_VERSION:
        assert time.monotonic() < deadline, _compute_rows(dep)
        time.sleep(0.5)
    upgraded_at = time.monotonic()
    assert _compute_rows(dep)[OLD_HOST] == (NEW_SERVICE_VERSION, NEW_COMPUTE_RPC)
    listed = _manage_service_list(dep)
    assert listed[("volattach-compute", OLD_HOST)] == ("up", NEW_SERVICE_VERSION)
    # The conductor's compute RPC cap (1.1 while compute-old was old) is
    # cached for 10 s: let it expire before the read-only attach.
    time.sleep(max(0.0, CAP_TTL_MARGIN - (time.monotonic() - upgraded_at)))
    _attach(compute, volumes, server_old, ro_old, "ro")
    assert _bdm_modes(dep, ro_old) == [(server_old, "ro")]
    assert _server_volume_ids(compute, server_old) == sorted([rw_old, ro_old])
    # The earlier attachments of the server survived the restart.
    status, body, _ = compute.show_volume_attachment(
        server_old, rw_old, microversion=RO_MICROVERSION)
    assert status == 200 and body["volumeAttachment"]["attach_mode"] == "rw"

    # No other daemon was restarted (or died).
    assert _pids(dep, others) == pids_before
    for name in others:
        assert dep.processes[name].poll() is None, name
