"""Volume notifications are built only when a notification driver would
send them: with no driver (the default) or only ``noop``, a workflow builds
and serializes no payload at all (oslo.messaging's ``is_enabled()`` says
True for an empty driver list)."""
import types
from unittest import mock

import oslo_messaging as messaging
import pytest
from oslo_config import cfg
from oslo_messaging.notify import _impl_test
from oslo_messaging.notify import notifier as oslo_notifier

import volattach  # noqa: F401
from volattach import objects
from volattach import rpc
from volattach.objects import notification

objects.register_all()

INSTANCE = types.SimpleNamespace(
    uuid="6f0a4d0c-3c59-4d55-9e5c-2f7f3c1d9a10", host="h1", project_id="p",
    user_id="u", vm_state="active", task_state=None)


def _notifier(drivers):
    conf = cfg.ConfigOpts()
    conf([])
    conf.register_opts(oslo_notifier._notifier_opts,
                       group="oslo_messaging_notifications")
    conf.set_override("driver", drivers, group="oslo_messaging_notifications")
    transport = messaging.get_notification_transport(conf, url="fake://")
    return messaging.Notifier(transport, serializer=rpc.RequestContextSerializer())


def _bdm():
    return objects.BlockDeviceMapping(
        None, volume_id="v1", attachment_id="a1", device_name="/dev/vdb",
        boot_index=None, delete_on_termination=False, tag=None, attach_mode="ro")


@pytest.mark.parametrize("drivers", [[], ["noop"]])
def test_no_payload_is_built_without_a_driver(monkeypatch, drivers):
    notifier = _notifier(drivers)
    monkeypatch.setattr(rpc, "NOTIFIER", notifier)
    assert not notification.sends_notifications(notifier)
    with mock.patch.object(notification, "InstanceActionVolumePayload") as payload, \
            mock.patch.object(notification, "BlockDevicePayload") as device, \
            mock.patch.object(notifier, "prepare") as prepare:
        notification.notify_volume(None, "volume_attach", "end", INSTANCE, "v1", [_bdm()])
    payload.assert_not_called()
    device.from_bdm.assert_not_called()
    prepare.assert_not_called()


def test_no_notifier_no_notification(monkeypatch):
    monkeypatch.setattr(rpc, "NOTIFIER", None)
    assert not notification.sends_notifications(None)
    with mock.patch.object(notification, "InstanceActionVolumePayload") as payload:
        notification.notify_volume(None, "volume_attach", "start", INSTANCE, "v1")
    payload.assert_not_called()


def test_a_driver_gets_the_payload(monkeypatch):
    notifier = _notifier(["test"])
    monkeypatch.setattr(rpc, "NOTIFIER", notifier)
    _impl_test.reset()
    assert notification.sends_notifications(notifier)
    ctx = mock.Mock(to_dict=lambda: {})
    notification.notify_volume(ctx, "volume_attach", "error", INSTANCE, "v1", [_bdm()],
                               error=ValueError("boom"))
    [(_ctxt, message, priority, _retry)] = _impl_test.NOTIFICATIONS
    assert priority == "ERROR"
    assert message["event_type"] == "instance.volume_attach.error"
    data = message["payload"]["volattach_object.data"]
    assert (data["uuid"], data["volume_id"], data["fault"]) == (INSTANCE.uuid, "v1", "boom")
    device = data["block_devices"][0]["volattach_object.data"]
    assert (device["device_name"], device["attach_mode"]) == ("/dev/vdb", "ro")
