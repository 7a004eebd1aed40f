"""Client side of the compute RPC API (used by the conductor).

API version history:

    1.0 - Initial version: reserve_block_device_name, attach_volume,
          detach_volume, build_and_run_instance, terminate_instance,
          power_off_instance, power_on_instance
    1.1 - swap_volume, assign_device_names (unshelve of an offloaded
          server), pause_instance, unpause_instance
    1.2 - attach_volume carries attach_mode, and build_and_run_instance
          and swap_volume honour BlockDeviceMapping.attach_mode (read-only
          attachments, the multiattach-enhancements spec)
    1.3 - pre_live_migration, live_migration,
          post_live_migration_at_destination, post_live_migration_at_source,
          rollback_live_migration_at_destination (live migration of servers
          with volumes)
    1.4 - reserve_block_device_name takes bdms, the server's mappings as
          the conductor just read them: the compute names the device from
          them and creates the BDM in one call back to the conductor
          (BlockDeviceMapping 1.2's create_if_none_added) instead of two;
          that call needs a conductor of service version 5, which every
          conductor is once computes run 1.4 (conductors upgrade first)
    1.5 - get_console_output (os-getConsoleOutput, called by the API)
    1.6 - suspend_instance, resume_instance, reboot_instance
    1.7 - rebuild_instance
    1.8 - pre_live_migration returns the destination's LiveMigrateData
          (None from a driver that needs none) and live_migration takes
          it as migrate_data: how the source's hypervisor reaches the
          destination's (the libvirt driver's live migration)
    1.9 - reserve_block_device_name takes bdm_uuid, the uuid the new BDM
          gets: a conductor whose call got no answer (a broker restart
          lost it) finds and destroys the record the compute made
    1.10 - reboot_instance and power_on_instance take bdms: on a HARD
          reboot or a start the server's mappings with the connection_info
          the conductor just refreshed (attachment_update), and the compute
          plugs the disks again from them (a moved Ceph monitor or NBD
          export is reached on the new boot); previous_connection_info
          (bdm uuid -> the connection before) lets it close a host
          connection the new one no longer rides on.  An older compute
          gets the 1.6 (1.0) call and boots with the addresses it had.
    1.11 - external_instance_event (cast): the events other services
          posted to POST /os-server-external-events for servers of this
          host (InstanceExternalEvent 1.0); a volume-extended event brings
          the volume's new size, and the host grows the guest's disk.  The
          API answers an event for a server on an older compute with 422.

When adding a method or an argument: bump ``VERSION``, add a line above, add
a line to ``objects.service.SERVICE_VERSION_HISTORY`` and bump
``SERVICE_VERSION``, and make the compute manager's ``target`` match.
tests/unit/test_versions.py fails if one of these moves without the others.

The client caps itself (``[upgrade_levels] compute``): ``auto`` means the RPC
version of the oldest running compute, read from the services table and
cached for ``_CAP_TTL`` seconds, so a rolling upgrade needs no restart of the
conductor.
"""
import threading
import time

import oslo_messaging as messaging

from volattach import exception
from volattach import rpc
from volattach.objects import service as service_obj
from volattach import context as volattach_context
from volattach.conf import CONF

TOPIC = "compute"
BINARY = "volattach-compute"
_CAP_TTL = 10.0


class ComputeAPI:
    VERSION = "1.11"

    def __init__(self):
        self._cap_lock = threading.Lock()
        self._cap = None
        self._cap_time = 0.0
        self._clients = {}

    # -- version cap --------------------------------------------------------------
    def version_cap(self):
        level = CONF.upgrade_levels.compute
        if not level:
            return None
        if level != "auto":
            return level
        now = time.monotonic()
        with self._cap_lock:
            if self._cap is not None and now - self._cap_time < _CAP_TTL:
                return self._cap
        from volattach.objects.service import Service
        minimum = Service.get_minimum_version(volattach_context.get_admin_context(),
                                              BINARY)
        cap = service_obj.compute_rpc_for_service_version(minimum) or self.VERSION
        with self._cap_lock:
            self._cap, self._cap_time = cap, now
        return cap

    def _client(self, host, timeout=None):
        cap = self.version_cap()
        key = (host, cap, timeout)
        client = self._clients.get(key)
        if client is None:
            target = messaging.Target(topic=TOPIC, server=host, version=self.VERSION)
            client = rpc.get_client(target, version_cap=cap, timeout=timeout)
            self._clients[key] = client
        return client

    # -- calls ----------------------------------------------------------------------
    def reserve_block_device_name(self, ctxt, instance, device, volume_id,
                                  tag=None, delete_on_termination=False,
                                  bdms=None, bdm_uuid=None):
        """``bdms``: the server's BlockDeviceMappingList, read by the caller
        just before; sent to computes of 1.4 and up (older ones read it
        themselves through the conductor).  ``bdm_uuid``: the uuid of the
        record to create, sent to computes of 1.9 and up (older ones make
        their own)."""
        client = self._client(instance.host)
        kwargs = dict(instance=instance, device=device, volume_id=volume_id,
                      tag=tag, delete_on_termination=delete_on_termination)
        if bdm_uuid is not None and client.can_send_version("1.9"):
            return client.prepare(version="1.9").call(
                ctxt, "reserve_block_device_name", bdms=bdms,
                bdm_uuid=bdm_uuid, **kwargs)
        if bdms is not None and client.can_send_version("1.4"):
            return client.prepare(version="1.4").call(
                ctxt, "reserve_block_device_name", bdms=bdms, **kwargs)
        return client.prepare(version="1.0").call(
            ctxt, "reserve_block_device_name", **kwargs)

    def sends_mappings_with_reserve(self, host):
        """Whether reserve_block_device_name to ``host`` carries the
        server's mappings (compute RPC 1.4): only then are they worth
        reading before the call."""
        return self._client(host).can_send_version("1.4")

    def attach_volume(self, ctxt, instance, bdm, attach_mode=None):
        client = self._client(instance.host)
        if client.can_send_version("1.2"):
            return client.prepare(version="1.2").call(
                ctxt, "attach_volume", instance=instance, bdm=bdm,
                attach_mode=attach_mode)
        # A compute older than 1.2 attaches read/write only: the API refuses
        # read-only attaches to it (ComputeTooOldForFeature).
        return client.prepare(version="1.0").call(ctxt, "attach_volume",
                                                  instance=instance, bdm=bdm)

    def detach_volume(self, ctxt, instance, bdm):
        cctxt = self._client(instance.host).prepare(version="1.0")
        return cctxt.call(ctxt, "detach_volume", instance=instance, bdm=bdm)

    def build_and_run_instance(self, ctxt, instance, bdms):
        cctxt = self._client(instance.host).prepare(version="1.0")
        return cctxt.call(ctxt, "build_and_run_instance", instance=instance, bdms=bdms)

    def terminate_instance(self, ctxt, instance, bdms):
        cctxt = self._client(instance.host).prepare(version="1.0")
        return cctxt.call(ctxt, "terminate_instance", instance=instance, bdms=bdms)

    def power_off_instance(self, ctxt, instance):
        cctxt = self._client(instance.host).prepare(version="1.0")
        return cctxt.call(ctxt, "power_off_instance", instance=instance)

    def power_on_instance(self, ctxt, instance, bdms=None,
                          previous_connection_info=None):
        """``bdms``: as reboot_instance's (compute RPC 1.10)."""
        client = self._client(instance.host)
        if bdms is not None and client.can_send_version("1.10"):
            return client.prepare(version="1.10").call(
                ctxt, "power_on_instance", instance=instance, bdms=bdms,
                previous_connection_info=previous_connection_info)
        return client.prepare(version="1.0").call(
            ctxt, "power_on_instance", instance=instance)

    def get_console_output(self, ctxt, instance, tail_length=None):
        client = self._client(instance.host)
        if not client.can_send_version("1.5"):
            raise exception.ConsoleNotAvailable()
        return client.prepare(version="1.5").call(
            ctxt, "get_console_output", instance=instance,
            tail_length=tail_length)

    def can_send_version(self, host, version):
        return self._client(host).can_send_version(version)

    def pause_instance(self, ctxt, instance):
        cctxt = self._client(instance.host).prepare(version="1.1")
        return cctxt.call(ctxt, "pause_instance", instance=instance)

    def unpause_instance(self, ctxt, instance):
        cctxt = self._client(instance.host).prepare(version="1.1")
        return cctxt.call(ctxt, "unpause_instance", instance=instance)

    def _call_16(self, ctxt, instance, method, **kwargs):
        client = self._client(instance.host)
        if not client.can_send_version("1.6"):
            raise exception.ComputeTooOldForFeature(host=instance.host,
                                                    feature=method)
        return client.prepare(version="1.6").call(ctxt, method,
                                                  instance=instance, **kwargs)

    def suspend_instance(self, ctxt, instance):
        return self._call_16(ctxt, instance, "suspend_instance")

    def resume_instance(self, ctxt, instance):
        return self._call_16(ctxt, instance, "resume_instance")

    def reboot_instance(self, ctxt, instance, reboot_type, bdms=None,
                        previous_connection_info=None):
        """``bdms``: the server's mappings with fresh connections (a HARD
        reboot), sent to computes of 1.10 and up with
        ``previous_connection_info`` (bdm uuid -> the connection before);
        an older one reboots with the disks it has."""
        client = self._client(instance.host)
        if bdms is not None and client.can_send_version("1.10"):
            return client.prepare(version="1.10").call(
                ctxt, "reboot_instance", instance=instance,
                reboot_type=reboot_type, bdms=bdms,
                previous_connection_info=previous_connection_info)
        return self._call_16(ctxt, instance, "reboot_instance",
                             reboot_type=reboot_type)

    def reconnects_on_reboot(self, host):
        """Whether reboot_instance and power_on_instance to ``host``
        carry the mappings (compute RPC 1.10): only then are they worth
        refreshing."""
        return self._client(host).can_send_version("1.10")

    def rebuild_instance(self, ctxt, instance, bdms, power_on):
        """Re-create the guest from ``instance.image_ref`` with the
        volumes of ``bdms`` (compute RPC 1.7)."""
        client = self._client(instance.host)
        if not client.can_send_version("1.7"):
            raise exception.ComputeTooOldForFeature(host=instance.host,
                                                    feature="rebuild")
        return client.prepare(version="1.7").call(
            ctxt, "rebuild_instance", instance=instance, bdms=bdms,
            power_on=power_on)

    def external_instance_event(self, ctxt, instances, events, host):
        """Hand ``events`` (InstanceExternalEvent) about ``instances`` to
        ``host``'s compute: one cast per host (compute RPC 1.11).
        ComputeTooOldForFeature when the capped version cannot carry it
        (the API checks the compute's service version first)."""
        client = self._client(host)
        if not client.can_send_version("1.11"):
            raise exception.ComputeTooOldForFeature(
                host=host, feature="external events")
        client.prepare(version="1.11").cast(
            ctxt, "external_instance_event", instances=instances,
            events=events)

    def swap_volume(self, ctxt, instance, bdm, new_connection_info):
        cctxt = self._client(instance.host).prepare(version="1.1")
        return cctxt.call(ctxt, "swap_volume", instance=instance, bdm=bdm,
                          new_connection_info=new_connection_info)

    def assign_device_names(self, ctxt, instance, bdms):
        cctxt = self._client(instance.host).prepare(version="1.1")
        return cctxt.call(ctxt, "assign_device_names", instance=instance, bdms=bdms)

    # -- live migration (1.3): the conductor checks can_send_version("1.3")
    # for both hosts before it starts
    def _call_13(self, ctxt, host, method, **kwargs):
        cctxt = self._client(host).prepare(version="1.3")
        return cctxt.call(ctxt, method, **kwargs)

    def pre_live_migration(self, ctxt, instance, bdms, host):
        return self._call_13(ctxt, host, "pre_live_migration", instance=instance,
                             bdms=bdms)

    def live_migration(self, ctxt, instance, dest, migrate_data=None):
        """Move the guest; ``migrate_data`` (what the destination's
        pre_live_migration returned) goes to sources of 1.8 and up (older
        ones have no driver that reads it)."""
        client = self._client(instance.host)
        if migrate_data is not None and client.can_send_version("1.8"):
            return client.prepare(version="1.8").call(
                ctxt, "live_migration", instance=instance, dest=dest,
                migrate_data=migrate_data)
        return self._call_13(ctxt, instance.host, "live_migration",
                             instance=instance, dest=dest)

    def post_live_migration_at_destination(self, ctxt, instance, bdms, host):
        return self._call_13(ctxt, host, "post_live_migration_at_destination",
                             instance=instance, bdms=bdms)

    def post_live_migration_at_source(self, ctxt, instance, bdms):
        return self._call_13(ctxt, instance.host, "post_live_migration_at_source",
                             instance=instance, bdms=bdms)

    def rollback_live_migration_at_destination(self, ctxt, instance, bdms, host):
        return self._call_13(ctxt, host, "rollback_live_migration_at_destination",
                             instance=instance, bdms=bdms)
