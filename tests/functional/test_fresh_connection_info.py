"""A storage address that changed since the attach (a Ceph monitor that
moved, a portal readdressed) is used on the next reconnect that builds a
new connection: unshelve and live migration connect with what the volume
service answers then, not with the record's copy.  (Nova needed
``nova-manage volume_attachment refresh`` for this.)

In one process: the volume service's backend is readdressed while it runs
(its ``portal``, the fake backend's storage address, as the rbd backend's
``mon dump`` answers with the monitors of the moment), and the fake virt
driver shows what the compute connected and plugged."""
from volattach import context
from volattach import objects
from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_live_migration import _migrate, _wait_done

URL = "/servers/%s/action"


def _backend(deployment):
    """The running volume service's (only) backend."""
    (manager,) = [s.heartbeat.manager for s in deployment.servers
                  if getattr(s, "heartbeat", None) is not None]
    return manager.backend.default


def _record(server_id, volume_id):
    (bdm,) = [b for b in objects.BlockDeviceMappingList.get_by_instance_uuid(
        context.get_admin_context(), server_id) if b.volume_id == volume_id]
    return bdm


def _plugged(deployment, server_id, volume_id):
    """The connection the guest's compute plugged for ``volume_id``."""
    bdm = _record(server_id, volume_id)
    instance = objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server_id)
    driver = deployment.computes[instance.host].driver
    return driver.guests[server_id]["devices"][bdm.device_name]


def _portal(info):
    return (info.get("data") or info)["target_portal"]


def _readdressed(deployment, portal):
    backend = _backend(deployment)
    old, backend.portal = backend.portal, portal
    return old


def _attached_server(api, volumes, deployment):
    server_id = _new_server(api, name="fresh-connection")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion="2.1")
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    return server_id, volume_id


def test_unshelve_connects_with_the_new_address(api, volumes, deployment):
    server_id, volume_id = _attached_server(api, volumes, deployment)
    first = _portal(_plugged(deployment, server_id, volume_id))
    original = _readdressed(deployment, "127.0.0.2:3260")
    try:
        assert first == original
        status, body, _ = api.request("POST", URL % server_id,
                                      {"shelve": None}, microversion="2.37")
        assert status == 202, body
        api.wait_for_server_status(server_id, "SHELVED_OFFLOADED",
                                   timeout=30)
        status, body, _ = api.request("POST", URL % server_id,
                                      {"unshelve": None}, microversion="2.37")
        assert status == 202, body
        api.wait_for_server_status(server_id, "ACTIVE", timeout=30)
        assert _portal(_plugged(deployment, server_id, volume_id)) == \
            "127.0.0.2:3260"
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == "127.0.0.2:3260"
    finally:
        _readdressed(deployment, original)


def test_live_migration_connects_with_the_new_address(api, admin_api,
                                                      volumes, deployment):
    server_id, volume_id = _attached_server(api, volumes, deployment)
    original = _readdressed(deployment, "127.0.0.3:3260")
    try:
        status, body = _migrate(admin_api, server_id, None, "2.25",
                                block_migration="auto")
        assert status == 202, body
        assert _wait_done(admin_api, server_id)["status"] == "ACTIVE"
        assert _portal(_plugged(deployment, server_id, volume_id)) == \
            "127.0.0.3:3260"
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == "127.0.0.3:3260"
    finally:
        _readdressed(deployment, original)
