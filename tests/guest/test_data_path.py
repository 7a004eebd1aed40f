"""Real guests see their volumes: multiattach read-write and read-only,
an asynchronous attach, detach, the data kept between attachments, a kill
-9 of volattach-all, a restart of the storage daemon under a guest, and a
volume attached while the server is offloaded.

The tests share two guests (booting one takes 5 to 7 s under TCG on an
idle machine) and run in file order: the last one shelves guest B."""
import os
import signal
import subprocess
import time
import uuid

from tests.guest import conftest as guest_env

PATTERN = "volattach-pattern-%s" % uuid.uuid4().hex[:8]
OFFSET = 2048        # sectors: away from what a partition scan reads


def _dev_of(guest, volume_id):
    return guest.wait_disk(volume_id)[0]


def _attach(api, volumes, guest, volume_id, mode=None, microversion="2.105"):
    since = len(guest.text())
    fields = {"attach_mode": mode} if mode else {}
    code, body, _ = api.attach_volume(guest.id, volume_id,
                                      microversion=microversion, **fields)
    assert code == 202 and body is None, (code, body)
    disk = guest.wait_disk(volume_id, since=since, timeout=60)
    volumes.wait_for_volume_status(volume_id, "in-use")
    return disk


def _detach(api, guest, volume_id):
    since = len(guest.text())
    code, body, _ = api.detach_volume(guest.id, volume_id)
    assert code == 202, (code, body)
    guest.wait_disk(volume_id, present=False, since=since, timeout=60)
    api.wait_for_volume_attachment_gone(guest.id, volume_id)


def _read(guest, dev, length, timeout=60):
    """``length`` bytes at OFFSET of the guest's /dev/``dev``, past its
    buffer cache."""
    status, out = guest.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev, dev, OFFSET, length),
        timeout=timeout)
    assert status == 0, out
    return out


def _write(guest, dev, text, timeout=60):
    """Write ``text`` at OFFSET of the guest's /dev/``dev`` and sync."""
    status, out = guest.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (text, dev, OFFSET), timeout=timeout)
    assert status == 0, out


def _volume(volumes, **fields):
    code, body, _ = volumes.create_volume(size=1, **fields)
    assert code == 202, (code, body)
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available")
    return volume_id


def test_multiattach_read_write_and_read_only(api, volumes, guests):
    a, b = guests
    code, body, _ = volumes.create_volume_type(
        "multiattach-%s" % uuid.uuid4().hex[:6],
        {"multiattach": "<is> True"})
    assert code == 200, (code, body)
    volume_id = _volume(volumes, volume_type=body["volume_type"]["name"])

    dev_a, size_a, ro_a = _attach(api, volumes, a, volume_id, "rw")
    dev_b, size_b, ro_b = _attach(api, volumes, b, volume_id, "ro")
    assert size_a == size_b == 1024 ** 3
    assert (ro_a, ro_b) == ("0", "1")
    # the kernel's own view, read in each guest
    assert a.run("cat /sys/block/%s/ro" % dev_a)[1].strip() == "0"
    assert b.run("cat /sys/block/%s/ro" % dev_b)[1].strip() == "1"

    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (PATTERN, dev_a, OFFSET))
    assert status == 0, out
    status, out = b.run("blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 "
                        "skip=%d count=1 2>/dev/null | head -c %d"
                        % (dev_b, dev_b, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out
    status, out = b.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                        "conv=sync" % (dev_b, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out

    # the console through the API says the same as the log
    code, body, _ = api.request(
        "POST", "/servers/%s/action" % b.id,
        {"os-getConsoleOutput": {"length": 50}})
    assert code == 200, (code, body)
    assert volume_id[:20] + ":1073741824:1" in body["output"]

    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "in-use")   # B still has it
    _detach(api, b, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")

    # the data is still there at the next attach
    dev_a, _, ro_a = _attach(api, volumes, a, volume_id)
    assert ro_a == "0"
    status, out = a.run("dd if=/dev/%s bs=512 skip=%d count=1 2>/dev/null "
                        "| head -c %d" % (dev_a, OFFSET, len(PATTERN)))
    assert PATTERN in out, out
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")


def test_async_attach_at_2_101_shows_up_in_the_guest(api, volumes, guests):
    a, _ = guests
    volume_id = _volume(volumes)
    dev, size, ro = _attach(api, volumes, a, volume_id, microversion="2.101")
    assert (size, ro) == (1024 ** 3, "0")
    status, out = a.run("cat /sys/block/%s/serial" % dev)
    assert out.strip() == volume_id[:20]
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")


def test_unknown_image_is_400(api):
    code, body, _ = api.create_server(name="no-image",
                                      image_ref=str(uuid.uuid4()))
    assert code == 400, (code, body)


def test_console_output_of_unknown_server_is_404(api):
    code, body, _ = api.request(
        "POST", "/servers/%s/action" % uuid.uuid4(),
        {"os-getConsoleOutput": {"length": 5}})
    assert code == 404, (code, body)


def test_kill_9_and_restart_keeps_guest_and_disks(api, volumes, guests,
                                                  deployment):
    a, _ = guests
    volume_id = _volume(volumes)
    dev, _, _ = _attach(api, volumes, a, volume_id)
    deployment.kill()
    deployment.start()
    # the guest kept running with its disk
    assert a.run("cat /sys/block/%s/serial" % dev)[1].strip() \
        == volume_id[:20]
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")




def _gone(pid, timeout=10):
    """Whether ``pid`` exited (a zombie counts: the volume service that
    started the daemon may not have reaped it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_guest_survives_a_storage_daemon_restart(api, volumes, guests,
                                                 deployment):
    """kill -9 of the qemu-storage-daemon under a guest's attached disk.
    The volume service's restart starts a new daemon and rebuilds the
    export from the database; QEMU's NBD client reconnects (the disk's
    ``<reconnect delay>``), and the guest reads what it wrote and writes
    again on the same device, with no new attach."""
    a, _ = guests
    volume_id = _volume(volumes)
    dev, _, _ = _attach(api, volumes, a, volume_id)
    before, after = PATTERN + "-before", PATTERN + "-after"
    _write(a, dev, before)

    old = deployment.qsd_pid()
    os.kill(old, signal.SIGKILL)
    assert _gone(old)
    deployment.kill()
    deployment.start()
    assert deployment.qsd_pid() != old

    out = _read(a, dev, len(before), timeout=90)
    assert before in out, out
    _write(a, dev, after, timeout=90)
    # the write reached the volume's file through the new daemon
    with open(os.path.join(deployment.state, "volumes",
                           "volume-%s" % volume_id),
              "rb") as f:
        f.seek(OFFSET * 512)
        assert f.read(len(after)).decode() == after
    assert a.disks()[volume_id[:20]][0] == dev
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")


def _exports(deployment):
    """The storage daemon's exports (over its QMP socket)."""
    from volattach.volume.backends import file as file_backend
    daemon = file_backend.StorageDaemon(
        os.path.join(deployment.state, "volumes", ".qsd"), "127.0.0.1", 0)
    return [e["id"] for e in daemon.command("query-block-exports")]


def test_failure_between_connect_and_attach_leaves_nothing(
        api, volumes, guests, deployment, tmp_path):
    """libvirt refuses the attach (its target is taken by a disk put there
    behind volattach's back) after the volume was connected and exported:
    nothing stays plugged or exported and the volume is available."""
    from volattach.volume.backends import file as file_backend
    a, _ = guests
    volume_id = _volume(volumes)
    used = {att["device"] for att in
            api.list_volume_attachments(a.id)[1]["volumeAttachments"]}
    target = next("vd" + c for c in "bcdefghijklmnopqrstuvwxy"
                  if "/dev/vd" + c not in used)
    intruder = str(tmp_path / "intruder.img")
    with open(intruder, "wb") as f:
        f.truncate(1024 * 1024)
    domain = "volattach-%s" % a.id
    since = len(a.text())
    subprocess.run(["virsh", "-c", "qemu:///system", "attach-disk", domain,
                    intruder, target, "--targetbus", "virtio", "--live",
                    "--serial", "intruder"], check=True, capture_output=True)
    a.wait_disk("intruder", since=since)
    try:
        code, body, headers = api.attach_volume(a.id, volume_id,
                                                microversion="2.101")
        assert code == 202, (code, body)
        # wait for the end of the cast workflow: its action's events
        request_id = headers["x-openstack-request-id"]
        deadline = time.monotonic() + 60
        while True:
            code, body, _ = api.request(
                "GET", "/servers/%s/os-instance-actions/%s"
                % (a.id, request_id), microversion="2.51")
            events = (body or {}).get("instanceAction", {}).get("events", [])
            if events and all(e.get("finish_time") for e in events):
                break
            assert time.monotonic() < deadline, (code, body)
            time.sleep(0.2)
        assert any(e.get("result") == "Error" for e in events), events
        volumes.wait_for_volume_status(volume_id, "available")
        api.wait_for_volume_attachment_gone(a.id, volume_id)
        assert volume_id[:20] not in a.disks()
        assert not [e for e in _exports(deployment)
                    if e.startswith(file_backend.export_id(volume_id, "")[:29])]
        code, body, _ = volumes.list_attachments(volume_id=volume_id,
                                                 microversion="3.27")
        assert code == 200 and body["attachments"] == [], body
    finally:
        since = len(a.text())
        subprocess.run(["virsh", "-c", "qemu:///system", "detach-disk",
                        domain, target, "--live"], capture_output=True)
        a.wait_disk("intruder", present=False, since=since)
    # and the same volume attaches fine afterwards, once the conductor's
    # rollback has deleted the server's mapping too (it goes a moment
    # after the volume is available and the listing has dropped it)
    deadline = time.monotonic() + 30
    while True:
        code, body, _ = api.attach_volume(a.id, volume_id,
                                          microversion="2.101")
        if code == 202 or time.monotonic() > deadline:
            break
        assert "already attached" in str(body), (code, body)
        time.sleep(0.2)
    assert code == 202, (code, body)
    dev, _, _ = a.wait_disk(volume_id)
    volumes.wait_for_volume_status(volume_id, "in-use")
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")


def test_volume_attached_while_offloaded_appears_after_unshelve(
        api, volumes, guests, deployment):
    _, b = guests
    volume_id = _volume(volumes)
    url = "/servers/%s/action" % b.id
    assert api.request("POST", url, {"shelve": None})[0] == 202
    api.wait_for_server_status(b.id, "SHELVED_OFFLOADED", timeout=120)
    code, body, _ = api.attach_volume(b.id, volume_id, microversion="2.101")
    assert code == 202, (code, body)

    def listed():
        code, body, _ = api.list_volume_attachments(b.id)
        return [a for a in body["volumeAttachments"]
                if a["volumeId"] == volume_id]
    deadline = time.monotonic() + 60
    while not listed():
        assert time.monotonic() < deadline, "attachment never listed"
        time.sleep(0.2)
    assert api.request("POST", url, {"unshelve": None})[0] == 202
    api.wait_for_server_status(b.id, "ACTIVE", timeout=120)
    b.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
    dev, size, ro = b.wait_disk(volume_id)
    assert (size, ro) == (1024 ** 3, "0")
    assert listed()[0]["device"] == "/dev/" + dev
    volumes.wait_for_volume_status(volume_id, "in-use")
    _detach(api, b, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
