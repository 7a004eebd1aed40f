"""A swap on a running guest, the way it now happens (OSSN-0094): an admin
retypes an attached volume with migration_policy on-demand, the volume
service creates the target and asks the compute API to swap, the libvirt
driver block-copies the disk onto the target's NBD export and pivots.
The guest keeps its device and its data.

A read-only attachment cannot be swapped this way yet: QEMU's block mirror
writes into the target, which the read-only NBD export refuses.  That swap
fails cleanly: the migration ends in error and the guest keeps its
read-only disk and its data."""
import os
import time
import uuid

from tests.guest.test_data_path import (OFFSET, _attach, _detach, _read,
                                        _volume)


def _retype(volumes, volume_id, new_type):
    code, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-retype": {"new_type": new_type,
                       "migration_policy": "on-demand"}},
        microversion="3.0")
    assert code == 202, (code, body)


def _wait_migrated(volumes, volume_id, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        volume = volumes.show_volume(volume_id)[1]["volume"]
        if volume["migration_status"] in ("success", "error"):
            return volume
        assert time.monotonic() < deadline, volume
        time.sleep(0.2)


def _files(deployment):
    vdir = os.path.join(deployment.state, "volumes")
    return {f for f in os.listdir(vdir) if f.startswith("volume-")}


def test_retype_swaps_the_disk_of_a_running_guest(api, volumes, guests,
                                                  deployment):
    a, _ = guests
    files = _files(deployment)
    pattern = "volattach-swap-%s" % uuid.uuid4().hex[:8]
    types = []
    for _ in range(2):
        code, body, _r = volumes.create_volume_type(
            "swap-%s" % uuid.uuid4().hex[:6])
        assert code == 200, (code, body)
        types.append(body["volume_type"]["name"])

    # read-write: the data moves with the disk
    rw = _volume(volumes, volume_type=types[0])
    dev, _, ro = _attach(api, volumes, a, rw, "rw")
    assert ro == "0"
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out
    # read-only: written first through a read-write attachment
    ro_vol = _volume(volumes, volume_type=types[0])
    ro_dev, _, _ = _attach(api, volumes, a, ro_vol, "rw")
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, ro_dev, OFFSET))
    assert status == 0, out
    _detach(api, a, ro_vol)
    ro_dev, _, ro = _attach(api, volumes, a, ro_vol, "ro")
    assert ro == "1"

    for volume_id in (rw, ro_vol):
        _retype(volumes, volume_id, types[1])
    done = _wait_migrated(volumes, rw)
    assert (done["migration_status"], done["status"],
            done["volume_type"]) == ("success", "in-use", types[1]), done
    failed = _wait_migrated(volumes, ro_vol)
    assert (failed["migration_status"], failed["status"],
            failed["volume_type"]) == ("error", "in-use", types[0]), failed

    # the same devices, the data, and the modes
    listed = {d: (size, flag) for d, size, flag in a.disks().values()}
    assert listed[dev][1] == "0" and listed[ro_dev][1] == "1", listed
    assert pattern in _read(a, dev, len(pattern))
    assert pattern in _read(a, ro_dev, len(pattern))
    status, out = a.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                        "conv=sync" % (ro_dev, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out
    code, body, _ = api.list_volume_attachments(a.id, microversion="2.105")
    modes = {v["volumeId"]: v["attach_mode"] for v in body["volumeAttachments"]}
    assert modes == {rw: "rw", ro_vol: "ro"}, modes
    # the swapped disk takes writes on its new volume
    status, out = a.run(
        "echo %s-2 | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out

    for volume_id in (rw, ro_vol):
        code, body, _ = api.detach_volume(a.id, volume_id)
        assert code == 202, (code, body)
        volumes.wait_for_volume_status(volume_id, "available")
    # the migrated volume keeps its id and its (new) data at the next attach
    dev, _, _ = _attach(api, volumes, a, rw, "rw")
    assert pattern + "-2" in _read(a, dev, len(pattern) + 2)
    _detach(api, a, rw)
    for volume_id in (rw, ro_vol):
        code, _b, _r = volumes.request(
            "DELETE", volumes._path("/volumes/%s" % volume_id))
        assert code == 202
    # neither the migrated volume's old data nor the failed target's stays
    deadline = time.monotonic() + 10
    while _files(deployment) != files and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _files(deployment) == files
