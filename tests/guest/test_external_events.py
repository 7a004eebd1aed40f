"""A real guest sees its Ceph RBD volume grow through volume-extended
(POST /os-server-external-events): the image is grown, the event posted,
the compute calls virDomainBlockResize and the guest's
``/sys/block/vdX/size`` says the new size, without a detach or a reboot.

A read-only attachment does not grow: libvirt refuses to resize a
read-only disk ("can't resize empty or readonly disk", checked here with
``virsh blockresize``) and so does QEMU's block_resize on a read-only node
("Image is read-only", QEMU 7.2), so that server's
``compute_extend_volume`` event fails and says why.

The first test grows the image itself (``rbd resize``) and the volume's
record (SQL on the volume service's database), as an extend leaves them,
and posts the event: the compute side is what is under test.  The last
one runs the whole contract: os-extend at 3.42 on the in-use volume, the
volume service's event, the guest's new size.  Needs the guest tier and a
running Ceph (tools/start-ceph.sh).
"""
import os
import sqlite3
import subprocess

from tests.guest import conftest as guest_env
from tests.guest.test_rbd import (POOL, _attach, _live_disk, _volume,
                                  rbd_api, rbd_deployment, rbd_volumes)
from tests.integration import client as clients

__all__ = ["rbd_api", "rbd_deployment", "rbd_volumes"]   # fixtures
GiB = 1024 ** 3


def _grow(deployment, volume_id, gib):
    """What an extend leaves: the image and the record at ``gib`` GiB."""
    subprocess.run(["rbd", "resize", "--size", "%dG" % gib,
                    "%s/volume-%s" % (POOL, volume_id)], check=True,
                   capture_output=True, timeout=60)
    with sqlite3.connect(os.path.join(deployment.state,
                                      "volume.sqlite")) as db:
        assert db.execute("UPDATE volumes SET size = ? WHERE id = ?",
                          (gib, volume_id)).rowcount == 1


def _size_in_guest(guest, dev):
    status, out = guest.run("cat /sys/block/%s/size" % dev)
    assert status == 0, out
    return int(out.split()[0]) * 512


def _extended(admin, server_id, volume_id):
    """Post volume-extended; the compute's event of that request's
    extend_volume action, once finished."""
    status, body, headers = admin.request(
        "POST", "/os-server-external-events",
        {"events": [{"name": "volume-extended", "server_uuid": server_id,
                     "tag": volume_id}]}, microversion="2.51")
    assert status == 200, body
    path = "/servers/%s/os-instance-actions/%s" % (
        server_id, headers["x-openstack-request-id"])

    def finished():
        code, body, _ = admin.request("GET", path, microversion="2.84")
        assert code == 200, body
        assert body["instanceAction"]["action"] == "extend_volume"
        return [e for e in body["instanceAction"]["events"]
                if e["event"] == "compute_extend_volume"
                and e["finish_time"]]
    return clients._wait(finished, bool, "compute_extend_volume of %s"
                         % server_id, 60, 0.1)[0]


def test_a_guest_sees_its_rbd_volume_grow(rbd_api, rbd_volumes,
                                          rbd_deployment, image_id):
    _, image = image_id
    guest, = guest_env.boot(rbd_api, rbd_deployment, image, ["grow"])
    admin = clients.ComputeClient(rbd_deployment.api_url,
                                  guest_env.ADMIN_TOKEN)
    rw = _volume(rbd_volumes, rbd_deployment)
    ro = _volume(rbd_volumes, rbd_deployment)
    dev_rw, size, _ = _attach(rbd_api, rbd_volumes, guest, rw, "rw")
    assert size == GiB and _size_in_guest(guest, dev_rw) == GiB
    dev_ro, size, ro_flag = _attach(rbd_api, rbd_volumes, guest, ro, "ro")
    assert (size, ro_flag) == (GiB, "1")

    _grow(rbd_deployment, rw, 2)
    assert _size_in_guest(guest, dev_rw) == GiB     # not before the event
    event = _extended(admin, guest.id, rw)
    assert event["result"] == "Success", event
    assert _size_in_guest(guest, dev_rw) == 2 * GiB
    # still writable at the new end
    status, out = guest.run("dd if=/dev/zero of=/dev/%s bs=512 seek=%d "
                            "count=1 conv=fsync" % (dev_rw, 4 * 1024 * 1024
                                                    - 1))
    assert status == 0, out

    # read-only: QEMU cannot resize a read-only node
    _grow(rbd_deployment, ro, 2)
    target = _live_disk(guest, ro).find("target").get("dev")
    refused = subprocess.run(
        ["virsh", "-c", "qemu:///system", "blockresize",
         "volattach-%s" % guest.id, target, "%dB" % (2 * GiB)],
        capture_output=True, text=True)
    assert refused.returncode != 0
    # libvirt 11 refuses it before QEMU would ("Image is read-only")
    assert "readonly disk" in refused.stderr, refused.stderr
    event = _extended(admin, guest.id, ro)
    assert event["result"] == "Error", event
    assert "attached read-only" in event["details"], event
    assert _size_in_guest(guest, dev_ro) == GiB


def test_an_in_use_extend_grows_the_guests_disk_end_to_end(
        rbd_api, rbd_volumes, rbd_deployment, image_id):
    """The whole two-way contract: os-extend at 3.42 on an in-use rbd
    volume of the volume service grows the image, the volume service
    posts volume-extended to the compute API, the compute resizes the
    disk, and the guest sees the new size without a detach or a reboot."""
    _, image = image_id
    guest, = guest_env.boot(rbd_api, rbd_deployment, image, ["grow-e2e"])
    volume_id = _volume(rbd_volumes, rbd_deployment)
    dev, size, _ = _attach(rbd_api, rbd_volumes, guest, volume_id, "rw")
    assert size == GiB
    code, body, _ = rbd_volumes.request(
        "POST", rbd_volumes._path("/volumes/%s/action" % volume_id),
        {"os-extend": {"new_size": 2}}, microversion="3.42")
    assert code == 202, body
    rbd_volumes.wait_for_volume_status(volume_id, "in-use")
    assert rbd_volumes.show_volume(volume_id)[1]["volume"]["size"] == 2
    clients._wait(lambda: _size_in_guest(guest, dev), lambda s: s == 2 * GiB,
                  "the guest's %s to be 2 GiB" % dev, 60, 0.5)
