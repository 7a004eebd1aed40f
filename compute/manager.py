"""The compute manager: RPC endpoints of a compute host.

Host-local work only, under the per-instance lock: pick device names, plug
and unplug volumes with the virt driver, build and destroy guests.  Objects
are read and saved through the conductor (``indirection_api``); there is no
database and no Cinder client here.  Every failure leaves the host as it
was before the call (a connected volume whose attach failed is disconnected)
and is raised to the conductor, which owns the rollback of the workflow.

Host connections go through ``compute.connections``: connect and disconnect
of a volume run under the lock of its target (after the instance lock, one
target lock at a time), and a shared target is disconnected only by the
last attachment of this host that uses it.  ``HostConnections.rebuild``
recounts them from the block-device mappings when the service starts
(``compute.service.ComputeService``).
"""
import logging
import uuid as uuidlib

import oslo_messaging as messaging

from volattach import objects
from volattach.compute import connections as host_connections
from volattach.compute import external_events
from volattach.compute import locks
from volattach.objects import block_device as block_device_obj
from volattach import exception
from volattach.conf import CONF

LOG = logging.getLogger(__name__)


def _mode(bdm):
    """The BDM's attach mode (BlockDeviceMapping 1.1), rw when it has none."""
    if bdm.obj_attr_is_set("attach_mode") and bdm.attach_mode:
        return bdm.attach_mode
    return block_device_obj.DEFAULT_ATTACH_MODE


class ComputeManager:
    target = messaging.Target(version="1.11")

    def __init__(self, host, driver):
        self.host = host
        self.driver = driver
        self.connections = host_connections.HostConnections(host)

    # -- host connections (under the target's lock) ---------------------------------
    def _connect(self, connection_info, instance, bdm=None):
        self.connections.connect(
            connection_info,
            lambda: self.driver.connect_volume(connection_info, instance),
            fallback=bdm.uuid if bdm is not None else None)

    def _disconnect(self, connection_info, instance, bdm=None):
        def disconnect(last):
            self.driver.disconnect_volume(connection_info, instance,
                                          disconnect_target=last)
        return self.connections.disconnect(
            connection_info, disconnect,
            fallback=bdm.uuid if bdm is not None else None)

    # -- device names -----------------------------------------------------------
    def reserve_block_device_name(self, context, instance, device, volume_id,
                                  tag=None, delete_on_termination=False,
                                  bdms=None, bdm_uuid=None):
        """Pick the next free device name and create the volume's BDM.

        ``bdms`` (compute RPC 1.4) is the server's mappings as the conductor
        read them just before the call: the name is picked from them and
        the BDM created in one call back to the conductor, which writes it
        only if no mapping was added since.  When one was (a concurrent
        attach got the lock first), or when the list fails a check (it may
        be stale), or without ``bdms`` (an older conductor), the mappings
        are read again through the conductor and decide, as before 1.4.

        ``bdm_uuid`` (1.9) is the uuid the record gets, so that a conductor
        whose call got no answer can find the record and destroy it.  A
        request delivered again finds its record and returns it.
        """
        with locks.lock(instance.uuid):
            if bdms is not None:
                bdm = self._reserve_from_listing(context, instance, device,
                                                 volume_id, tag,
                                                 delete_on_termination, bdms,
                                                 bdm_uuid)
                if bdm is not None:
                    return bdm
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            made = [b for b in bdms if bdm_uuid and b.uuid == bdm_uuid]
            if made:
                return made[0]
            self._check_can_attach(instance, volume_id, bdms)
            bdm = self._new_bdm(context, instance, device, volume_id, tag,
                                delete_on_termination, bdms, bdm_uuid)
            bdm.create()
            return bdm

    def _reserve_from_listing(self, context, instance, device, volume_id, tag,
                              delete_on_termination, bdms, bdm_uuid):
        """The BDM created from the conductor's listing ``bdms``, or None
        when the listing cannot be trusted to decide (see the caller)."""
        try:
            self._check_can_attach(instance, volume_id, bdms)
            bdm = self._new_bdm(context, instance, device, volume_id, tag,
                                delete_on_termination, bdms, bdm_uuid)
        except (exception.VolumeAlreadyAttached, exception.TooManyDiskDevices,
                exception.DevicePathInUse):
            return None
        if not bdm.create_if_none_added([b.id for b in bdms]):
            LOG.debug("mappings of %s changed since the conductor listed them; "
                      "reading them again", instance.uuid)
            return None
        return bdm

    @staticmethod
    def _check_can_attach(instance, volume_id, bdms):
        if any(b.volume_id == volume_id for b in bdms):
            raise exception.VolumeAlreadyAttached(volume_id=volume_id,
                                                  server_id=instance.uuid)
        limit = CONF.compute.max_disk_devices_to_attach
        if limit >= 0 and len(bdms) >= limit:
            raise exception.TooManyDiskDevices(maximum=limit)

    def _new_bdm(self, context, instance, device, volume_id, tag,
                 delete_on_termination, bdms, bdm_uuid=None):
        """The volume's BDM (not created yet), named by the driver."""
        used = [b.device_name for b in bdms if b.device_name]
        name = self.driver.get_device_name_for_instance(instance, used, device)
        return objects.BlockDeviceMapping(
            context, uuid=bdm_uuid or str(uuidlib.uuid4()),
            instance_uuid=instance.uuid,
            source_type="volume", destination_type="volume",
            volume_id=volume_id, device_name=name, boot_index=None,
            tag=tag, delete_on_termination=delete_on_termination)

    # -- volumes ------------------------------------------------------------------
    def attach_volume(self, context, instance, bdm, attach_mode=None):
        """Connect the volume on this host and plug it into the guest
        (read-only when ``attach_mode`` is ``ro``; compute RPC 1.2)."""
        with locks.lock(instance.uuid):
            connection_info = bdm.get_connection_info()
            self._connect(connection_info, instance, bdm)
            try:
                self.driver.attach_volume(instance, connection_info, bdm.device_name,
                                          mode=attach_mode or _mode(bdm))
            except Exception:
                LOG.exception("attach of volume %s to %s failed; disconnecting",
                              bdm.volume_id, instance.uuid)
                self._safe_disconnect(connection_info, instance, bdm)
                raise

    def detach_volume(self, context, instance, bdm):
        """Unplug the volume from the guest and disconnect it from the host."""
        with locks.lock(instance.uuid):
            connection_info = bdm.get_connection_info()
            self.driver.detach_volume(instance, connection_info, bdm.device_name)
            if connection_info:
                self._disconnect(connection_info, instance, bdm)

    def swap_volume(self, context, instance, bdm, new_connection_info):
        """Connect the new volume, swap it in at the BDM's device, disconnect
        the old one.  On failure the old volume stays plugged."""
        with locks.lock(instance.uuid):
            old_connection_info = bdm.get_connection_info()
            self._connect(new_connection_info, instance)
            try:
                self.driver.swap_volume(instance, old_connection_info,
                                        new_connection_info, bdm.device_name)
            except Exception:
                self._safe_disconnect(new_connection_info, instance)
                raise
            if old_connection_info:
                self._safe_disconnect(old_connection_info, instance, bdm)

    def assign_device_names(self, context, instance, bdms):
        """Name the devices of volumes attached while the server was
        offloaded (they have none), as this host's driver would."""
        with locks.lock(instance.uuid):
            used = [b.device_name for b in bdms if b.device_name]
            for bdm in bdms:
                if bdm.is_volume and not bdm.device_name:
                    bdm.device_name = self.driver.get_device_name_for_instance(
                        instance, used, None)
                    used.append(bdm.device_name)
                    bdm.save()
            return bdms

    def _safe_disconnect(self, connection_info, instance, bdm=None):
        try:
            self._disconnect(connection_info, instance, bdm)
        except Exception:
            LOG.exception("disconnect during rollback failed")

    # -- servers ------------------------------------------------------------------
    def build_and_run_instance(self, context, instance, bdms):
        """Connect the server's volumes and spawn the guest."""
        with locks.lock(instance.uuid):
            connected = []
            try:
                block_device_info = []
                for bdm in bdms:
                    if not bdm.is_volume:
                        continue
                    info = bdm.get_connection_info()
                    self._connect(info, instance, bdm)
                    connected.append((info, bdm))
                    block_device_info.append({"device_name": bdm.device_name,
                                              "connection_info": info,
                                              "mode": _mode(bdm)})
                self.driver.spawn(instance, block_device_info)
            except Exception:
                for info, bdm in connected:
                    self._safe_disconnect(info, instance, bdm)
                raise

    def terminate_instance(self, context, instance, bdms):
        """Destroy the guest and disconnect its volumes from this host."""
        with locks.lock(instance.uuid):
            self.driver.destroy(instance)
            for bdm in bdms:
                if bdm.is_volume and bdm.connection_info:
                    self._safe_disconnect(bdm.get_connection_info(), instance, bdm)

    def power_off_instance(self, context, instance):
        with locks.lock(instance.uuid):
            self.driver.power_off(instance)

    def power_on_instance(self, context, instance, bdms=None,
                          previous_connection_info=None):
        """``bdms`` (compute RPC 1.10): as reboot_instance's; the guest
        starts with its disks plugged again from them."""
        with locks.lock(instance.uuid):
            if bdms is None:
                self.driver.power_on(instance)
                return
            self.driver.power_on(instance, block_device_info=(
                self._reconnect_plugged(instance, bdms,
                                        previous_connection_info)))

    def get_console_output(self, context, instance, tail_length=None):
        """The guest's console; the last ``tail_length`` lines when set
        (0: nothing), as Nova's compute answers."""
        output = self.driver.get_console_output(instance)
        if tail_length is None:
            return output
        if tail_length == 0:
            return ""
        return "\n".join(output.split("\n")[-tail_length:])

    def pause_instance(self, context, instance):
        with locks.lock(instance.uuid):
            self.driver.pause(instance)

    def unpause_instance(self, context, instance):
        with locks.lock(instance.uuid):
            self.driver.unpause(instance)

    # -- compute RPC 1.6 -----------------------------------------------------------
    def suspend_instance(self, context, instance):
        with locks.lock(instance.uuid):
            self.driver.suspend(instance)

    def resume_instance(self, context, instance):
        with locks.lock(instance.uuid):
            self.driver.resume(instance)

    def reboot_instance(self, context, instance, reboot_type, bdms=None,
                        previous_connection_info=None):
        """``bdms`` (compute RPC 1.10, a HARD reboot): the server's
        mappings with the connections the conductor just refreshed.  The
        volumes the guest has plugged (read under the instance lock, as
        rebuild does: an attach or detach in flight is left alone) are
        connected with them and the driver plugs its disks again from them
        on the new boot, as Nova's hard reboot regenerates the guest from
        its block_device_info."""
        with locks.lock(instance.uuid):
            if bdms is None:
                self.driver.reboot(instance, reboot_type)
                return
            self.driver.reboot(instance, reboot_type, block_device_info=(
                self._reconnect_plugged(instance, bdms,
                                        previous_connection_info)))

    def _reconnect_plugged(self, instance, bdms, previous=None):
        """Connect the volumes of ``bdms`` that the guest has plugged with
        their (fresh) connections; their block_device_info.  A volume whose
        host connection moved (``previous``: bdm uuid -> its connection
        before, e.g. an iSCSI portal readdressed) lets the old one go
        first, so that it is not left open and counted for ever."""
        plugged = self.driver.volume_device_names(instance)
        block_device_info = []
        for bdm in bdms:
            if (bdm.is_volume and bdm.connection_info
                    and bdm.device_name in plugged):
                info = bdm.get_connection_info()
                old = (previous or {}).get(bdm.uuid)
                if old and (host_connections.target_key(old, bdm.uuid)
                            != host_connections.target_key(info, bdm.uuid)):
                    self._safe_disconnect(old, instance, bdm)
                self._connect(info, instance, bdm)
                block_device_info.append(
                    {"device_name": bdm.device_name,
                     "connection_info": info, "mode": _mode(bdm)})
        return block_device_info

    # -- compute RPC 1.7 -----------------------------------------------------------
    def rebuild_instance(self, context, instance, bdms, power_on):
        """Destroy the guest and spawn it again from its (new) image with
        the same volume connections: this host's connections and the
        attachments do not change.  ``power_on`` False leaves it stopped.

        The new guest gets exactly the volumes the old one had plugged in
        (read under the instance lock, which attach and detach take for
        their host-local steps), with their records read again here: an
        attach whose plug has not run yet plugs into the new guest
        afterwards, a detach that already unplugged is not undone."""
        with locks.lock(instance.uuid):
            plugged = self.driver.volume_device_names(instance)
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            self.driver.destroy(instance)
            self.driver.spawn(instance, [
                d for d in self._block_device_info(bdms)
                if d["device_name"] in plugged])
            if not power_on:
                self.driver.power_off(instance)

    # -- live migration (compute RPC 1.3) ---------------------------------------------
    @staticmethod
    def _block_device_info(bdms):
        return [{"device_name": b.device_name,
                 "connection_info": b.get_connection_info(), "mode": _mode(b)}
                for b in bdms if b.is_volume and b.connection_info]

    def pre_live_migration(self, context, instance, bdms):
        """Destination: connect the volumes with the connection_info of
        their new attachments (``bdms``, not saved) and get the guest's
        place ready; returns the driver's LiveMigrateData for the source
        (or None).  On failure whatever this call connected is
        disconnected again."""
        with locks.lock(instance.uuid):
            connected = []
            try:
                for bdm in bdms:
                    if not (bdm.is_volume and bdm.connection_info):
                        continue
                    info = bdm.get_connection_info()
                    self._connect(info, instance, bdm)
                    connected.append((info, bdm))
                return self.driver.pre_live_migration(
                    instance, self._block_device_info(bdms))
            except Exception:
                for info, bdm in connected:
                    self._safe_disconnect(info, instance, bdm)
                raise

    def live_migration(self, context, instance, dest, migrate_data=None):
        """Source: move the guest to ``dest`` (the switch); ``migrate_data``
        is what the destination's pre_live_migration returned (1.8)."""
        with locks.lock(instance.uuid):
            self.driver.live_migration(instance, dest, migrate_data)

    def post_live_migration_at_destination(self, context, instance, bdms):
        """Destination: the guest runs here now, with the new connections."""
        with locks.lock(instance.uuid):
            power = "paused" if instance.vm_state == "paused" else "running"
            self.driver.post_live_migration_at_destination(
                instance, self._block_device_info(bdms), power=power)

    def post_live_migration_at_source(self, context, instance, bdms):
        """Source: forget the guest and disconnect its old connections
        (``bdms``: the mappings as they were here)."""
        with locks.lock(instance.uuid):
            self.driver.post_live_migration(instance)
            for bdm in bdms:
                if bdm.is_volume and bdm.connection_info:
                    self._safe_disconnect(bdm.get_connection_info(), instance, bdm)

    def rollback_live_migration_at_destination(self, context, instance, bdms):
        """Destination: drop the guest if it arrived and disconnect the new
        connections (``bdms``: with the new connection_info)."""
        with locks.lock(instance.uuid):
            self.driver.rollback_live_migration_at_destination(instance)
            for bdm in bdms:
                if bdm.is_volume and bdm.connection_info:
                    self._safe_disconnect(bdm.get_connection_info(), instance, bdm)

    # -- compute RPC 1.11 ------------------------------------------------------------
    def external_instance_event(self, context, instances, events):
        """The events posted to the API about servers of this host
        (``compute.external_events``): each handled on its own, none
        raised (a cast)."""
        external_events.handle(self, context, instances, events)
