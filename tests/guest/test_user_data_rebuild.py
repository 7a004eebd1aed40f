"""A real guest runs its user data from its config drive, and a rebuild
re-creates it from its image with the new user data (2.57) and its volume
still plugged in, with the data written before the rebuild."""
import base64
import uuid

from tests.guest import conftest as guest_env
from tests.guest.test_data_path import OFFSET, _attach, _volume


def _b64(script):
    return base64.b64encode(script.encode()).decode()


def test_user_data_and_rebuild_keep_the_volume(api, volumes, deployment,
                                               image_id):
    _, image = image_id
    token, token2 = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
    [guest] = guest_env.boot(api, deployment, image, ["rebuilt"],
                             config_drive=True,
                             user_data=_b64("echo VA-HELLO-%s\n" % token))
    guest.wait_for("VA-USER VA-HELLO-%s" % token, timeout=60)
    code, body, _ = api.show_server(guest.id, microversion="2.3")
    assert body["server"]["OS-EXT-SRV-ATTR:user_data"] == _b64(
        "echo VA-HELLO-%s\n" % token)

    volume_id = _volume(volumes)
    dev, _, _ = _attach(api, volumes, guest, volume_id)
    pattern = "volattach-rebuild-%s" % token
    status, out = guest.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out

    new_user_data = _b64("echo VA-REBUILT-%s\n" % token2)
    code, body, _ = api.request(
        "POST", "/servers/%s/action" % guest.id,
        {"rebuild": {"imageRef": image, "user_data": new_user_data}},
        microversion="2.57")
    assert code == 202, body
    assert body["server"]["user_data"] == new_user_data
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    # a new guest: its console starts again, runs the new user data and
    # lists the volume, whose data the rebuild kept
    guest.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
    guest.wait_for("VA-USER VA-REBUILT-%s" % token2, timeout=60)
    assert "VA-HELLO-%s" % token not in guest.text()
    dev, size, ro = guest.wait_disk(volume_id, timeout=60)
    status, out = guest.run(
        "dd if=/dev/%s bs=512 skip=%d count=1 2>/dev/null | head -c %d"
        % (dev, OFFSET, len(pattern)))
    # (a long command line may wrap on the console: read the last line)
    assert status == 0 and out.strip().splitlines()[-1] == pattern, out
    volumes.wait_for_volume_status(volume_id, "in-use")
    assert api.delete_server(guest.id)[0] == 204
    api.wait_for_server_deleted(guest.id, timeout=60)
    volumes.wait_for_volume_status(volume_id, "available")
