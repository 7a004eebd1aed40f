"""Versioned notifications of attach and detach, with the block-device
payload's attach_mode, heard by a notification listener on the same
transport."""
import threading
import time

import oslo_messaging as messaging
import pytest
from oslo_messaging.notify import notifier as _notifier

from tests.functional.test_attach_detach import _new_server, _new_volume
from volattach.conf import CONF

CONF.register_opts(_notifier._notifier_opts, group="oslo_messaging_notifications")
CONF_OVERRIDES = {("oslo_messaging_notifications", "driver"): ["messagingv2"]}


class _Collector:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def _record(self, priority, event_type, payload):
        with self.lock:
            self.events.append((priority, event_type, payload))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record("INFO", event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._record("ERROR", event_type, payload)

    def wait_for(self, event_type, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for event in self.events:
                    if event[1] == event_type:
                        return event
            time.sleep(0.05)
        raise AssertionError("no %s notification; got %s" % (
            event_type, [e[1] for e in self.events]))


@pytest.fixture
def collector(deployment):
    """Every notification this test's deployment sends."""
    from volattach import rpc
    collected = _Collector()
    listener = messaging.get_notification_listener(
        rpc.NOTIFICATION_TRANSPORT, [messaging.Target(topic="notifications")],
        [collected], executor="threading")
    listener.start()
    yield collected
    listener.stop()
    listener.wait()


def test_attach_and_detach_notifications_carry_attach_mode(api, volumes, collector):
    server_id = _new_server(api, name="notified")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    start = collector.wait_for("instance.volume_attach.start")
    priority, _, payload = collector.wait_for("instance.volume_attach.end")
    assert start[0] == "INFO" and priority == "INFO"
    data = payload["volattach_object.data"]
    assert payload["volattach_object.name"] == "InstanceActionVolumePayload"
    assert data["uuid"] == server_id and data["volume_id"] == volume_id
    bdm = data["block_devices"][0]["volattach_object.data"]
    assert bdm["attach_mode"] == "rw" and bdm["device_name"] == "/dev/vdb"
    assert bdm["attachment_id"]

    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    collector.wait_for("instance.volume_detach.start")
    _, _, payload = collector.wait_for("instance.volume_detach.end")
    assert payload["volattach_object.data"]["volume_id"] == volume_id


def test_failed_attach_sends_error_notification(api, volumes, collector):
    server_id = _new_server(api, name="notified-fail")
    volume_id = _new_volume(volumes)
    CONF.set_override("fail_operations", ["attach"], group="fake_driver")
    try:
        status, _, _ = api.attach_volume(server_id, volume_id)
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    assert status == 500
    priority, _, payload = collector.wait_for("instance.volume_attach.error")
    assert priority == "ERROR"
    assert "injected failure" in payload["volattach_object.data"]["fault"]


def test_swap_notifications_keep_attach_mode(api, admin_api, volumes, volumes_admin,
                                            collector):
    server_id = _new_server(api, name="notified-swap")
    old, new = _new_volume(volumes), _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, old, microversion="2.105",
                                        attach_mode="ro")
    assert status == 202, body
    collector.wait_for("instance.volume_attach.end")
    volumes_admin.begin_migration(old)
    status, body, _ = admin_api.request(
        "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, old),
        {"volumeAttachment": {"volumeId": new}})
    assert status == 202, body
    _, _, start = collector.wait_for("instance.volume_swap.start")
    _, _, end = collector.wait_for("instance.volume_swap.end")
    assert start["volattach_object.data"]["new_volume_id"] == new
    data = end["volattach_object.data"]
    assert (data["volume_id"], data["new_volume_id"]) == (old, new)
    bdm = data["block_devices"][0]["volattach_object.data"]
    assert (bdm["volume_id"], bdm["attach_mode"]) == (new, "ro")
