"""[compute] shelved_offload_time > 0: a shelved (image-backed) server stays
on its host, powered off, until the conductor's periodic pass offloads it;
a volume-backed one is offloaded at once."""
from tests.functional.test_attach_detach import _new_boot_volume, _new_server, _new_volume

CONF_OVERRIDES = {("compute", "shelved_offload_time"): 5}


def _shelve(api, server_id):
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"shelve": None}, microversion="2.37")
    assert status == 202, body


def test_shelved_server_is_offloaded_after_the_delay(api, volumes, deployment):
    server_id = _new_server(api, name="later")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    _shelve(api, server_id)
    api.wait_for_server_status(server_id, "SHELVED")
    # still on its host right after shelving (the delay is 5 s)
    from volattach import objects
    from volattach import context
    instance = objects.Instance.get_by_uuid(context.get_admin_context(), server_id)
    assert instance.vm_state == "shelved" and instance.host is not None
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED", timeout=30)
    instance = objects.Instance.get_by_uuid(context.get_admin_context(), server_id)
    assert instance.host is None
    status, body, _ = api.request("GET", "/servers/%s/os-instance-actions" % server_id)
    assert "shelveOffload" in [a["action"] for a in body["instanceActions"]]
    # the volume stays attached (connector-less) and comes back on unshelve
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"unshelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE")
    status, body, _ = api.list_volume_attachments(server_id)
    assert [a["device"] for a in body["volumeAttachments"]] == ["/dev/vdb"]


def test_volume_backed_server_is_offloaded_at_once(api, volumes):
    volume_id = _new_boot_volume(volumes)
    status, body, _ = api.create_server(
        name="bfv-shelve", image_ref="", microversion="2.37",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": volume_id,
                                  "source_type": "volume", "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    _shelve(api, server_id)
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED", timeout=10)
