"""A multiattach volume is a ``<shareable/>`` disk in every guest that has
it (libvirt then lets QEMU share the image: ``share-rw``), a single-attach
one is not; a swap onto a multiattach volume (a retype) hands the
compute a connection that says so (the file backend's NBD exports here; rbd in
test_rbd.py).

Uses the guest tier's two shared guests."""
import json
import sqlite3
import subprocess
import uuid
import xml.etree.ElementTree as ET

from tests.guest.test_data_path import _attach, _detach, _volume
from tests.guest.test_swap import _retype, _wait_migrated


def _live_disk(guest, volume_id):
    """The <disk> of ``volume_id`` in the guest's live libvirt XML."""
    root = ET.fromstring(subprocess.run(
        ["virsh", "-c", "qemu:///system", "dumpxml",
         "volattach-%s" % guest.id],
        check=True, capture_output=True, text=True).stdout)
    for disk in root.findall("./devices/disk"):
        if disk.findtext("serial") == volume_id:
            return disk
    raise AssertionError("no disk of %s in %s" % (volume_id, guest.id))


def _multiattach_type(volumes):
    code, body, _ = volumes.create_volume_type(
        "shareable-%s" % uuid.uuid4().hex[:6], {"multiattach": "<is> True"})
    assert code == 200, (code, body)
    return body["volume_type"]["name"]


def _record_connection(deployment, server_id, volume_id):
    """The connection_info the conductor saved in the server's record."""
    db = sqlite3.connect("file:%s/volattach.sqlite?mode=ro"
                         % deployment.state, uri=True)
    try:
        (info,) = db.execute(
            "SELECT connection_info FROM block_device_mappings WHERE "
            "instance_uuid = ? AND volume_id = ?",
            (server_id, volume_id)).fetchone()
    finally:
        db.close()
    return json.loads(info)


def test_both_guests_of_a_multiattach_volume_share_it(api, volumes, guests):
    a, b = guests
    shared = _volume(volumes, volume_type=_multiattach_type(volumes))
    single = _volume(volumes)
    _attach(api, volumes, a, shared, "rw")
    _attach(api, volumes, b, shared, "ro")
    _attach(api, volumes, a, single)
    try:
        disk_a, disk_b = _live_disk(a, shared), _live_disk(b, shared)
        assert disk_a.find("shareable") is not None
        assert disk_b.find("shareable") is not None
        assert disk_a.find("readonly") is None
        assert disk_b.find("readonly") is not None
        assert disk_a.find("source").get("protocol") == "nbd"
        assert _live_disk(a, single).find("shareable") is None
    finally:
        _detach(api, a, single)
        _detach(api, b, shared)
        _detach(api, a, shared)
    volumes.wait_for_volume_status(shared, "available")


def test_a_swap_onto_a_multiattach_volume_carries_the_flag(
        api, volumes, guests, deployment):
    """A retype between two multiattach types (the way a swap happens:
    the volume service asks the compute API): the compute gets the new
    volume's connection with the flag, and the record keeps it for the
    next reconnect."""
    a, _ = guests
    volume_id = _volume(volumes, volume_type=_multiattach_type(volumes))
    _attach(api, volumes, a, volume_id, "rw")
    before = _record_connection(deployment, a.id, volume_id)
    assert before["multiattach"] is True
    _retype(volumes, volume_id, _multiattach_type(volumes))
    assert _wait_migrated(volumes, volume_id)["migration_status"] == "success"
    after = _record_connection(deployment, a.id, volume_id)
    assert after["multiattach"] is True
    assert after["driver_volume_type"] == "nbd"
    assert after["name"] != before["name"]      # the new volume's export
    assert _live_disk(a, volume_id).find("shareable") is not None
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
