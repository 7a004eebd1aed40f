"""The guest tier: volattach-all with the libvirt driver (TCG) and the file
volume backend, booting the test image of tools/build-test-image.sh.

Needs libvirt and QEMU (tools/start-libvirt.sh) and the volattach[libvirt]
extra.  Without them the tests skip, except under CI (``CI=true``), where
they fail.  The image is built once into ``VOLATTACH_TEST_IMAGE_DIR``
(default ``<repo>/.ci-state/images``).  Every test is marked ``guest``.

Guests are driven through their serial console: ``Guest.run`` types a
command on the console socket and reads its output and exit status back
from the console log, where the test image's init also prints its disks
(``VA-DISKS``) whenever they change.
"""
import contextlib
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from tests.integration import client as clients
from tests.integration import conftest as harness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_DISK_ITEM = re.compile(r"\b(vd[a-z]+):([^:\s]*):(\d+):([01])")
BOOT_TIMEOUT = float(os.environ.get("VOLATTACH_GUEST_BOOT_TIMEOUT", "180"))
WAIT = 120
ADMIN_TOKEN = "admin:admin:admin"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/tests/guest/" in str(item.fspath):
            item.add_marker(pytest.mark.guest)


def _unavailable(reason):
    if os.environ.get("CI") == "true":
        pytest.fail("guest tier cannot run under CI: %s" % reason)
    pytest.skip(reason)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def image_id():
    try:
        import libvirt  # noqa: F401
        import qemu.qmp  # noqa: F401
    except ImportError as e:
        _unavailable("volattach[libvirt] is not installed: %s" % e)
    if shutil.which("virsh") is None or subprocess.run(
            ["virsh", "-c", "qemu:///system", "version"],
            capture_output=True).returncode != 0:
        _unavailable("libvirt is not running (tools/start-libvirt.sh)")
    image_dir = os.environ.get("VOLATTACH_TEST_IMAGE_DIR",
                               os.path.join(REPO, ".ci-state", "images"))
    return image_dir, current_image(image_dir)


# The test image's generation the tier expects (tools/build-test-image.sh
# writes it beside the image): 2 prints its disks on the kernel's uevents,
# 3 does not print a list twice.
IMAGE_GENERATION = 3


def current_image(image_dir):
    """The id of a test image of ``IMAGE_GENERATION`` (or later) under
    ``image_dir``, built there when it has none."""
    for name in sorted(os.listdir(image_dir)) if os.path.isdir(image_dir) else ():
        try:
            with open(os.path.join(image_dir, name, "generation")) as f:
                generation = int(f.read().strip() or 0)
        except (OSError, ValueError):
            continue
        if (generation >= IMAGE_GENERATION
                and os.path.isfile(os.path.join(image_dir, name, "kernel"))):
            return name
    out = subprocess.run(
        [os.path.join(REPO, "tools", "build-test-image.sh"), image_dir],
        check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def qsd_pid(state_path):
    """The pid of the qemu-storage-daemon the volume service of
    ``state_path`` started (from its pid file)."""
    with open(os.path.join(state_path, "volumes", ".qsd", "qsd.pid")) as f:
        return int(f.read().strip())


def stop_storage_daemon(state_path):
    """The storage daemon outlives the volume service on purpose: stop the
    one of ``state_path``."""
    try:
        os.kill(qsd_pid(state_path), signal.SIGTERM)
    except (OSError, ValueError):
        pass


class Deployment:
    """volattach-all in a child process (so a test can kill -9 it)."""

    def __init__(self, tmp, image_dir):
        self.tmp = tmp
        self.state = os.path.join(tmp, "state")
        self.instances = os.path.join(self.state, "instances")
        self.api_port, self.volume_port = _free_port(), _free_port()
        self.export_port = _free_port()
        self.conf = os.path.join(tmp, "volattach.conf")
        with open(self.conf, "w") as f:
            f.write(f"""[DEFAULT]
state_path = {self.state}
[api]
port = {self.api_port}
[cinder]
endpoint = http://127.0.0.1:{self.volume_port}/v3
[volume]
port = {self.volume_port}
backend = file
backend_name = file
export_port = {self.export_port}
[compute]
virt_driver = libvirt
[libvirt]
virt_type = qemu
image_dir = {image_dir}
max_memory_mb = 256
[all]
compute_hosts = compute1
[quota]
instances = -1
cores = -1
ram = -1
""")
        self.proc = None
        self.api_url = f"http://127.0.0.1:{self.api_port}"
        self.volume_url = f"http://127.0.0.1:{self.volume_port}"

    def start(self):
        log = open(os.path.join(self.tmp, "volattach-all.log"), "ab")
        self.proc = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable), "volattach-all"),
             "--config-file", self.conf], stdout=log, stderr=log)
        api = clients.ComputeClient(self.api_url)
        deadline = time.monotonic() + 60
        while True:
            try:
                if api.request("GET", "/flavors")[0] == 200:
                    return
            except Exception:
                pass
            assert self.proc.poll() is None, "volattach-all exited"
            assert time.monotonic() < deadline, "volattach-all did not start"
            time.sleep(0.2)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def qsd_pid(self):
        return qsd_pid(self.state)

    def stop_storage_daemon(self):
        stop_storage_daemon(self.state)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="session")
def deployment(image_id, tmp_path_factory):
    image_dir, _ = image_id
    d = Deployment(str(tmp_path_factory.mktemp("guest")), image_dir)
    d.start()
    yield d
    api = clients.ComputeClient(d.api_url)
    for server in (api.list_servers()[1] or {}).get("servers", []):
        api.delete_server(server["id"])
    time.sleep(2)
    d.stop()
    d.stop_storage_daemon()


@pytest.fixture(scope="session")
def api(deployment):
    return clients.ComputeClient(deployment.api_url, microversion="2.105")


@pytest.fixture(scope="session")
def volumes(deployment):
    return clients.VolumeClient(deployment.volume_url)


def _command_output(text, echo):
    """What a command printed, from the console ``text`` that follows its
    sending: without the shell's echo of the command line (which ends in
    ``echo``), or, when the terminal folded that line, without the first
    line that is not blank."""
    at = text.find(echo)
    if at >= 0:
        end = text.find("\n", at)
        output = text[end + 1:] if end >= 0 else ""
    else:
        rest = text.lstrip("\r\n")
        output = rest.split("\n", 1)[1] if "\n" in rest else ""
    # the init's disk lists are printed when the kernel says, not by the
    # command
    return _DISKS_LINE.sub("", output)


_DISKS_LINE = re.compile(r"^VA-DISKS [^\r\n]*\r?\n", re.M)


class Guest:
    """A booted test guest, driven through its serial console."""

    _ids = itertools.count()

    def __init__(self, server_id, instances):
        self.id = server_id
        self.log = os.path.join(instances, server_id, "console.log")
        self.sock = os.path.join(instances, server_id, "console.sock")

    def text(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def wait_for(self, pattern, since=0, timeout=60):
        """The first match of regex ``pattern`` after offset ``since``."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            m = regex.search(self.text(), since)
            if m:
                return m
            if time.monotonic() > deadline:
                raise AssertionError("no %r on the console of %s in %ss; "
                                     "tail: %r" % (pattern, self.id, timeout,
                                                   self.text()[-1500:]))
            time.sleep(0.05)

    def run(self, command, timeout=60):
        """(exit status, output) of a shell command run in the guest."""
        n = next(self._ids)
        start = len(self.text())
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.sock)
            s.sendall(("%s; echo VA-END-%d-$?\n" % (command, n)).encode())
            # up to the end of the marker's line, so that the next command's
            # output does not start with this one's line end
            m = self.wait_for(r"VA-END-%d-(\d+)\r?\n" % n, start, timeout)
        return int(m.group(1)), _command_output(self.text()[start:m.start()],
                                                "echo VA-END-%d-$?" % n)

    def disks(self):
        """The last VA-DISKS line: {serial prefix: (dev, bytes, ro)}."""
        lines = re.findall(r"VA-DISKS [0-9.]+([^\r\n]*)", self.text())
        return {ser: (dev, int(size), ro) for dev, ser, size, ro
                in _DISK_ITEM.findall(lines[-1] if lines else "")}

    def wait_disk(self, volume_id, present=True, since=0, timeout=60,
                  interval=0.05):
        """Wait until the disk of ``volume_id`` is (or is no longer)
        listed after ``since``, reading the console every ``interval``
        seconds; returns its (dev, bytes, ro) or None."""
        serial = volume_id[:20]   # virtio-blk serials hold 20 bytes
        deadline = time.monotonic() + timeout
        while True:
            lines = re.findall(r"VA-DISKS [0-9.]+([^\r\n]*)",
                               self.text()[since:])
            if lines:
                # other console output may share the line: take the items
                listed = {ser: (dev, int(size), ro) for dev, ser, size, ro
                          in _DISK_ITEM.findall(lines[-1])}
                if (serial in listed) == present:
                    return listed.get(serial)
            if time.monotonic() > deadline:
                raise AssertionError(
                    "disk %s %s the guest %s in %ss; last: %r" % (
                        volume_id, "never appeared in" if present
                        else "never left", self.id, timeout,
                        lines[-1] if lines else None))
            time.sleep(interval)


def tear_down(deployment, api, volumes):
    """End a module's own deployment: delete its servers and the volumes
    it recorded in ``deployment.created`` if any (through ``volumes``, the
    volume service or a real Cinder), then stop its daemons, whatever
    failed before."""
    try:
        for server in (api.list_servers()[1] or {}).get("servers", []):
            api.delete_server(server["id"])
            api.wait_for_server_deleted(server["id"], timeout=WAIT)
        for volume_id in getattr(deployment, "created", ()):
            volumes.delete_volume(volume_id)
            volumes.wait_for_volume_deleted(volume_id)
    finally:
        deployment.stop()


def boot(api, deployment, image, names, **fields):
    """Create one server per name (all at once) and wait until each guest
    has booted; returns their Guests."""
    ids = []
    for name in names:
        code, body, _ = api.create_server(name=name, image_ref=image,
                                          flavor_ref="1", **fields)
        assert code == 202, (code, body)
        ids.append(body["server"]["id"])
    guests = []
    for server_id in ids:
        api.wait_for_server_status(server_id, "ACTIVE", timeout=120)
        guest = Guest(server_id, deployment.instances)
        ready = guest.wait_for("VA-READY", timeout=BOOT_TIMEOUT)
        # and the shell's prompt: a command typed before the shell reads
        # its terminal can lose its tail in busybox's line editor
        guest.wait_for(r"/ # ", since=ready.end(), timeout=BOOT_TIMEOUT)
        guests.append(guest)
    return guests


@pytest.fixture(scope="session")
def guests(api, deployment, image_id):
    """Two booted guests shared by the tests."""
    _, image = image_id
    return tuple(boot(api, deployment, image, ["guest-a", "guest-b"]))


def libvirt_uris():
    """(the first libvirt's URI as both daemons reach it, the second's):
    tools/start-libvirt-peer.sh starts the second when it is not running."""
    result = subprocess.run(
        [os.path.join(REPO, "tools", "start-libvirt-peer.sh")],
        capture_output=True, text=True)
    if result.returncode != 0:
        _unavailable("no second libvirt daemon: %s" % result.stderr.strip())
    main, peer = result.stdout.strip().splitlines()[-2:]
    return main, peer


class LibvirtHosts:
    """A deployment of ``libvirt_daemons``: its clients (admin), and each
    compute's libvirt URI and instance directory."""

    def __init__(self, dep, image, uris, instances):
        self.dep = dep
        self.image = image
        self.uris = uris
        self.instances = instances
        self.api = clients.ComputeClient(dep.api_url, token=ADMIN_TOKEN,
                                         microversion="2.105")
        self.volumes = clients.VolumeClient(dep.volume_url)

    def guest(self, server_id, host):
        return Guest(server_id, self.instances[host])

    def domains(self, host):
        """The uuids of the domains defined in ``host``'s libvirt."""
        out = subprocess.run(["virsh", "-c", self.uris[host], "list", "--all",
                              "--uuid"], capture_output=True, text=True,
                             check=True).stdout
        return set(out.split())


@contextlib.contextmanager
def libvirt_daemons(work, image_dir, image, libvirts=("main", "peer"),
                    volume_overrides=None):
    """The real daemons over RabbitMQ and PostgreSQL (the integration
    harness's ``running_deployment`` in ``work``) with the libvirt driver
    and the file volume backend, compute<i> on the libvirt named by
    ``libvirts[i-1]``: "main" (tools/start-libvirt.sh) or "peer"
    (tools/start-libvirt-peer.sh), each with an instance directory of its
    own.  ``volume_overrides``: the volume service's options instead of
    the file backend's ({group: {option: value}}).  Yields a LibvirtHosts;
    deletes its servers and stops its storage daemon at the end."""
    main, peer = libvirt_uris()
    uris = {"compute%d" % (i + 1): {"main": main, "peer": peer}[which]
            for i, which in enumerate(libvirts)}
    # a console socket's path must fit in 108 bytes: not under pytest's tmp
    short = tempfile.mkdtemp(prefix="va-lv-")
    instances = {host: os.path.join(short, host) for host in uris}
    common = {
        "compute": {"virt_driver": "libvirt"},
        "libvirt": {"virt_type": "qemu", "image_dir": image_dir,
                    "max_memory_mb": 256,
                    "live_migration_inbound_addr": "127.0.0.1"},
    }

    def prepare(dep):
        for name in list(dep.daemons):
            if dep.daemons[name][0] == "volattach-compute":
                dep.remove_daemon(name)
        for name, script in (("conductor", "volattach-conductor"),
                             ("api", "volattach-api")):
            dep.add_daemon(name, script, overrides=common)
        dep.add_daemon("volume", "volattach-volume", overrides=(
            volume_overrides or {
                "volume": {"backend": "file", "backend_name": "file",
                           "export_port": _free_port()}}))
        for host, uri in uris.items():
            dep.add_daemon(host, "volattach-compute", overrides={
                "compute": {"host": host, "virt_driver": "libvirt"},
                "libvirt": dict(common["libvirt"], connection_uri=uri,
                                instances_path=instances[host])})
        # the API starts last, as in the harness
        dep.daemons["api"] = dep.daemons.pop("api")

    try:
        with harness.running_deployment(work, prepare=prepare) as dep:
            hosts = LibvirtHosts(dep, image, uris, instances)
            try:
                yield hosts
            finally:
                for server in (hosts.api.list_servers()[1] or {}).get(
                        "servers", []):
                    hosts.api.delete_server(server["id"])
                    hosts.api.wait_for_server_deleted(server["id"],
                                                      timeout=WAIT)
                stop_storage_daemon(os.path.join(work, "state"))
    finally:
        shutil.rmtree(short, ignore_errors=True)
