"""The storage daemon itself restarts under a running guest (kill -9 of
volattach-all and of its qemu-storage-daemon): the volume service starts a
new daemon and rebuilds the exports of the connected attachments from its
database; the guest's QEMU connects to it again on its own and the same
disk works again, with its data, without a new attach.

What libvirt 9.0 (Debian 12's) cannot do yet: set the NBD client's
``reconnect-delay`` (the driver writes ``<reconnect delay=.../>``, which
upstream libvirt added in 2023, after 9.0).  Without it QEMU does not hold the guest's
requests while the server is away: a request sent during the outage fails
with an I/O error in the guest, and the ones after the reconnect work (QEMU
7.2's client connects again in the background either way; see the README's
section on real guests)."""
import os
import signal
import time
import uuid

from tests.guest.test_data_path import OFFSET, _attach, _detach, _volume


def _qsd_pid(deployment):
    with open(os.path.join(deployment.state, "volumes", ".qsd",
                           "qsd.pid")) as f:
        return int(f.read().strip())


def _read_until_served(guest, dev, length, timeout=30):
    """(output, failed reads): direct reads (past the guest's page cache)
    until one is answered, as an application retrying after EIO would."""
    deadline = time.monotonic() + timeout
    failures = 0
    while True:
        status, out = guest.run(
            "dd if=/dev/%s bs=512 skip=%d count=1 iflag=direct 2>&1 "
            "| head -c %d" % (dev, OFFSET, length))
        if status == 0 and "error" not in out.lower():
            return out, failures
        failures += 1
        assert time.monotonic() < deadline, out
        time.sleep(0.2)


def test_guest_disk_works_again_after_a_storage_daemon_restart(
        api, volumes, guests, deployment):
    a, _ = guests
    pattern = "volattach-qsd-%s" % uuid.uuid4().hex[:8]
    volume_id = _volume(volumes)
    dev, _, _ = _attach(api, volumes, a, volume_id, "rw")
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out

    old = _qsd_pid(deployment)
    deployment.kill()                        # volattach-all, kill -9
    os.kill(old, signal.SIGKILL)             # and the storage daemon
    deadline = time.monotonic() + 10
    while os.path.exists("/proc/%d" % old) and time.monotonic() < deadline:
        time.sleep(0.05)
    deployment.start()                       # a new daemon, exports rebuilt
    assert _qsd_pid(deployment) != old

    # the same device, not attached again: served by the new daemon
    out, failures = _read_until_served(a, dev, len(pattern))
    assert pattern in out, out
    assert a.wait_disk(volume_id)[0] == dev
    status, out = a.run(
        "echo %s-2 | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out
    _detach(api, a, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
    # the write after the restart reached the volume
    dev, _, _ = _attach(api, volumes, a, volume_id, "rw")
    status, out = a.run("dd if=/dev/%s bs=512 skip=%d count=1 2>/dev/null "
                        "| head -c %d" % (dev, OFFSET, len(pattern) + 2))
    assert pattern + "-2" in out, out
    _detach(api, a, volume_id)
