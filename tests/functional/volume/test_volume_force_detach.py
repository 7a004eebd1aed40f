"""os-force_detach (admin): removes one attachment of a volume, with its
backend connection (the file backend's export: a real storage daemon),
leaves the others, and answers Cinder's errors."""
import os
import signal
import subprocess

import pytest

from tests.functional.volume.volume_testlib import (
    ADMIN, INSTANCE_A, INSTANCE_B, USER1, build_api, connector, free_port,
    make_conf)


def _force(api, volume_id, body, token=ADMIN):
    return api.post("/volumes/%s/action" % volume_id,
                    {"os-force_detach": body}, token=token)


def _multi(api):
    vol = api.create_volume(multiattach=True)
    a = api.attach(vol["id"], INSTANCE_A, host="compute-1")
    b = api.attach(vol["id"], INSTANCE_B, host="compute-2")
    return vol, a, b


def _left(api, volume_id):
    return sorted(a["id"] for a in api.attachments_of(volume_id))


def test_force_detach_removes_one_attachment_and_keeps_the_other(api):
    vol, a, b = _multi(api)
    r = _force(api, vol["id"], {"attachment_id": a})
    assert r.status_code == 202, r.text
    assert _left(api, vol["id"]) == [b]
    assert api.volume(vol["id"])["status"] == "in-use"
    r = _force(api, vol["id"], {"attachment_id": b})
    assert r.status_code == 202, r.text
    assert _left(api, vol["id"]) == []
    assert api.volume(vol["id"])["status"] == "available"


def test_force_detach_by_connector_host(api):
    vol, a, b = _multi(api)
    r = _force(api, vol["id"], {"connector": connector("compute-2")})
    assert r.status_code == 202, r.text
    assert _left(api, vol["id"]) == [a]


def test_force_detach_of_a_reserved_attachment(api):
    vol = api.create_volume()
    r = api.reserve(vol["id"])
    att = r.json["attachment"]["id"]
    assert _force(api, vol["id"], {"attachment_id": att}).status_code == 202
    assert _left(api, vol["id"]) == []
    assert api.volume(vol["id"])["status"] == "available"


def test_an_attachment_that_is_not_there_is_cinders_400(api):
    vol, a, b = _multi(api)
    other = api.create_volume()
    c = api.attach(other["id"], INSTANCE_A)
    for missing in ("5d0e6b1a-0000-4000-8000-000000000000", c):
        r = _force(api, vol["id"], {"attachment_id": missing})
        assert r.status_code == 400, r.text
        assert r.json["badRequest"]["message"] == (
            "Error force detaching volume - VolumeAttachmentNotFound: "
            "Volume attachment could not be found with filter: "
            "attachment_id = %s." % missing)
    r = _force(api, vol["id"], {"connector": connector("compute-9")})
    assert r.status_code == 400 and "attached_host = compute-9" in r.text
    assert _left(api, vol["id"]) == sorted([a, b])
    assert _left(api, other["id"]) == [c]


def test_several_attachments_need_an_attachment_id(api):
    vol, a, b = _multi(api)
    r = _force(api, vol["id"], {})
    assert r.status_code == 400, r.text
    assert r.json["badRequest"]["message"] == (
        "Error force detaching volume - InvalidVolume: Invalid volume: "
        "Detach volume failed: More than one attachment, but no "
        "attachment_id provided.")
    assert _left(api, vol["id"]) == sorted([a, b])


def test_force_detach_is_admin_only_and_validates_its_body(api):
    vol, a, b = _multi(api)
    r = _force(api, vol["id"], {"attachment_id": a}, token=USER1)
    assert r.status_code == 403, r.text
    r = _force(api, vol["id"], {"attachment_id": a, "bogus": 1})
    assert r.status_code == 400, r.text
    assert _force(api, "5d0e6b1a-0000-4000-8000-00000000000f",
                  {"attachment_id": a}).status_code == 404
    assert _left(api, vol["id"]) == sorted([a, b])


def test_force_detach_tears_down_the_file_backend_export(tmp_path):
    pytest.importorskip("qemu.qmp")
    port = free_port()
    volumes = tmp_path / "vols"
    api = build_api(make_conf(
        tmp_path, connection="sqlite:///%s" % (tmp_path / "v.sqlite"),
        backend="file", backend_name="file", volumes_dir=str(volumes),
        export_port=port))
    try:
        vol = api.create_volume()
        att = api.attach(vol["id"])
        name = api.attachment(att)["connection_info"]["name"]

        def length():
            return subprocess.run(
                ["qemu-io", "-r", "-f", "raw", "-c", "length",
                 "nbd://127.0.0.1:%d/%s" % (port, name)],
                capture_output=True, text=True)
        assert length().stdout.strip() == "1 GiB"
        assert _force(api, vol["id"], {"attachment_id": att}).status_code \
            == 202
        gone = length()
        assert gone.returncode != 0 and "1 GiB" not in gone.stdout
        assert api.volume(vol["id"])["status"] == "available"
    finally:
        try:
            with open(volumes / ".qsd" / "qsd.pid") as f:
                os.kill(int(f.read().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def test_force_detach_of_a_volume_reset_to_error_makes_it_available(api):
    """tempest's admin test_force_detach_volume: reset to error, then
    force-detach the attachment: the volume is available again."""
    vol = api.create_volume()
    att = api.attach(vol["id"])
    r = api.post("/volumes/%s/action" % vol["id"],
                 {"os-reset_status": {"status": "error"}}, token=ADMIN)
    assert r.status_code == 202, r.text
    r = _force(api, vol["id"], {"connector": None, "attachment_id": att})
    assert r.status_code == 202, r.text
    assert _left(api, vol["id"]) == []
    assert api.volume(vol["id"])["status"] == "available"
