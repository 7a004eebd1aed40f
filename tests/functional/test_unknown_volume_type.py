"""An unknown ``driver_volume_type`` fails the attach cleanly: the compute
refuses it as the libvirt driver does (the fake driver checks the libvirt
driver's own table of volume drivers), the instance action's event names
the type, and the rollback leaves no record and no attachment: the volume
is available again.

In one process: the volume service's backend hands out connections of a
type no compute plugs (``fibre_channel``, which Cinder's FC drivers send
and volattach's libvirt driver does not support)."""
import sys

from tests.functional import instance_actions
from tests.functional.test_attach_detach import (
    _attachment_rows, _new_server, _new_volume)
from tests.functional.test_fresh_connection_info import _backend


def test_unknown_volume_type_fails_the_attach_cleanly(
        api, admin_api, volumes, deployment, monkeypatch):
    server_id = _new_server(api, name="unknown-type")
    volume_id = _new_volume(volumes)
    backend_module = sys.modules[type(_backend(deployment)).__module__]
    monkeypatch.setattr(backend_module, "DRIVER_VOLUME_TYPE", "fibre_channel")
    status, body, _ = api.attach_volume(server_id, volume_id)
    assert status == 500, body
    (event,) = instance_actions.action_events(admin_api, server_id,
                                              "attach_volume")
    assert event["result"] == "Error", event
    assert "fibre_channel" in (event.get("traceback") or ""), event
    # nothing left behind: no record, no attachment, the volume available
    status, body, _ = api.list_volume_attachments(server_id)
    assert body["volumeAttachments"] == []
    assert _attachment_rows(volumes, volume_id) == []
    volume = volumes.wait_for_volume_status(volume_id, "available")
    assert volume["attachments"] == []
    assert all(c.get("driver_volume_type") != "fibre_channel"
               for d in deployment.computes.values()
               for c in d.driver.connections.values())
    # the same volume attaches once the backend hands out a known type
    monkeypatch.undo()
    status, body, _ = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
