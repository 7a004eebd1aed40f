"""A hard reboot reaches a volume at the address the volume service hands
out now, not the one of the attach (compute RPC 1.10; Nova needed
``nova-manage volume_attachment refresh``): the NBD export listens on every
address and is advertised at ``[DEFAULT] my_ip``; volattach-all is
restarted with another my_ip (127.0.0.2, loopback too), and after a HARD
reboot the guest's disk comes from there with the data it had; the same
for a stop, a restart at 127.0.0.3 and a start."""
import subprocess
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.guest import test_data_path as data_path


class ReaddressedDeployment(guest_env.Deployment):
    """The guest tier's volattach-all exporting on 0.0.0.0, advertised at
    ``my_ip`` (rewritten by ``readdress`` before a restart)."""

    def __init__(self, tmp, image_dir):
        super().__init__(tmp, image_dir)
        self.readdress("127.0.0.1")

    def readdress(self, my_ip):
        with open(self.conf) as f:
            lines = [line for line in f.read().splitlines()
                     if not line.startswith(("my_ip", "export_host",
                                             "allow_insecure_nbd"))]
        text = "\n".join(lines) + "\n"
        text = text.replace("[DEFAULT]\n", "[DEFAULT]\nmy_ip = %s\n" % my_ip,
                            1)
        text = text.replace("[volume]\n", "[volume]\nexport_host = 0.0.0.0\n"
                            "allow_insecure_nbd = true\n", 1)
        with open(self.conf, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def readdressed(image_id, tmp_path_factory):
    image_dir, image = image_id
    dep = ReaddressedDeployment(
        str(tmp_path_factory.mktemp("gra")), image_dir)
    dep.start()
    api = guest_env.clients.ComputeClient(dep.api_url, microversion="2.105")
    volumes = guest_env.clients.VolumeClient(dep.volume_url)
    try:
        guest, = guest_env.boot(api, dep, image, ["guest-readdress"])
        yield dep, api, volumes, guest
    finally:
        try:
            guest_env.tear_down(dep, api, volumes)
        finally:
            dep.stop_storage_daemon()


def _nbd_hosts(guest):
    xml = subprocess.run(["virsh", "-c", "qemu:///system", "dumpxml",
                          "volattach-%s" % guest.id], capture_output=True,
                         text=True, check=True).stdout
    return [line.strip() for line in xml.splitlines()
            if "<host name=" in line]


def _restart_at(dep, my_ip):
    dep.stop()
    dep.readdress(my_ip)
    dep.start()


def _action(api, guest, body):
    code, answer, _ = api.request("POST", "/servers/%s/action" % guest.id,
                                  body)
    assert code == 202, (code, answer)


def _check_reached_at(guest, volumes, volume_id, since, my_ip, marker):
    guest.wait_for("VA-READY", since=since, timeout=guest_env.BOOT_TIMEOUT)
    dev, _, _ = guest.wait_disk(volume_id, since=since, timeout=60)
    hosts = _nbd_hosts(guest)
    assert hosts and all(my_ip in h for h in hosts), hosts
    assert marker in data_path._read(guest, dev, len(marker))
    code, body, _ = volumes.show_volume(volume_id)
    assert body["volume"]["status"] == "in-use", body


def test_hard_reboot_and_start_reach_the_volume_at_its_new_address(readdressed):
    dep, api, volumes, guest = readdressed
    volume_id = data_path._volume(volumes)
    dev, _, _ = data_path._attach(api, volumes, guest, volume_id, "rw")
    assert [h for h in _nbd_hosts(guest) if "127.0.0.1" in h], \
        _nbd_hosts(guest)
    marker = "readdress-%s" % uuid.uuid4().hex[:8]
    data_path._write(guest, dev, marker)

    _restart_at(dep, "127.0.0.2")
    since = len(guest.text())
    _action(api, guest, {"reboot": {"type": "HARD"}})
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    _check_reached_at(guest, volumes, volume_id, since, "127.0.0.2", marker)

    # a start reconnects the same way
    _action(api, guest, {"os-stop": None})
    api.wait_for_server_status(guest.id, "SHUTOFF", timeout=120)
    _restart_at(dep, "127.0.0.3")
    since = len(guest.text())
    _action(api, guest, {"os-start": None})
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    _check_reached_at(guest, volumes, volume_id, since, "127.0.0.3", marker)
