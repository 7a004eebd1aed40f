"""forceDelete and restore (os-deferred-delete). There is no soft delete
here, so forceDelete is the delete; restore is 409 unless the server is
soft-deleted, as in Nova; both 404 for an unknown server."""
import uuid

from tests.functional.test_attach_detach import _new_server, _new_volume
from volattach import context
from volattach import objects


def _action(api, server_id, name):
    return api.request("POST", "/servers/%s/action" % server_id, {name: None})


def test_force_delete_deletes_and_releases_the_volumes(api, volumes):
    server_id = _new_server(api, name="forced")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion="2.20")
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = _action(api, server_id, "forceDelete")
    assert (status, body) == (202, None)
    api.wait_for_server_deleted(server_id, timeout=30)
    volumes.wait_for_volume_status(volume_id, "available")


def test_restore_is_409_unless_soft_deleted(api):
    server_id = _new_server(api, name="restored")
    status, body, _ = _action(api, server_id, "restore")
    assert status == 409, body
    assert body["conflictingRequest"]["message"] == (
        "Cannot 'restore' instance %s while it is in vm_state active"
        % server_id)
    instance = objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server_id)
    instance.vm_state = "soft-delete"
    instance.save()
    assert api.show_server(server_id)[1]["server"]["status"] == "SOFT_DELETED"
    status, body, _ = _action(api, server_id, "restore")
    assert (status, body) == (202, None)
    assert api.show_server(server_id)[1]["server"]["status"] == "ACTIVE"


def test_unknown_server_is_404(api):
    for name in ("forceDelete", "restore"):
        status, body, _ = _action(api, str(uuid.uuid4()), name)
        assert status == 404, (name, body)
