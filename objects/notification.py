"""Versioned notifications: payload objects and the emitter.

``instance.volume_attach``, ``instance.volume_detach`` and
``instance.volume_swap`` each go out as ``.start``, ``.end`` or ``.error``
(priority INFO, ERROR for ``.error``) from the conductor that runs the
workflow, publisher ``volattach-conductor:<host>``, on oslo.messaging's
notification topics when ``[oslo_messaging_notifications] driver`` is set
(e.g. ``messagingv2``).  The payload is an ``InstanceActionVolumePayload``
whose ``block_devices`` carry each volume's ``attach_mode``.
"""
import logging
import socket

from oslo_versionedobjects import fields

from volattach.objects import base

LOG = logging.getLogger(__name__)


@base.VolattachObjectRegistry.register
class BlockDevicePayload(base.VolattachObject):
    # Version 1.0: Initial version (with attach_mode, the
    #              multiattach-enhancements spec)
    VERSION = "1.0"

    fields = {
        "volume_id": fields.StringField(nullable=True),
        "attachment_id": fields.StringField(nullable=True),
        "device_name": fields.StringField(nullable=True),
        "boot_index": fields.IntegerField(nullable=True),
        "delete_on_termination": fields.BooleanField(default=False),
        "tag": fields.StringField(nullable=True),
        "attach_mode": fields.StringField(nullable=True),
    }

    @classmethod
    def from_bdm(cls, bdm):
        return cls(volume_id=bdm.volume_id, attachment_id=bdm.attachment_id,
                   device_name=bdm.device_name, boot_index=bdm.boot_index,
                   delete_on_termination=bool(bdm.delete_on_termination),
                   tag=bdm.tag, attach_mode=getattr(bdm, "attach_mode", None))


@base.VolattachObjectRegistry.register
class InstanceActionVolumePayload(base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {
        "uuid": fields.UUIDField(),
        "host": fields.StringField(nullable=True),
        "project_id": fields.StringField(nullable=True),
        "user_id": fields.StringField(nullable=True),
        "vm_state": fields.StringField(nullable=True),
        "task_state": fields.StringField(nullable=True),
        "volume_id": fields.StringField(),
        "new_volume_id": fields.StringField(nullable=True),
        "block_devices": fields.ListOfObjectsField("BlockDevicePayload"),
        "fault": fields.StringField(nullable=True),
    }


def sends_notifications(notifier):
    """Whether ``notifier`` would send anything anywhere.

    oslo.messaging's ``Notifier.is_enabled()`` is False only when the driver
    list is exactly ``['noop']``; with no driver at all (our default, an
    empty ``[oslo_messaging_notifications] driver``) it says True, and its
    ``info()`` would serialize the payload before finding no driver to hand
    it to.  A workflow builds its payloads only when this says True.
    """
    if notifier is None or not notifier.is_enabled():
        return False
    drivers = notifier.transport.conf.oslo_messaging_notifications.driver
    return any(name != "noop" for name in drivers or ())


def notify_volume(context, event, phase, instance, volume_id, bdms=(),
                  new_volume_id=None, error=None):
    """Emit ``instance.<event>.<phase>``; never lets a notification failure
    break the workflow that sends it."""
    from volattach import rpc
    notifier = rpc.NOTIFIER
    if not sends_notifications(notifier):
        return
    try:
        payload = InstanceActionVolumePayload(
            uuid=instance.uuid, host=instance.host, project_id=instance.project_id,
            user_id=instance.user_id, vm_state=instance.vm_state,
            task_state=instance.task_state, volume_id=volume_id,
            new_volume_id=new_volume_id,
            block_devices=[BlockDevicePayload.from_bdm(b) for b in bdms if b is not None],
            fault=str(error) if error is not None else None)
        prepared = notifier.prepare(
            publisher_id="volattach-conductor:%s" % socket.gethostname())
        send = prepared.error if phase == "error" else prepared.info
        send(context, "instance.%s.%s" % (event, phase), payload.obj_to_primitive())
    except Exception:
        LOG.exception("could not send the %s.%s notification", event, phase)
