"""What a compute does with the external events the API hands it (compute
RPC 1.11, ``ComputeManager.external_instance_event``), as Nova's compute
does: each event is handled on its own, and a failure is logged and
recorded, never raised (the API cast them and answered already).

- ``volume-extended`` (tag: the volume id): under the per-instance lock,
  the server's record of the volume takes the new size the event brings
  (``data["new_size"]``, GiB: computes make no volume-service calls) and the
  virt driver grows the guest's disk (libvirt: virDomainBlockResize).  Its
  outcome is the ``compute_extend_volume`` event of the ``extend_volume``
  instance action the API started.  A volume the server no longer has is
  a no-op, as in Nova.
- ``power-update`` (tag POWER_ON / POWER_OFF): only Ironic's driver acts
  on it in Nova; for any other driver Nova's compute fails the
  ``compute_power_update`` event (NotImplementedError) when the server is
  in the state the event would change, and does nothing otherwise.  So
  does this one.
- the network events and ``accelerator-request-bound``: accepted and
  ignored (there is no Neutron and no Cyborg).
"""
import logging

from volattach import exception
from volattach import objects
from volattach.compute import locks
from volattach.objects import external_event as event_obj
from volattach.objects import instance as instance_obj

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3


def handle(manager, context, instances, events):
    by_uuid = {i.uuid: i for i in instances}
    for event in events:
        instance = by_uuid.get(event.instance_uuid)
        if instance is None:
            LOG.warning("event %s for %s came without its server",
                        event.key, event.instance_uuid)
            continue
        LOG.debug("received event %s for %s", event.key, instance.uuid)
        try:
            if event.name == event_obj.VOLUME_EXTENDED:
                _recorded(context, instance, manager.host,
                          "compute_extend_volume", extend_volume,
                          manager, context, instance, event)
            elif event.name == event_obj.POWER_UPDATE:
                _recorded(context, instance, manager.host,
                          "compute_power_update", power_update, instance,
                          event)
        except Exception:
            # an event whose outcome could not even be recorded: the
            # next one still runs
            LOG.exception("event %s for %s failed", event.key, instance.uuid)


def _recorded(context, instance, host, name, work, *args):
    """Run ``work`` as the instance action event ``name`` (Nova's
    wrap_instance_event): Success, or Error with the failure's text."""
    record = objects.InstanceActionEvent.event_start(
        context, instance.uuid, name, host=host)
    error = None
    try:
        work(*args)
    except Exception as e:
        LOG.warning("%s of %s failed: %s", name, instance.uuid, e)
        error = e
    record.finish(error)


def extend_volume(manager, context, instance, event):
    volume_id = event.tag
    new_size = int(event.data["new_size"])
    with locks.lock(instance.uuid):
        try:
            bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                context, volume_id, instance.uuid)
        except exception.NotFound:
            LOG.warning("extend of volume %s: it is not attached to %s",
                        volume_id, instance.uuid)
            return
        if not bdm.connection_info:
            LOG.warning("extend of volume %s of %s: no connection yet",
                        volume_id, instance.uuid)
            return
        bdm.volume_size = new_size
        bdm.save()
        if bdm.device_name not in manager.driver.volume_device_names(
                instance):
            # a detach that unplugged it, an attach that has not plugged it
            # yet, a guest that left this host: nothing to grow here, and
            # a later plug opens the volume at its new size
            LOG.info("volume %s of %s grew to %d GiB; its disk is not "
                     "plugged here", volume_id, instance.uuid, new_size)
            return
        LOG.info("volume %s of %s grew to %d GiB; growing the guest's disk",
                 volume_id, instance.uuid, new_size)
        manager.driver.extend_volume(instance, bdm.get_connection_info(),
                                     bdm.device_name, new_size * GiB,
                                     mode=_mode(bdm))


def _mode(bdm):
    if bdm.obj_attr_is_set("attach_mode") and bdm.attach_mode:
        return bdm.attach_mode
    return "rw"


def power_update(instance, event):
    target = event.tag
    applies = instance.task_state is None and (
        (target == event_obj.POWER_ON
         and instance.vm_state == instance_obj.STOPPED)
        or (target == event_obj.POWER_OFF
            and instance.vm_state == instance_obj.ACTIVE))
    if not applies:
        LOG.info("power-update %s of %s is a no-op in vm_state %s, "
                 "task_state %s", target, instance.uuid, instance.vm_state,
                 instance.task_state)
        return
    # Nova's drivers other than Ironic's: NotImplementedError
    raise NotImplementedError(
        "power-update events are only handled for bare-metal servers")
