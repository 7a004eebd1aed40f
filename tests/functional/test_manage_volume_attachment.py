"""``volattach-manage volume_attachment show | get_connector | refresh`` as
real subprocesses on the databases and the volume service of an all-in-one
deployment (this process): Nova's exit codes, secrets masked, and a refresh
that replaces the attachment of a stopped server with one made from a new
connector, which the next start plugs."""
import json
import os
import subprocess
import sys

import pytest

from volattach.cmd import manage_attachments
from volattach.conf import CONF

def _manage(tmp_path, *args, host="manage-host"):
    conf = tmp_path / "manage.conf"
    conf.write_text(
        "[DEFAULT]\nstate_path = %s\n[database]\nconnection = %s\n"
        "[volume]\nconnection = %s\n[compute]\nhost = %s\n"
        "[cinder]\nauth_strategy = noauth\nendpoint = %s\n" % (
            CONF.state_path, CONF.database.connection,
            CONF.volume.connection, host, CONF.cinder.endpoint))
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "volattach-manage"),
         "--config-file", str(conf), "volume_attachment", *args],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))


@pytest.fixture
def attached(api, volumes):
    server = api.create_active_server()
    volume = volumes.create_available_volume()
    code, body, _ = api.attach_volume(server, volume)
    assert code == 200, body
    volumes.wait_for_volume_status(volume, "in-use")
    return server, volume


def _attachments(volumes, volume):
    code, body, _ = volumes.list_attachments(volume_id=volume)
    assert code == 200, body
    return [a["id"] for a in body["attachments"]]


def test_show_prints_record_attachment_and_connection_info(
        tmp_path, attached, volumes):
    """Also Nova's exit code 3: the volume is not attached to the server."""
    server, volume = attached
    [attachment] = _attachments(volumes, volume)
    result = _manage(tmp_path, "show", server, volume, "--json")
    assert result.returncode == 0, result
    shown = json.loads(result.stdout)
    assert shown["block_device_mapping"]["attachment_id"] == attachment
    assert shown["block_device_mapping"]["volume_id"] == volume
    assert shown["attachment"]["id"] == attachment
    assert shown["attachment"]["status"] == "attached"
    assert shown["connection_info"]["volume_id"] == volume
    table = _manage(tmp_path, "show", server, volume)
    assert table.returncode == 0, table
    assert "Block device mapping (compute database)" in table.stdout
    assert "Attachment %s (volume service)" % attachment in table.stdout
    assert "Connection info (secrets masked)" in table.stdout
    assert "Traceback" not in table.stderr
    other = volumes.create_available_volume()
    result = _manage(tmp_path, "show", server, other)
    assert result.returncode == 3      # not attached to it: Nova's code
    assert "No volume Block Device Mapping" in result.stdout


def test_get_connector_prints_this_hosts_connector(tmp_path):
    result = _manage(tmp_path, "get_connector", "--json", host="c-77")
    assert result.returncode == 0, result
    connector = json.loads(result.stdout)
    assert connector["host"] == "c-77"
    assert connector["initiator"] == "iqn.2026-11.org.volattach:c-77"


def test_refresh_replaces_the_attachment_of_a_stopped_server(
        tmp_path, attached, api, admin_api, volumes):
    server, volume = attached
    [old] = _attachments(volumes, volume)
    host = admin_api.server_host(server)
    connector = {"host": host, "initiator": "iqn.2026-11.org.new:%s" % host,
                 "ip": "127.0.0.1", "platform": "x86_64", "os_type": "linux",
                 "multipath": False}
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(connector))
    # a running server: refused, nothing changed
    result = _manage(tmp_path, "refresh", server, volume, "--connector",
                     str(path))
    assert result.returncode == 5, result
    assert "must be stopped" in result.stdout
    code, body, _ = api.request("POST", "/servers/%s/action" % server,
                                {"os-stop": None})
    assert code == 202, body
    api.wait_for_server_status(server, "SHUTOFF")
    # no connector file, a connector of another host
    assert _manage(tmp_path, "refresh", server, volume, "--connector",
                   str(tmp_path / "none.json")).returncode == 2
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(dict(connector, host="not-" + host)))
    result = _manage(tmp_path, "refresh", server, volume, "--connector",
                     str(elsewhere))
    assert result.returncode == 7 and "does not match" in result.stdout
    assert _attachments(volumes, volume) == [old]

    result = _manage(tmp_path, "refresh", server, volume, "--connector",
                     str(path))
    assert result.returncode == 0, result
    [new] = _attachments(volumes, volume)
    assert new != old and new in result.stdout
    shown = json.loads(_manage(tmp_path, "show", server, volume,
                               "--json").stdout)
    assert shown["block_device_mapping"]["attachment_id"] == new
    assert shown["attachment"]["status"] == "attached"
    assert shown["connection_info"]["attachment_id"] == new
    code, body, _ = volumes.show_volume(volume)
    assert body["volume"]["status"] == "in-use"
    code, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server)
    assert "refresh_volume_attachment" in [
        a["action"] for a in body["instanceActions"]]
    # unlocked again, and the next start plugs the new attachment
    code, body, _ = admin_api.request("GET", "/servers/%s" % server,
                                      microversion="2.9")
    assert body["server"]["locked"] is False
    code, body, _ = api.request("POST", "/servers/%s/action" % server,
                                {"os-start": None})
    assert code == 202, body
    api.wait_for_server_status(server, "ACTIVE")


@pytest.mark.parametrize("info, masked", [
    ({"driver_volume_type": "iscsi", "auth_method": "CHAP",
      "auth_username": "u", "auth_password": "s3cret",
      "discovery_auth_password": "d1sc", "target_lun": 1},
     {"auth_password", "discovery_auth_password"}),
    ({"driver_volume_type": "rbd", "name": "volumes/v", "keyring": "[x]\nk",
      "secret_uuid": "6d3f", "secret_type": "ceph",
      "data": {"auth_key": "AQB", "token": "t"}},
     {"keyring", "data.auth_key", "data.token"}),
])
def test_secrets_are_masked(info, masked):
    out = manage_attachments.mask_secrets(info)
    for key, value in info.items():
        if isinstance(value, dict):
            for sub in value:
                assert (out[key][sub] == "***") == (
                    "%s.%s" % (key, sub) in masked)
        else:
            assert (out[key] == "***") == (key in masked), key
