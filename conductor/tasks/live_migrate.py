"""Live-migrate a server with its volumes: two attachments per volume until the switch.

The move is recorded as a migration (``objects.Migration``, os-migrations)
as Nova records it: "accepted" as the workflow starts (the destination
still unknown when the scheduler picks it), "preparing" once the
destination is chosen, "running" while the guest moves, "completed" after
the switch; "error" when it fails before the guest moves, "failed" when
the move fails.  The record is bookkeeping: a failure to write it is
logged and never stops the migration or its rollback.
"""
import logging
import time

from volattach import objects
from volattach.conductor.tasks import base
from volattach.compute import rpcapi as compute_rpcapi
from volattach.conductor import scheduler
from volattach import exception
from volattach.objects import migration as migration_obj

LOG = logging.getLogger(__name__)

# the steps from which a failure is the move's ("failed", not "error")
_MOVE_STEPS = ("compute_live_migration", "compute_post_live_migration_at_source")
# how long the migration waits for an attach of one of the server's volumes
# that is under way to finish (or give way) before it refuses
ATTACH_WAIT_SECONDS = 30.0
ATTACH_WAIT_INTERVAL = 0.1


def _flavor_id(instance):
    """The integer id of the server's flavor (None when not loaded)."""
    try:
        return instance.flavor.id
    except Exception:
        return None


class LiveMigrationTask(base.ManagerTask):
    """os-migrateLive's workflow."""

    def live_migrate_instance(self, context, instance, host=None):
        """Move the running server to ``host`` (or one the scheduler picks).

        For each volume a second attachment of the same server, connected
        with the destination's connector and the same attach mode; then the
        destination connects them, the source moves the guest, the guest
        runs on the destination, the source forgets it and disconnects the
        old connections; only then are the BDMs switched and the source
        attachments deleted.  Any failure before the switch deletes the
        destination attachments, disconnects them there, and leaves the
        server on the source as it was (task_state None).
        """
        from volattach.objects import service as service_obj
        source = instance.host
        dest = None
        migration = self._record_start(context, instance, host)
        new_attachments = {}      # bdm uuid -> new attachment id
        new_bdms = []
        dest_touched = False
        step = "compute_live_migration_select_destination"
        event = None
        try:
            if not source:
                raise exception.InstanceInvalidState(
                    method="live_migrate", instance_uuid=instance.uuid,
                    attr="host", state=None)
            minimum = max(base.min_version_for(context, instance) or 0,
                          service_obj.LIVE_MIGRATION_SERVICE_VERSION)
            dest = scheduler.select_host(context, ":%s" % host if host else None,
                                         minimum, exclude=(source,))
            for name in (source, dest):
                if not self.compute_rpcapi.can_send_version(name, "1.3"):
                    raise exception.ComputeTooOldForFeature(
                        host=name, feature="live migration")
            source_service = objects.Service.get_by_host_and_binary(
                context.elevated(), source, compute_rpcapi.BINARY)
            if source_service is None or (
                    source_service.version < service_obj.LIVE_MIGRATION_SERVICE_VERSION):
                raise exception.ComputeTooOldForFeature(host=source,
                                                        feature="live migration")
            self._record(migration, migration_obj.PREPARING, dest_compute=dest,
                         dest_node=dest)

            step = "compute_live_migration_attach_destination"
            event = base.Event(context, instance.uuid, step, dest)
            bdms = self._records_once_attached(context, instance)
            old_bdms = [b for b in bdms if b.is_volume and b.attachment_id]
            for bdm in old_bdms:
                mode = bdm.attach_mode or "rw"
                attachment = self.volume_api.attachment_create(
                    context, bdm.volume_id, instance.uuid,
                    mode="ro" if mode == "ro" else None)
                new_attachments[bdm.uuid] = attachment["id"]
                connector = self._connector(context, dest, bdm.device_name, mode)
                attachment = self.volume_api.attachment_update(
                    context, attachment["id"], connector, mountpoint=bdm.device_name)
                new = bdm.obj_clone()
                new.attachment_id = attachment["id"]
                new.set_connection_info(attachment["connection_info"])
                new.obj_reset_changes()
                new_bdms.append(new)
            event.success()

            step = "compute_pre_live_migration"
            event = base.Event(context, instance.uuid, step, dest)
            migrate_data = self.compute_rpcapi.pre_live_migration(
                context, instance, new_bdms, dest)
            dest_touched = True
            event.success()

            step = "compute_live_migration"
            self._record(migration, migration_obj.RUNNING)
            event = base.Event(context, instance.uuid, step, source)
            self.compute_rpcapi.live_migration(context, instance, dest,
                                               migrate_data=migrate_data)
            self.compute_rpcapi.post_live_migration_at_destination(
                context, instance, new_bdms, dest)
            event.success()

            step = "compute_post_live_migration_at_source"
            event = base.Event(context, instance.uuid, step, source)
            self.compute_rpcapi.post_live_migration_at_source(context, instance,
                                                              old_bdms)
        except Exception as error:
            LOG.warning("live migration of %s from %s to %s failed at %s: %s",
                        instance.uuid, source, dest, step, error)
            if dest_touched:
                try:
                    self.compute_rpcapi.rollback_live_migration_at_destination(
                        context, instance, new_bdms, dest)
                except Exception:
                    LOG.exception("rollback at %s failed", dest)
            for attachment_id in new_attachments.values():
                self._cleanup_attachment(context, attachment_id)
            self._reset_task_state(instance, "migrating")
            self._record(migration, migration_obj.FAILED if step in _MOVE_STEPS
                         else migration_obj.ERROR)
            base.Event.failed(event, context, instance.uuid, step, error)
            return
        # the switch is done: the server runs on dest with the new attachments
        for bdm in old_bdms:
            new = next(b for b in new_bdms if b.uuid == bdm.uuid)
            try:
                self._switch(context, instance, dest, bdm, new)
            except Exception:
                LOG.exception("switch of volume %s of %s to %s failed",
                              bdm.volume_id, instance.uuid, dest)
        try:
            instance.host = dest
            instance.node = dest
            instance.task_state = None
            instance.save(expected_task_state=["migrating"])
        except Exception as error:
            LOG.exception("could not record %s on %s", instance.uuid, dest)
            self._record(migration, migration_obj.ERROR)
            event.failure(error)
            return
        self._record(migration, migration_obj.COMPLETED)
        event.success()

    @staticmethod
    def _record_start(context, instance, host):
        """The migration record, "accepted", with what is known before the
        scheduler runs (the destination only when the caller named one);
        None when it could not be written."""
        try:
            migration = objects.Migration(context)
            migration.instance_uuid = instance.uuid
            migration.migration_type = migration_obj.LIVE_MIGRATION
            migration.status = migration_obj.ACCEPTED
            migration.source_compute = instance.host
            migration.source_node = instance.node
            migration.dest_compute = host
            migration.dest_node = None
            migration.dest_host = None
            migration.old_instance_type_id = _flavor_id(instance)
            migration.new_instance_type_id = _flavor_id(instance)
            migration.hidden = False
            migration.user_id = context.user_id
            migration.project_id = context.project_id
            migration.create()
            return migration
        except Exception:
            LOG.exception("could not record the live migration of %s",
                          instance.uuid)
            return None

    @staticmethod
    def _record(migration, status, **values):
        """Move the record to ``status`` (with ``values``); a failure is
        logged, never raised."""
        if migration is None:
            return
        try:
            for name, value in values.items():
                setattr(migration, name, value)
            migration.status = status
            migration.save()
        except Exception:
            LOG.exception("could not set migration %s to %s",
                          getattr(migration, "uuid", None), status)

    def _records_once_attached(self, context, instance):
        """The server's records, read once no attach of one of its volumes
        is under way (waiting up to ``ATTACH_WAIT_SECONDS``, then refused);
        refused at once while a detach is (``_being_attached``).

        An attach that passed the API's checks before ``migrating`` was set
        reads the task state again once its record exists: it either sees
        ``migrating`` and gives way (its record goes), or it made its record
        before this listing, which sees it and waits for it to finish (its
        attachment attached: it moves with the others) or to go.  Without
        the wait, it would plug the volume on the source after the guest
        left, with an attachment this migration does not move."""
        deadline = time.monotonic() + ATTACH_WAIT_SECONDS
        while True:
            bdms = base.retry_transient(
                objects.BlockDeviceMappingList.get_by_instance_uuid,
                context, instance.uuid)
            attaching = self._being_attached(context, instance, bdms)
            if not attaching:
                return bdms
            if time.monotonic() >= deadline:
                raise exception.InstanceInvalidState(
                    method="live_migrate", instance_uuid=instance.uuid,
                    attr="volume %s attachment" % attaching[0],
                    state="attaching")
            LOG.info("live migration of %s waits for the attach of volume(s) "
                     "%s", instance.uuid, ", ".join(attaching))
            time.sleep(ATTACH_WAIT_INTERVAL)

    def _being_attached(self, context, instance, bdms):
        """The volumes of ``bdms`` whose attach is under way (a record
        without an attachment yet, or whose attachment is not attached);
        InstanceInvalidState while a detach of one is (it would remove a
        record this migration is about to move)."""
        attaching = []
        for bdm in bdms:
            if not bdm.is_volume:
                continue
            if not bdm.attachment_id:
                if not bdm.connection_info:
                    attaching.append(bdm.volume_id)
                continue        # else a record of the old attach flow
            volume = base.retry_transient(self.volume_api.get, context,
                                          bdm.volume_id)
            if volume.get("status") == "detaching":
                raise exception.InstanceInvalidState(
                    method="live_migrate", instance_uuid=instance.uuid,
                    attr="volume %s status" % bdm.volume_id, state="detaching")
            # the volume view lists the attached attachments only
            if bdm.attachment_id not in {
                    a.get("attachment_id")
                    for a in volume.get("attachments") or ()}:
                attaching.append(bdm.volume_id)
        return attaching

    def _switch(self, context, instance, dest, bdm, new):
        """Move one record onto its destination attachment and delete the
        source one.  A record a detach removed meanwhile: the volume leaves
        the destination too (disconnected there, its attachment deleted)."""
        old_attachment_id = bdm.attachment_id
        try:
            self.volume_api.attachment_complete(context, new.attachment_id)
        except Exception:
            LOG.exception("attachment_complete of %s failed", new.attachment_id)
        bdm.attachment_id = new.attachment_id
        bdm.connection_info = new.connection_info
        try:
            bdm.save()
        except exception.BDMNotFound:
            LOG.warning("volume %s was detached from %s during its live "
                        "migration: removing it from %s", bdm.volume_id,
                        instance.uuid, dest)
            moved = instance.obj_clone()
            moved.host = dest
            try:
                self.compute_rpcapi.detach_volume(context, moved, new)
            except Exception:
                LOG.exception("detach of %s at %s failed", bdm.volume_id, dest)
            self._cleanup_attachment(context, new.attachment_id)
        self._cleanup_attachment(context, old_attachment_id)
