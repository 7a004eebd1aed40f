"""A HARD reboot and a start plug the volumes again with what the volume
service answers now (compute RPC 1.10), as Nova's hard reboot (and its
libvirt power on) regenerates the guest from its block devices: a storage
address that changed since the attach is the one the new boot uses,
without ``nova-manage volume_attachment refresh``.  A SOFT reboot keeps
the guest's disks as they are.

In one process, as tests/functional/test_fresh_connection_info.py: the
volume service's backend is readdressed while it runs and the fake virt
driver shows what the compute was given."""
from volattach import context
from volattach import objects
from tests.functional.test_fresh_connection_info import (
    URL, _attached_server, _plugged, _portal, _readdressed, _record)


def _driver(deployment, server_id):
    instance = objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server_id)
    return deployment.computes[instance.host].driver


def _reboot(api, server_id, reboot_type):
    status, body, _ = api.request("POST", URL % server_id,
                                  {"reboot": {"type": reboot_type}})
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE", timeout=30)


def test_hard_reboot_connects_with_the_new_address(api, volumes, deployment):
    server_id, volume_id = _attached_server(api, volumes, deployment)
    original = _readdressed(deployment, "127.0.0.4:3260")
    try:
        assert _portal(_plugged(deployment, server_id, volume_id)) == original
        # a soft reboot does not reconnect: the guest keeps its disks
        _reboot(api, server_id, "SOFT")
        assert _portal(_plugged(deployment, server_id, volume_id)) == original
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == original
        _reboot(api, server_id, "HARD")
        assert _portal(_plugged(deployment, server_id, volume_id)) == \
            "127.0.0.4:3260"
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == "127.0.0.4:3260"
        # the volume stays attached to the server through it
        volume = volumes.wait_for_volume_status(volume_id, "in-use")
        assert [a["server_id"] for a in volume["attachments"]] == [server_id]
    finally:
        _readdressed(deployment, original)
    # the session to the old portal was let go: a detach leaves nothing
    driver = _driver(deployment, server_id)
    assert [k for k in driver.targets if "127.0.0.1:3260" in k
            and volume_id in k] == []
    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")
    assert [k for k in driver.targets if volume_id in k] == []
    assert driver.lost_connections == []


def test_start_connects_with_the_new_address(api, volumes, deployment):
    server_id, volume_id = _attached_server(api, volumes, deployment)
    status, body, _ = api.request("POST", URL % server_id, {"os-stop": None})
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHUTOFF", timeout=30)
    original = _readdressed(deployment, "127.0.0.5:3260")
    try:
        assert _portal(_plugged(deployment, server_id, volume_id)) == original
        status, body, _ = api.request("POST", URL % server_id,
                                      {"os-start": None})
        assert status == 202, body
        api.wait_for_server_status(server_id, "ACTIVE", timeout=30)
        assert _portal(_plugged(deployment, server_id, volume_id)) == \
            "127.0.0.5:3260"
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == "127.0.0.5:3260"
    finally:
        _readdressed(deployment, original)
