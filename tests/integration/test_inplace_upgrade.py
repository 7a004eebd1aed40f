"""In-place upgrade of a state directory, tested for real.

The all-in-one (``volattach-all``) of the release named in
``ROLLING_UPGRADE_BASE`` (installed in its own virtualenv, the cached one of
test_rolling_upgrade.py) builds state through its API: two servers on two
computes, read/write attachments, a multiattach volume attached to both
servers, and an attachment made and detached again.  That release has no
read-only attachments (they came with compute API 2.105, after it), so
every attachment it makes is "rw"; after the upgrade the test makes a
read-only one with the current release.

Then, on the same configuration and state (SQLite files in ``state_path``,
or two fresh PostgreSQL databases on the server of VOLATTACH_TEST_PG_URL):

1. the old all-in-one stops; every row of every table of both databases is
   dumped;
2. the current ``volattach-manage db sync`` upgrades both databases;
3. every row dumped is still there, column by column for the columns that
   existed before, and the columns added since hold their defaults;
4. the current ``volattach-all`` starts on that state: its API lists the
   servers and their attachments, the volume service the volumes'
   attachments; a multiattach volume is detached from one server (the
   other keeps it), a read/write volume is detached, and a new volume
   attaches read-only.

On SQLite, before step 2, the current ``volattach-all`` also starts on a
copy of the old state directory that no db sync ran on (it migrates as it
starts, the way the issue met it) and lists the servers and attachments.

On SQLite, step 2 failed with "FOREIGN KEY constraint failed" before the
migration runner turned foreign keys off around the migrations
(``db/core/migration.py``).
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from tests import utils
from tests.integration import conftest as harness
from tests.integration import test_rolling_upgrade as rolling
from tests.integration.client import ComputeClient, VolumeClient

# The first test of a fresh clone builds the base's virtualenv (pip).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

WAIT = 60
STOP_TIMEOUT = 30
OLD_MICROVERSION = "2.60"
RO_MICROVERSION = rolling.RO_MICROVERSION
COMPUTE_HOSTS = ("compute1", "compute2")
# the alembic revision tables: the upgrade changes them, by design
VERSION_TABLES = ("alembic_version", "volume_alembic_version")


@pytest.fixture(scope="module")
def old_bin(tmp_path_factory):
    """The bin dir of the rolling-upgrade base's virtualenv (built once,
    cached under .ci-state)."""
    return rolling._build_old_venv(rolling._base_sha(),
                                   tmp_path_factory.mktemp("inplace-base"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_urls(request, tmp_path):
    """(compute URL, volume URL) of the backend: files in the state
    directory, or two fresh PostgreSQL databases (dropped afterwards)."""
    if request.param == "sqlite":
        state = tmp_path / "state"
        yield (f"sqlite:///{state}/volattach.sqlite",
               f"sqlite:///{state}/volume.sqlite")
        return
    pg_url = utils.require_env(utils.PG_URL_ENV, "the PostgreSQL upgrade")
    databases = harness.PostgresDatabases(pg_url)
    run_id = (f"{harness.NAME_PREFIX}{int(time.time())}_"
              f"{uuid.uuid4().hex[:8]}")
    try:
        yield (databases.create(run_id + "_nova"),
               databases.create(run_id + "_volume"))
    finally:
        if os.environ.get("VOLATTACH_TEST_KEEP") != "1":
            databases.drop_all()


class AllInOne:
    """One ``volattach-all`` process on ``conf_path`` (from ``bin_dir``),
    logging to ``<workdir>/<name>.log``."""

    def __init__(self, workdir, conf_path, bin_dir, name, api_url, volume_url):
        self.workdir = pathlib.Path(workdir)
        self.conf_path = conf_path
        self.script = str(pathlib.Path(bin_dir) / "volattach-all")
        self.name = name
        self.log_path = self.workdir / f"{name}.log"
        self.api_url = api_url
        self.volume_url = volume_url
        self.proc = None

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("PYTHONPATH", None)   # each installation imports its own code
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.script, "--config-file", self.conf_path],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=str(self.workdir), start_new_session=True)
        self._wait_ready()

    def _failure(self, what):
        return (f"{self.name}: {what}; tail of {self.log_path}:\n"
                + harness._tail(self.log_path))

    def _ready(self):
        try:
            if requests.get(self.volume_url + "/", timeout=5).status_code >= 500:
                return False
            resp = requests.get(f"{self.api_url}/v2.1/os-services",
                                headers={"X-Auth-Token": harness.ADMIN_TOKEN},
                                timeout=5)
        except (requests.ConnectionError, requests.Timeout):
            return False
        if resp.status_code != 200:
            return False
        up = {s["host"] for s in resp.json()["services"]
              if s["binary"] == "volattach-compute" and s["state"] == "up"}
        return up >= set(COMPUTE_HOSTS)

    def _wait_ready(self):
        deadline = time.monotonic() + WAIT
        while not self._ready():
            if self.proc.poll() is not None:
                pytest.fail(self._failure(
                    f"exited with status {self.proc.returncode}"),
                    pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(self._failure(f"not ready after {WAIT}s"),
                            pytrace=False)
            time.sleep(0.3)

    def stop(self):
        """SIGTERM, SIGKILL of its process group after STOP_TIMEOUT."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _write_conf(workdir, compute_url, volume_url):
    """The one configuration both releases run on; returns (path, API
    URL, volume service URL)."""
    api_port, volume_port = harness._free_ports(2)
    api_url = f"http://127.0.0.1:{api_port}"
    volume_service_url = f"http://127.0.0.1:{volume_port}"
    path = workdir / "volattach.conf"
    harness._write_conf(path, {
        "DEFAULT": {"state_path": str(workdir / "state"), "debug": "true"},
        "database": {"connection": compute_url},
        "api": {"listen": "127.0.0.1", "port": api_port,
                "auth_strategy": "noauth"},
        "volume": {"listen": "127.0.0.1", "port": volume_port,
                   "connection": volume_url, "auth_strategy": "noauth",
                   "compute_endpoint": f"{api_url}/v2.1"},
        "cinder": {"endpoint": f"{volume_service_url}/v3",
                   "auth_strategy": "noauth"},
    })
    return str(path), api_url, volume_service_url


# -- building the old state ---------------------------------------------------

def _server_on(compute, name, host):
    status, body, _ = compute.create_server(
        name=name, availability_zone=f"nova:{host}")
    assert status == 202, (status, body)
    server = compute.wait_for_server_status(body["server"]["id"], "ACTIVE",
                                            WAIT)
    assert server["OS-EXT-SRV-ATTR:host"] == host, server
    return server["id"]


def _volume(volumes, name, **fields):
    status, body, _ = volumes.create_volume(size=1, name=name, **fields)
    assert status == 202, (status, body)
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available", WAIT)
    return volume_id


def _attach_old(compute, volumes, server_id, volume_id):
    """A (synchronous, before 2.101) attach on the old release."""
    status, body, _ = compute.attach_volume(server_id, volume_id)
    assert status == 200, (status, body)
    volumes.wait_for_volume_status(volume_id, "in-use", WAIT)


def _build_old_state(compute, volumes):
    """Servers a (compute1) and b (compute2); volume -> [servers]."""
    a = _server_on(compute, "upgrade-a", "compute1")
    b = _server_on(compute, "upgrade-b", "compute2")
    status, body, _ = volumes.create_volume_type(
        "multiattach", extra_specs={"multiattach": "<is> True"})
    assert status == 200, (status, body)
    vols = {name: _volume(volumes, name)
            for name in ("rw-a1", "rw-a2", "rw-b", "was-attached")}
    vols["multi"] = _volume(volumes, "multi", volume_type="multiattach")
    for name, server in (("rw-a1", a), ("rw-a2", a), ("rw-b", b),
                         ("multi", a), ("multi", b), ("was-attached", b)):
        _attach_old(compute, volumes, server, vols[name])
    status, body, _ = compute.detach_volume(b, vols["was-attached"])
    assert status == 202, (status, body)
    volumes.wait_for_volume_status(vols["was-attached"], "available", WAIT)
    expected = {vols["rw-a1"]: [a], vols["rw-a2"]: [a], vols["rw-b"]: [b],
                vols["multi"]: [a, b], vols["was-attached"]: []}
    return a, b, vols, expected


# -- the rows ------------------------------------------------------------------

def _dump(url):
    """table -> (column names, {row key: {column: value}}) of every table
    but the alembic revision tables; the key is the primary key (the whole
    row where there is none)."""
    engine = sa.create_engine(url)
    try:
        metadata = sa.MetaData()
        metadata.reflect(engine)
        dump = {}
        with engine.connect() as conn:
            for name, table in metadata.tables.items():
                if name in VERSION_TABLES:
                    continue
                columns = [c.name for c in table.columns]
                key_columns = [c.name for c in table.primary_key.columns] \
                    or columns
                rows = {}
                for row in conn.execute(sa.select(table)).mappings():
                    rows[tuple(row[c] for c in key_columns)] = dict(row)
                dump[name] = (columns, rows)
        return dump
    finally:
        engine.dispose()


def _new_column_defaults(url, dump_before):
    """(table, column) -> the value the database gives a row that had no
    value for it: its server default evaluated there, or None."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        defaults = {}
        with engine.connect() as conn:
            for table, (columns, _) in dump_before.items():
                for info in inspector.get_columns(table):
                    if info["name"] in columns:
                        continue
                    default = info.get("default")
                    defaults[(table, info["name"])] = (
                        None if default is None else
                        conn.execute(sa.text(f"SELECT {default}")).scalar())
        return defaults
    finally:
        engine.dispose()


def _flavor_field(name):
    def value(row):
        flavor = row.get("flavor")
        if isinstance(flavor, str):
            flavor = json.loads(flavor or "{}")
        return int((flavor or {}).get(name) or 0)
    return value


# (table, column) -> the value a migration fills a new column with from the
# row's own data (0010: each server's size from its flavor, which the cores
# and ram quotas count), in place of a default
FILLED = {
    ("instances", "vcpus"): _flavor_field("vcpus"),
    ("instances", "memory_mb"): _flavor_field("memory_mb"),
}


def _assert_every_row_survived(label, url, before, after):
    defaults = _new_column_defaults(url, before)
    for table, (columns, rows) in before.items():
        assert table in after, f"{label}: table {table} is gone"
        new_columns, new_rows = after[table]
        assert sorted(new_rows) == sorted(rows), (
            f"{label}: rows of {table} before {sorted(rows)}, "
            f"after {sorted(new_rows)}")
        added = [c for c in new_columns if c not in columns]
        for key, row in rows.items():
            new = new_rows[key]
            for column in columns:
                assert new[column] == row[column], (
                    f"{label}: {table} {key} {column}: {row[column]!r} "
                    f"became {new[column]!r}")
            for column in added:
                if (table, column) in FILLED:
                    expected = FILLED[(table, column)](row)
                    assert new[column] == expected, (
                        f"{label}: {table} {key} new column {column} = "
                        f"{new[column]!r}, not {expected!r} from the row")
                    continue
                assert new[column] == defaults[(table, column)], (
                    f"{label}: {table} {key} new column {column} = "
                    f"{new[column]!r}, not its default "
                    f"{defaults[(table, column)]!r}")


def _count(dump, table):
    return len(dump[table][1])


# -- checks on the current release ------------------------------------------------

def _server_volumes(compute, server_id):
    status, body, _ = compute.list_volume_attachments(
        server_id, microversion=RO_MICROVERSION)
    assert status == 200, (status, body)
    return {a["volumeId"]: a for a in body["volumeAttachments"]}


def _volume_servers(volumes, volume_id):
    status, body, _ = volumes.show_volume(volume_id)
    assert status == 200, (status, body)
    return sorted(a["server_id"] for a in body["volume"]["attachments"])


def _check_current_api(compute, volumes, a, b, vols, expected):
    status, body, _ = compute.list_servers(detail=True)
    assert status == 200, (status, body)
    servers = {s["id"]: s for s in body["servers"]}
    assert set(servers) == {a, b}, servers
    assert {servers[a]["OS-EXT-SRV-ATTR:host"],
            servers[b]["OS-EXT-SRV-ATTR:host"]} == set(COMPUTE_HOSTS)
    assert all(s["status"] == "ACTIVE" for s in servers.values()), servers
    for server_id in (a, b):
        listed = _server_volumes(compute, server_id)
        assert sorted(listed) == sorted(
            v for v, on in expected.items() if server_id in on), listed
        # made before read-only attachments existed: read/write
        assert {x["attach_mode"] for x in listed.values()} == {"rw"}, listed
    for volume_id, on in expected.items():
        assert _volume_servers(volumes, volume_id) == sorted(on), volume_id
        _, body, _ = volumes.show_volume(volume_id)
        assert body["volume"]["status"] == ("in-use" if on else "available")

    # Detach the multiattach volume from one server: the other keeps it.
    status, body, _ = compute.detach_volume(a, vols["multi"])
    assert status == 202, (status, body)
    compute.wait_for_volume_attachment_gone(a, vols["multi"], WAIT)
    assert _volume_servers(volumes, vols["multi"]) == [b]
    assert vols["multi"] in _server_volumes(compute, b)
    # A read/write volume attached by the old release detaches.
    status, body, _ = compute.detach_volume(a, vols["rw-a1"])
    assert status == 202, (status, body)
    volumes.wait_for_volume_status(vols["rw-a1"], "available", WAIT)
    assert sorted(_server_volumes(compute, a)) == [vols["rw-a2"]]
    # The upgraded databases take what the old release could not write.
    rolling._attach(compute, volumes, b, _volume(volumes, "ro-b"), "ro")


def _start_current_on_a_copy(tmp_path, current_bin, a, b, expected):
    """The current volattach-all started on a copy of the old SQLite state
    directory, with no db sync before (it migrates as it starts): it comes
    up and lists the servers and their attachments."""
    workdir = tmp_path / "copy"
    shutil.copytree(tmp_path / "state", workdir / "state")
    conf_path, api_url, volume_service_url = _write_conf(
        workdir, f"sqlite:///{workdir}/state/volattach.sqlite",
        f"sqlite:///{workdir}/state/volume.sqlite")
    current = AllInOne(workdir, conf_path, current_bin, "current-all-copy",
                       api_url, volume_service_url)
    compute = ComputeClient(api_url)
    try:
        current.start()
        status, body, _ = compute.list_servers()
        assert status == 200, (status, body)
        assert sorted(s["id"] for s in body["servers"]) == sorted([a, b])
        for server_id in (a, b):
            assert sorted(_server_volumes(compute, server_id)) == sorted(
                v for v, on in expected.items() if server_id in on)
    finally:
        current.stop()
        compute.close()


# -- the test ------------------------------------------------------------------------

def test_inplace_upgrade_keeps_every_row(old_bin, database_urls, tmp_path):
    compute_url, volume_url = database_urls
    conf_path, api_url, volume_service_url = _write_conf(
        tmp_path, compute_url, volume_url)
    current_bin = pathlib.Path(sys.executable).parent

    old = AllInOne(tmp_path, conf_path, old_bin, "old-all", api_url,
                   volume_service_url)
    compute = ComputeClient(api_url, microversion=OLD_MICROVERSION)
    volumes = VolumeClient(volume_service_url)
    try:
        old.start()
        a, b, vols, expected = _build_old_state(compute, volumes)
    finally:
        old.stop()
    assert old.proc.returncode is not None

    before = {"compute": _dump(compute_url), "volume": _dump(volume_url)}
    # the state is what the test means it to be
    assert _count(before["compute"], "instances") == 2
    assert _count(before["volume"], "volume_attachments") == 5
    assert _count(before["volume"], "attachment_specs") > 0
    assert _count(before["compute"], "block_device_mappings") >= 7

    if compute_url.startswith("sqlite"):
        _start_current_on_a_copy(tmp_path, current_bin, a, b, expected)

    manage = subprocess.run(
        [str(current_bin / "volattach-manage"), "--config-file", conf_path,
         "db", "sync"], capture_output=True, text=True, timeout=300,
        cwd=str(tmp_path))
    assert manage.returncode == 0, manage.stdout + manage.stderr

    for name, url in (("compute", compute_url), ("volume", volume_url)):
        _assert_every_row_survived(name, url, before[name], _dump(url))

    current = AllInOne(tmp_path, conf_path, current_bin, "current-all",
                       api_url, volume_service_url)
    try:
        current.start()
        _check_current_api(compute, volumes, a, b, vols, expected)
        assert current.proc.poll() is None, current._failure("died")
    finally:
        current.stop()
        compute.close()
        volumes.close()
