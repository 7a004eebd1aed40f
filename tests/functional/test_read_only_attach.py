"""Microversion 2.105 (volattach's extension, the volume-multiattach-
enhancements spec): read-only attachments end to end, refused with 409 on a
compute too old to honour them, modes at server create, multi-create of
servers sharing a multiattach volume, and swap keeping the mode."""

import pytest

from tests.functional.test_attach_detach import (_attachment_rows, _new_boot_volume,
                                                 _new_server, _new_volume)
from tests.integration import client as clients

MV = "2.105"


def _guest_mode(deployment, server_id, device):
    from volattach import objects
    from volattach import context
    host = objects.Instance.get_by_uuid(context.get_admin_context(), server_id).host
    return deployment.computes[host].driver.guests[server_id]["modes"].get(device)


def _wait_attached(api, volumes, server_id, volume_id):
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = api.list_volume_attachments(server_id, microversion=MV)
    assert status == 200, body
    return {a["volumeId"]: a for a in body["volumeAttachments"]}[volume_id]



def test_read_only_attach_end_to_end(api, volumes, deployment):
    server_id = _new_server(api, name="ro")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                        attach_mode="ro")
    assert status == 202, body
    attachment = _wait_attached(api, volumes, server_id, volume_id)
    assert attachment["attach_mode"] == "ro"
    # the volume service and the host agree
    rows = _attachment_rows(volumes, volume_id)
    status, body, _ = volumes.request("GET", volumes._path("/attachments/%s" % rows[0]["id"]))
    assert body["attachment"]["attach_mode"] == "ro"
    assert body["attachment"]["connection_info"]["access_mode"] == "ro"
    assert _guest_mode(deployment, server_id, attachment["device"]) == "ro"
    # the default stays rw
    other = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, other, microversion=MV)
    assert status == 202, body
    assert _wait_attached(api, volumes, server_id, other)["attach_mode"] == "rw"


@pytest.mark.parametrize("fields,version", [
    ({"attach_mode": "ro"}, "2.104"),
    ({"attach_mode": "rx"}, MV),
    ({"attach_mode": ""}, MV),
])
def test_bad_attach_mode_is_400_and_leaves_nothing(api, volumes, fields, version):
    server_id = _new_server(api, name="bad-mode")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=version,
                                        **fields)
    assert status == 400, body
    assert _attachment_rows(volumes, volume_id) == []
    status, body, _ = volumes.show_volume(volume_id)
    assert body["volume"]["status"] == "available"


def test_read_only_on_an_old_compute_is_409_and_rw_still_works(api, volumes, deployment):
    from volattach.db import api as db_api
    from volattach import objects
    from volattach import context
    server_id = _new_server(api, name="old-compute")
    host = objects.Instance.get_by_uuid(context.get_admin_context(), server_id).host
    service = db_api.service_get_by_host_and_binary(host, "volattach-compute")
    db_api.service_update(service["id"], {"version": 2})   # a compute before 2.105
    try:
        volume_id = _new_volume(volumes)
        status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                            attach_mode="ro")
        assert status == 409, body
        assert "conflictingRequest" in body
        assert _attachment_rows(volumes, volume_id) == []
        status, body, _ = api.list_volume_attachments(server_id, microversion=MV)
        assert body["volumeAttachments"] == []
        status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                            attach_mode="rw")
        assert status == 202, body
        assert _wait_attached(api, volumes, server_id, volume_id)["attach_mode"] == "rw"
    finally:
        db_api.service_update(service["id"], {"version": service["version"]})


def test_boot_with_a_read_only_volume_and_local_mode_400(api, volumes, deployment):
    volume_id = _new_boot_volume(volumes)
    status, body, _ = api.create_server(
        name="bfv-ro", image_ref="", microversion=MV,
        block_device_mapping_v2=[{"boot_index": 0, "uuid": volume_id, "attach_mode": "ro",
                                  "source_type": "volume", "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    attachment = _wait_attached(api, volumes, server_id, volume_id)
    assert attachment["attach_mode"] == "ro"
    assert _guest_mode(deployment, server_id, "/dev/vda") == "ro"

    status, body, _ = api.create_server(
        name="local-ro", microversion=MV,
        block_device_mapping_v2=[{"boot_index": 0, "uuid": clients.DEFAULT_IMAGE,
                                  "source_type": "image", "destination_type": "local",
                                  "attach_mode": "ro"}])
    assert status == 400, body
    status, body, _ = api.create_server(
        name="mode-old-mv", image_ref="", microversion="2.104",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": _new_boot_volume(volumes),
                                  "attach_mode": "ro", "source_type": "volume",
                                  "destination_type": "volume"}])
    assert status == 400, body


def test_multi_create_shares_a_multiattach_volume(api, volumes, multiattach_type):
    volume_id = _new_boot_volume(volumes, volume_type=multiattach_type)
    bdm = [{"boot_index": 0, "uuid": volume_id, "source_type": "volume",
            "destination_type": "volume", "attach_mode": "ro"}]
    status, body, _ = api.create_server(name="many", image_ref="", microversion=MV,
                                        min_count=3, max_count=3,
                                        return_reservation_id=True,
                                        block_device_mapping_v2=bdm)
    assert status == 202, body
    reservation_id = body["reservation_id"]
    status, body, _ = api.list_servers(reservation_id=reservation_id, microversion=MV)
    servers = [s["id"] for s in body["servers"]]
    assert len(servers) == 3
    for server_id in servers:
        api.wait_for_server_status(server_id, "ACTIVE")
    rows = _attachment_rows(volumes, volume_id)
    assert sorted(r["instance"] for r in rows) == sorted(servers)
    assert {r["status"] for r in rows} == {"attached"}
    volumes.wait_for_volume_status(volume_id, "in-use")


def test_multi_create_refused_for_plain_volume_or_before_2_105(api, volumes,
                                                                multiattach_type):
    plain = _new_boot_volume(volumes)
    before = api.list_servers(microversion=MV)[1]["servers"]
    bdm = [{"boot_index": 0, "uuid": plain, "source_type": "volume",
            "destination_type": "volume"}]
    status, body, _ = api.create_server(name="many-plain", image_ref="", microversion=MV,
                                        min_count=2, max_count=2,
                                        block_device_mapping_v2=bdm)
    assert status == 400, body
    shared = _new_boot_volume(volumes, volume_type=multiattach_type)
    bdm[0]["uuid"] = shared
    status, body, _ = api.create_server(name="many-old", image_ref="", microversion="2.104",
                                        min_count=2, max_count=2,
                                        block_device_mapping_v2=bdm)
    assert status == 400, body
    assert api.list_servers(microversion=MV)[1]["servers"] == before
    assert _attachment_rows(volumes, plain) == []
    assert _attachment_rows(volumes, shared) == []


def test_swap_keeps_read_only(api, admin_api, volumes, deployment):
    server_id = _new_server(api, name="swap-ro")
    old, new = _new_volume(volumes), _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, old, microversion=MV, attach_mode="ro")
    assert status == 202, body
    device = _wait_attached(api, volumes, server_id, old)["device"]
    clients.VolumeClient(deployment.volume_url, "admin:admin:admin"
                         ).begin_migration(old)
    status, body, _ = admin_api.request(
        "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, old),
        {"volumeAttachment": {"volumeId": new}}, microversion=MV)
    assert status == 202, body
    volumes.wait_for_volume_status(old, "available")
    attachment = _wait_attached(api, volumes, server_id, new)
    assert attachment["attach_mode"] == "ro" and attachment["device"] == device
    assert _guest_mode(deployment, server_id, device) == "ro"


def test_read_only_volume_attaches_ro_without_asking(api, volumes, deployment):
    """openstackclient has no attach-mode option: `openstack volume set
    --read-only` then `openstack server add volume` must give a read-only
    attachment, which the attachment list shows at 2.105."""
    server_id = _new_server(api, name="ro-volume")
    volume_id = _new_volume(volumes)
    status, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-update_readonly_flag": {"readonly": True}})
    assert status == 202, body
    status, body, _ = api.attach_volume(server_id, volume_id)   # 2.1, as the CLI does
    assert status == 200, body
    attachment = _wait_attached(api, volumes, server_id, volume_id)
    assert attachment["attach_mode"] == "ro"
    assert _guest_mode(deployment, server_id, attachment["device"]) == "ro"


def test_read_only_attach_needs_conductor_1_3(api, volumes, deployment):
    """A conductor capped below the task API 1.3: 503 for a read-only attach
    before anything is recorded; read/write still goes through."""
    from volattach.conf import CONF
    server_id = _new_server(api, name="ro-old-conductor")
    volume_id = _new_volume(volumes)
    # the API's client reads the cap when built: rebuild it capped
    from volattach.conductor import rpcapi as conductor_rpcapi
    facade = _facade(deployment)
    original = facade.compute_task_api.rpcapi
    CONF.set_override("conductor", "1.2", group="upgrade_levels")
    try:
        facade.compute_task_api.rpcapi = conductor_rpcapi.ComputeTaskAPI()
        status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                            attach_mode="ro")
        assert status == 503, body
        status, body, _ = api.request("GET", "/servers/%s/os-instance-actions" % server_id)
        assert [a["action"] for a in body["instanceActions"]] == ["create"]
        assert _attachment_rows(volumes, volume_id) == []
        status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV)
        assert status == 202, body
        assert _wait_attached(api, volumes, server_id, volume_id)["attach_mode"] == "rw"
    finally:
        CONF.clear_override("conductor", group="upgrade_levels")
        facade.compute_task_api.rpcapi = original


def _facade(deployment):
    """The compute API facade behind the deployment's WSGI app."""
    from volattach.api.handlers import volume_attachments
    app = deployment.api_app
    while not hasattr(app, "_router"):
        app = getattr(app, "app", None) or getattr(app, "application")
    for resource in _resources(app):
        if isinstance(resource, volume_attachments.VolumeAttachments):
            return resource.compute
    raise AssertionError("no VolumeAttachments resource")


def _resources(app):
    stack = list(app._router._roots)
    while stack:
        node = stack.pop()
        if node.resource is not None:
            yield node.resource
        stack.extend(node.children or [])


def test_unshelve_with_a_read_only_volume_needs_a_new_compute(api, admin_api, volumes,
                                                              deployment):
    """An offloaded server with a read-only volume: unshelve is 409 while no
    compute honours read-only attachments, and lands ro once one does."""
    from volattach.db import api as db_api
    server_id = _new_server(api, name="unshelve-ro")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                        attach_mode="ro")
    assert status == 202, body
    _wait_attached(api, volumes, server_id, volume_id)
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"shelve": None}, microversion=MV)
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED")
    computes = db_api.service_get_all(binary="volattach-compute")
    for service in computes:
        db_api.service_update(service["id"], {"version": 2})
    try:
        status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                      {"unshelve": None}, microversion=MV)
        assert status == 409, body
        status, body, _ = api.show_server(server_id, microversion=MV)
        assert body["server"]["status"] == "SHELVED_OFFLOADED"
        assert body["server"]["OS-EXT-STS:task_state"] is None
    finally:
        for service in computes:
            db_api.service_update(service["id"], {"version": service["version"]})
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"unshelve": None}, microversion=MV)
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE")
    attachment = _wait_attached(api, volumes, server_id, volume_id)
    assert attachment["attach_mode"] == "ro"
    assert _guest_mode(deployment, server_id, attachment["device"]) == "ro"
