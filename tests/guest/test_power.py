"""suspend, resume and reboot of a real guest with a volume attached: the
guest's memory survives a suspend (its shell and disks are still there),
a hard reboot boots it again with the volume, and a suspended server can
be deleted."""
import uuid

from tests.guest import conftest as guest_env
from tests.guest.test_data_path import _attach, _volume


def _action(api, server_id, name, value=None):
    code, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                {name: value})
    assert code == 202, (code, body)


def test_suspend_resume_reboot_and_delete(api, volumes, deployment, image_id):
    _, image = image_id
    [guest] = guest_env.boot(api, deployment, image, ["powered"])
    volume_id = _volume(volumes)
    dev, _, _ = _attach(api, volumes, guest, volume_id, "rw")
    marker = "volattach-mem-%s" % uuid.uuid4().hex[:8]
    # a shell variable lives in the guest's memory only
    assert guest.run("export VA_MARK=%s" % marker)[0] == 0

    _action(api, guest.id, "suspend")
    api.wait_for_server_status(guest.id, "SUSPENDED", timeout=120)
    _action(api, guest.id, "resume")
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    status, out = guest.run("echo $VA_MARK; cat /sys/block/%s/serial" % dev)
    assert status == 0 and marker in out and volume_id[:20] in out, out

    since = len(guest.text())
    _action(api, guest.id, "reboot", {"type": "HARD"})
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    guest.wait_for("VA-READY", since=since, timeout=guest_env.BOOT_TIMEOUT)
    assert guest.wait_disk(volume_id, since=since, timeout=60)
    status, out = guest.run("echo [$VA_MARK]")
    assert status == 0 and "[]" in out, out       # a new boot: memory gone

    _action(api, guest.id, "suspend")
    api.wait_for_server_status(guest.id, "SUSPENDED", timeout=120)
    assert api.delete_server(guest.id)[0] == 204
    api.wait_for_server_deleted(guest.id, timeout=60)
    volumes.wait_for_volume_status(volume_id, "available")
