"""python-openstackclient (the real ``openstack`` CLI) against volattach.

The in-process deployment of ``conftest.py`` serves the compute API and the
volume service on loopback ports; these tests run real ``openstack``
commands as subprocesses against it with the ``clouds.yaml`` the README
shows (no Keystone: ``auth_type: admin_token`` sends the noauth token as
``X-Auth-Token``, per-service endpoint overrides say where each API is).
They cover what the issue asks for: a read-only attach through openstackclient
(``openstack volume set --read-only``, then ``openstack server add volume``,
at openstackclient's default microversion and at 2.105), shown read-only at
2.105 and by the volume service, detach, and the list/show commands.

openstackclient comes from PyPI at test time into a virtualenv of its own
(``.ci-state/osc-venv``, or ``$VOLATTACH_OSC_VENV``), never into the
project's ``.venv``: about 20 s the first time, then a stamp file makes it a
no-op.  When it cannot be installed (no package index) the tests skip, or
fail under CI (``CI=true``).
"""
import contextlib
import fcntl
import json
import os
import subprocess
import sys

import pytest

from tests.functional.test_attach_detach import _attachment_rows

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.environ.get("VOLATTACH_OSC_VENV") or os.path.join(REPO, ".ci-state", "osc-venv")
# Pinned: these tests check what one known openstackclient sends and reads.
REQUIREMENTS = ("python-openstackclient==10.5.0", "openstacksdk==4.22.0",
                "keystoneauth1==5.18.1")
STAMP = os.path.join(VENV, ".volattach-osc-stamp")
INSTALL_TIMEOUT = 600
COMMAND_TIMEOUT = 120
TOKEN = "alice:demo"
PROJECT = "demo"

CLOUDS_YAML = """\
clouds:
  volattach:
    # No Keystone: a fixed token (volattach's noauth <user>:<project>) sent
    # as X-Auth-Token, and the endpoint of each service given explicitly.
    auth_type: admin_token
    auth:
      token: {token}
      endpoint: {api}/v2.1
    compute_endpoint_override: {api}/v2.1
    block_storage_endpoint_override: {volume}/v3/{project}
    # openstackclient's list commands build an identity v3 client up front
    # (used only for --project/--user); its version discovery is satisfied
    # by the volume service's /v3 version document.
    identity_api_version: "3"
    identity_endpoint_override: {volume}/v3
"""


def _in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(message):
    if _in_ci():
        pytest.fail("CI: python-openstackclient is needed: %s" % message, pytrace=False)
    pytest.skip("python-openstackclient unavailable: %s" % message)


@contextlib.contextmanager
def _install_lock():
    """One installer at a time (parallel test runs share the venv)."""
    os.makedirs(os.path.dirname(VENV), exist_ok=True)
    with open(VENV + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _installed(openstack):
    want = " ".join(REQUIREMENTS)
    try:
        with open(STAMP) as f:
            stamped = f.read().strip()
    except OSError:
        return False
    return stamped == want and os.access(openstack, os.X_OK)


def install_openstackclient():
    """Create the venv and pip install openstackclient (once); return the
    path of its ``openstack``, or None with the reason."""
    openstack = os.path.join(VENV, "bin", "openstack")
    with _install_lock():
        if _installed(openstack):
            return openstack, None
        python = os.path.join(VENV, "bin", "python")
        log_path = os.path.join(VENV, "pip-install.log")
        try:
            if not os.access(python, os.X_OK):
                subprocess.run([sys.executable, "-m", "venv", VENV], check=True,
                               capture_output=True, text=True, timeout=120)
            with open(log_path, "w") as log:
                proc = subprocess.run(
                    [python, "-m", "pip", "install", "-q",
                     "--disable-pip-version-check"] + list(REQUIREMENTS),
                    stdout=log, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            return None, "'%s -m venv %s' failed: %s" % (sys.executable, VENV, exc.stderr)
        except subprocess.TimeoutExpired:
            return None, "installing %s took over %d s" % (" ".join(REQUIREMENTS),
                                                           INSTALL_TIMEOUT)
        if proc.returncode != 0:
            with open(log_path, errors="replace") as log:
                tail = log.read()[-3000:]
            return None, "pip install %s failed (exit %d, see %s):\n%s" % (
                " ".join(REQUIREMENTS), proc.returncode, log_path, tail)
        if not os.access(openstack, os.X_OK):
            return None, "pip installed no %s" % openstack
        with open(STAMP, "w") as f:
            f.write(" ".join(REQUIREMENTS) + "\n")
        return openstack, None


class OpenStackCLI:
    """Runs ``openstack`` with the volattach cloud of a clouds.yaml."""

    def __init__(self, executable, clouds_yaml):
        self.executable = executable
        # Nothing of the caller's OpenStack settings or Python paths.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("OS_")
                    and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        self.env["OS_CLIENT_CONFIG_FILE"] = clouds_yaml
        self.env["OS_CLOUD"] = "volattach"

    def run(self, *args, expect_rc=0):
        """Run one command; return its stdout (parsed when ``-f json``), or
        its stderr when it is expected to fail."""
        argv = [self.executable] + [str(a) for a in args]
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT)
        assert proc.returncode == expect_rc, (
            "%s: exit %d (wanted %d)\nstdout:\n%s\nstderr:\n%s" % (
                " ".join(argv[1:]), proc.returncode, expect_rc,
                proc.stdout[-3000:], proc.stderr[-3000:]))
        if expect_rc != 0:
            return proc.stderr
        if "-f" in args and args[args.index("-f") + 1] == "json":
            return json.loads(proc.stdout)
        return proc.stdout


@pytest.fixture(scope="module")
def osc(request, tmp_path_factory):
    openstack, reason = install_openstackclient()
    if openstack is None:
        _unavailable(reason)
    deployment = request.getfixturevalue("deployment")  # only once installed
    clouds_yaml = tmp_path_factory.mktemp("osc") / "clouds.yaml"
    clouds_yaml.write_text(CLOUDS_YAML.format(
        token=TOKEN, api=deployment.api_url, volume=deployment.volume_url,
        project=PROJECT))
    return OpenStackCLI(openstack, str(clouds_yaml))


def _osc_volume(osc, volumes, name, read_only=False, bootable=False):
    """``openstack volume create`` (and ``volume set --read-only`` /
    ``--bootable``: a blank volume is not bootable)."""
    created = osc.run("volume", "create", "--size", "1", name, "-f", "json")
    assert created["name"] == name and created["size"] == 1, created
    volumes.wait_for_volume_status(created["id"], "available")
    if read_only:
        assert osc.run("volume", "set", "--read-only", name) == ""
    if bootable:
        assert osc.run("volume", "set", "--bootable", name) == ""
    return created["id"]


def _osc_server(osc, api, volumes, name):
    """``openstack server create`` booting from a volume (there is no image
    service for ``--image`` to look the image up in; see the README)."""
    boot = _osc_volume(osc, volumes, name + "-boot", bootable=True)
    server = osc.run("server", "create", "--flavor", "1", "--volume", boot,
                     "--no-network", name, "-f", "json")
    assert server["name"] == name, server
    api.wait_for_server_status(server["id"], "ACTIVE")
    return server["id"], boot


def _modes(api, server_id):
    """volumeId -> attach_mode, from the compute API at 2.105."""
    status, body, _ = api.list_volume_attachments(server_id, microversion="2.105")
    assert status == 200, body
    return {a["volumeId"]: a["attach_mode"] for a in body["volumeAttachments"]}


def _volume_service_attachment(volumes, volume_id):
    [row] = _attachment_rows(volumes, volume_id)
    status, body, _ = volumes.request(
        "GET", volumes._path("/attachments/%s" % row["id"]))
    assert status == 200, body
    return body["attachment"]


@pytest.mark.timeout(900)  # may install openstackclient first (about 20 s)
def test_read_only_attach_with_openstackclient(osc, api, volumes):
    ro_vol = _osc_volume(osc, volumes, "ro-vol", read_only=True)
    server_id, boot = _osc_server(osc, api, volumes, "s1")

    # openstackclient's default compute microversion (synchronous attach:
    # the answer carries the device)
    added = osc.run("server", "add", "volume", "s1", "ro-vol", "-f", "json")
    assert added["Volume ID"] == ro_vol and added["Server ID"] == server_id, added
    assert added["Device"] == "/dev/vdb", added

    listed = {row["Volume ID"]: row
              for row in osc.run("server", "volume", "list", "s1", "-f", "json")}
    assert set(listed) == {boot, ro_vol}, listed
    assert listed[ro_vol]["Device"] == "/dev/vdb"
    assert listed[boot]["Device"] == "/dev/vda"
    attachment_id = listed[ro_vol]["Attachment ID"]
    assert attachment_id, listed

    shown = osc.run("volume", "show", "ro-vol", "-f", "json")
    assert shown["status"] == "in-use", shown
    assert [(a["server_id"], a["device"], a["attachment_id"])
            for a in shown["attachments"]] == [(server_id, "/dev/vdb", attachment_id)]

    # read-only: at 2.105, in the volume service, and through openstackclient
    assert _modes(api, server_id) == {ro_vol: "ro", boot: "rw"}
    attachment = _volume_service_attachment(volumes, ro_vol)
    assert attachment["id"] == attachment_id
    assert attachment["attach_mode"] == "ro"
    assert attachment["connection_info"]["access_mode"] == "ro"
    osc_attachment = osc.run("--os-volume-api-version", "3.27", "volume",
                             "attachment", "show", attachment_id, "-f", "json")
    assert osc_attachment["Attach Mode"] == "ro", osc_attachment
    assert osc_attachment["Status"] == "attached", osc_attachment

    # the list and show commands
    servers = {s["ID"]: s for s in osc.run("server", "list", "-f", "json")}
    assert servers[server_id]["Status"] == "ACTIVE", servers
    assert servers[server_id]["Name"] == "s1"
    osc.run("server", "list", "--long")
    server = osc.run("server", "show", "s1", "-f", "json")
    assert server["id"] == server_id and server["status"] == "ACTIVE", server
    assert sorted(v["id"] for v in server["volumes_attached"]) == sorted([boot, ro_vol])
    vols = {v["ID"]: v for v in osc.run("volume", "list", "-f", "json")}
    assert vols[ro_vol]["Status"] == "in-use", vols
    assert vols[boot]["Status"] == "in-use", vols
    osc.run("volume", "list", "--long")

    # detach
    assert osc.run("server", "remove", "volume", "s1", "ro-vol") == ""
    volumes.wait_for_volume_status(ro_vol, "available")
    api.wait_for_volume_attachment_gone(server_id, ro_vol)
    shown = osc.run("volume", "show", "ro-vol", "-f", "json")
    assert shown["status"] == "available" and shown["attachments"] == [], shown
    assert [row["Volume ID"] for row in
            osc.run("server", "volume", "list", "s1", "-f", "json")] == [boot]
    assert _attachment_rows(volumes, ro_vol) == []

    # delete: the boot volume is released, then everything deletes
    assert osc.run("server", "delete", "s1") == ""
    api.wait_for_server_deleted(server_id)
    volumes.wait_for_volume_status(boot, "available")
    assert osc.run("volume", "delete", "ro-vol", boot) == ""
    volumes.wait_for_volume_deleted(ro_vol)
    volumes.wait_for_volume_deleted(boot)


@pytest.mark.timeout(900)
def test_read_only_attach_at_2_105_with_openstackclient(osc, api, volumes):
    """openstackclient at volattach's 2.105: the attach is asynchronous (202,
    no body) and the read-only volume still attaches read-only; a plain
    volume next to it attaches read-write."""
    ro_vol = _osc_volume(osc, volumes, "ro-vol-2105", read_only=True)
    rw_vol = _osc_volume(osc, volumes, "rw-vol-2105")
    server_id, boot = _osc_server(osc, api, volumes, "s2")

    for name, volume_id in (("ro-vol-2105", ro_vol), ("rw-vol-2105", rw_vol)):
        added = osc.run("--os-compute-api-version", "2.105", "server", "add",
                        "volume", "s2", name, "-f", "json")
        # 202 without a body: openstackclient shows what it asked for
        assert added["Volume ID"] == volume_id and added["Device"] is None, added
        volumes.wait_for_volume_status(volume_id, "in-use")

    assert _modes(api, server_id) == {ro_vol: "ro", rw_vol: "rw", boot: "rw"}
    assert _volume_service_attachment(volumes, ro_vol)["attach_mode"] == "ro"
    assert _volume_service_attachment(volumes, rw_vol)["attach_mode"] == "rw"
    listed = osc.run("--os-compute-api-version", "2.105", "server", "volume",
                     "list", "s2", "-f", "json")
    assert sorted(row["Device"] for row in listed) == ["/dev/vda", "/dev/vdb", "/dev/vdc"]

    osc.run("--os-compute-api-version", "2.105", "server", "remove", "volume",
            "s2", "ro-vol-2105")
    volumes.wait_for_volume_status(ro_vol, "available")
    api.wait_for_volume_attachment_gone(server_id, ro_vol)
    assert _modes(api, server_id) == {rw_vol: "rw", boot: "rw"}


def test_no_token_is_refused(osc, deployment, tmp_path):
    """What ``auth_type: none`` would do: openstackclient sends no
    X-Auth-Token and volattach's noauth answers 401 (hence admin_token)."""
    clouds_yaml = tmp_path / "clouds.yaml"
    clouds_yaml.write_text(
        "clouds:\n  volattach:\n    auth_type: none\n    auth:\n"
        "      endpoint: %s/v2.1\n    compute_endpoint_override: %s/v2.1\n"
        % (deployment.api_url, deployment.api_url))
    cli = OpenStackCLI(osc.executable, str(clouds_yaml))
    stderr = cli.run("flavor", "show", "1", expect_rc=1)
    assert "401" in stderr, stderr
