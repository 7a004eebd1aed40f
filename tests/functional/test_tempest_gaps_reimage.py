"""The volume service's os-reimage (Cinder 3.68), which the conductor calls
to rebuild a volume-backed server from compute 2.93: its statuses, its
refusals with Cinder's codes, and nothing changed by a refused one."""
import pytest

from tests.functional.test_attach_detach import _new_boot_volume, _new_volume
from volattach.conf import CONF

IMAGE, IMAGE_ALT = CONF.compute.fake_images[:2]


def _reimage(volumes, volume_id, args, microversion="3.68"):
    return volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-reimage": args}, microversion=microversion)


def _volume(volumes, volume_id):
    return volumes.show_volume(volume_id)[1]["volume"]


def _image(volumes, volume_id):
    return (_volume(volumes, volume_id).get("volume_image_metadata")
            or {}).get("image_id")


def test_reimage_an_available_volume(volumes):
    volume_id = _new_boot_volume(volumes)
    status, body, _ = _reimage(volumes, volume_id, {"image_id": IMAGE_ALT})
    assert status == 202, body
    volume = _volume(volumes, volume_id)
    assert volume["status"] == "available"
    assert volume["bootable"] == "true"
    assert _image(volumes, volume_id) == IMAGE_ALT
    # a blank volume becomes bootable
    blank = _new_volume(volumes)
    assert _reimage(volumes, blank, {"image_id": IMAGE,
                                     "reimage_reserved": "true"})[0] == 202
    assert _volume(volumes, blank)["bootable"] == "true"
    assert _image(volumes, blank) == IMAGE


def test_a_reserved_volume_only_with_reimage_reserved(volumes):
    volume_id = _new_boot_volume(volumes)
    status, body, _ = volumes.request(
        "POST", volumes._path("/attachments"),
        {"attachment": {"volume_uuid": volume_id,
                        "instance_uuid": "6a5e1f0c-0000-4000-8000-00000000a001"}},
        microversion="3.54")
    assert status == 200, body
    assert _volume(volumes, volume_id)["status"] == "reserved"
    status, body, _ = _reimage(volumes, volume_id, {"image_id": IMAGE_ALT})
    assert status == 400, body
    assert "must be available or error" in body["badRequest"]["message"]
    assert _image(volumes, volume_id) == IMAGE
    status, body, _ = _reimage(volumes, volume_id, {
        "image_id": IMAGE_ALT, "reimage_reserved": True})
    assert status == 202, body
    assert _volume(volumes, volume_id)["status"] == "reserved"
    assert _image(volumes, volume_id) == IMAGE_ALT


@pytest.mark.parametrize("args,microversion,code", [
    ({"image_id": IMAGE_ALT}, "3.67", 400),          # no such action yet
    ({}, "3.68", 400),                                # image_id required
    ({"image_id": "not-a-uuid"}, "3.68", 400),
    ({"image_id": IMAGE_ALT, "bogus": 1}, "3.68", 400),
    ({"image_id": IMAGE_ALT, "reimage_reserved": "maybe"}, "3.68", 400),
    # an image the volume service does not know
    ({"image_id": "8a3c1e1c-0000-4000-8000-000000000000"}, "3.68", 400),
])
def test_bad_reimages_change_nothing(volumes, args, microversion, code):
    volume_id = _new_boot_volume(volumes)
    status, body, _ = _reimage(volumes, volume_id, args, microversion)
    assert status == code, body
    assert body["badRequest"]["code"] == 400
    volume = _volume(volumes, volume_id)
    assert volume["status"] == "available"
    assert _image(volumes, volume_id) == IMAGE


def test_reimage_of_a_missing_or_foreign_volume_is_404(volumes, deployment):
    from tests.integration import client as clients
    missing = "3b3e8a2c-0000-4000-8000-000000000000"
    assert _reimage(volumes, missing, {"image_id": IMAGE})[0] == 404
    volume_id = _new_boot_volume(volumes)
    other = clients.VolumeClient(deployment.volume_url, "mallory:other")
    assert _reimage(other, volume_id, {"image_id": IMAGE_ALT})[0] == 404
    assert _image(volumes, volume_id) == IMAGE
