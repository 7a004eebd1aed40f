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
from volattach.objects import block_device as block_device_obj
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


class LiveMigrationTask(base.TaskBase):
    """os-migrateLive's workflow: move the running server to ``host`` (or
    one the scheduler picks).

    For each volume a second attachment of the same server, connected with
    the destination's connector and the same attach mode; then the
    destination connects them, the source moves the guest, the guest runs
    on the destination, the source forgets it and disconnects the old
    connections; only then are the BDMs switched and the source
    attachments deleted.  Any failure before the switch undoes the steps
    taken: the destination disconnects (once it connected), the
    destination attachments go, and the server stays on the source as it
    was (task_state None).  Past the source's cleanup the move is final.
    """

    EVENTS = ("compute_live_migration_attach_destination",
              "compute_pre_live_migration", "compute_live_migration",
              "compute_post_live_migration_at_source")

    def __init__(self, context, instance, host=None, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.host = host
        self.source = instance.host
        self.dest = None
        self.migration = None
        self.event = None
        # the step running, named as its instance-action event
        self.step = "compute_live_migration_select_destination"

    def _begin(self, step, host):
        self.step = step
        self.event = base.Event(self.context, self.instance.uuid, step, host)

    def _execute(self):
        from volattach.objects import service as service_obj
        context, instance = self.context, self.instance
        self.migration = self._record_start(context, instance, self.host)
        self._did("put the task state back", self._reset_task_state,
                  "migrating")
        if not self.source:
            raise exception.InstanceInvalidState(
                method="live_migrate", instance_uuid=instance.uuid,
                attr="host", state=None)
        minimum = max(base.min_version_for(context, instance) or 0,
                      service_obj.LIVE_MIGRATION_SERVICE_VERSION)
        group = objects.InstanceGroup.get_by_instance_uuid(context,
                                                           instance.uuid)
        if group is not None:
            # chosen and recorded under the group's lock: a destination
            # that breaks a hard policy is NoValidHost
            dest = self.dest = scheduler.select_destination_in_group(
                context, group, instance, self.host, minimum,
                migration_id=getattr(self.migration, "id", None))
        else:
            dest = self.dest = scheduler.select_host(
                context, ":%s" % self.host if self.host else None, minimum,
                exclude=(self.source,))
        for name in (self.source, dest):
            if not self.compute_rpcapi.can_send_version(name, "1.3"):
                raise exception.ComputeTooOldForFeature(
                    host=name, feature="live migration")
        source_service = objects.Service.get_by_host_and_binary(
            context.elevated(), self.source, compute_rpcapi.BINARY)
        if source_service is None or (
                source_service.version < service_obj.LIVE_MIGRATION_SERVICE_VERSION):
            raise exception.ComputeTooOldForFeature(host=self.source,
                                                    feature="live migration")
        self._record(self.migration, migration_obj.PREPARING,
                     dest_compute=dest, dest_node=dest)

        self._begin("compute_live_migration_attach_destination", dest)
        bdms = self._records_once_attached()
        old_bdms = [b for b in bdms if b.is_volume and b.attachment_id]
        new_bdms = [self._attach_destination(bdm) for bdm in old_bdms]
        self.event.success()

        self._begin("compute_pre_live_migration", dest)
        migrate_data = self.compute_rpcapi.pre_live_migration(
            context, instance, new_bdms, dest)
        self._did("disconnect the volumes at %s" % dest,
                  self.compute_rpcapi.rollback_live_migration_at_destination,
                  context, instance, new_bdms, dest)
        self.event.success()

        self._record(self.migration, migration_obj.RUNNING)
        self._begin("compute_live_migration", self.source)
        self.compute_rpcapi.live_migration(context, instance, dest,
                                           migrate_data=migrate_data)
        self.compute_rpcapi.post_live_migration_at_destination(
            context, instance, new_bdms, dest)
        self.event.success()

        self._begin("compute_post_live_migration_at_source", self.source)
        self.compute_rpcapi.post_live_migration_at_source(context, instance,
                                                          old_bdms)
        # the switch is done: the server runs on dest with the new
        # attachments; from here the move only goes forward
        self._commit_steps()
        for bdm, new in zip(old_bdms, new_bdms):
            try:
                self._switch(bdm, new)
            except Exception:
                LOG.exception("switch of volume %s of %s to %s failed",
                              bdm.volume_id, instance.uuid, dest)
        self.step = "compute_live_migration_record_destination"
        instance.host = dest
        instance.node = dest
        instance.task_state = None
        instance.save(expected_task_state=["migrating"])

    def _attach_destination(self, bdm):
        """A second attachment of ``bdm``'s volume, connected to the
        destination (same attach mode); the copy of the record that holds
        it."""
        mode = bdm.attach_mode or block_device_obj.DEFAULT_ATTACH_MODE
        attachment = self.volume_api.attachment_create(
            self.context, bdm.volume_id, self.instance.uuid,
            mode="ro" if mode == "ro" else None)
        self._did("delete attachment %s" % attachment["id"],
                  self._delete_attachment, attachment["id"])
        attachment = self.volume_api.attachment_update(
            self.context, attachment["id"],
            self._connector(self.dest, bdm.device_name, mode),
            mountpoint=bdm.device_name)
        base.check_compute_takes_key(self.context, self.dest,
                                     attachment.get("connection_info"))
        new = bdm.obj_clone()
        new.attachment_id = attachment["id"]
        new.set_connection_info(
            self._connection_info(bdm.volume_id, attachment))
        new.obj_reset_changes()
        return new

    def _on_success(self):
        self._record(self.migration, migration_obj.COMPLETED)
        self.event.success()

    def rollback(self, error):
        LOG.warning("live migration of %s from %s to %s failed at %s: %s",
                    self.instance.uuid, self.source, self.dest, self.step,
                    error)
        # the record's final status before the undo, which ends with the
        # server's task state cleared: a client that waits for that (as
        # tempest does) then reads a finished record, never "running"
        self._record(self.migration, migration_obj.FAILED
                     if self.step in _MOVE_STEPS else migration_obj.ERROR)
        super().rollback(error)
        base.Event.failed(self.event, self.context, self.instance.uuid,
                          self.step, error)

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

    def _records_once_attached(self):
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
        instance = self.instance
        deadline = time.monotonic() + ATTACH_WAIT_SECONDS
        while True:
            bdms = base.retry_transient(
                objects.BlockDeviceMappingList.get_by_instance_uuid,
                self.context, instance.uuid)
            attaching = self._being_attached(bdms)
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

    def _being_attached(self, bdms):
        """The volumes of ``bdms`` whose attach is under way (a record
        without an attachment yet, or whose attachment is not attached);
        InstanceInvalidState while a detach of one is (it would remove a
        record this migration is about to move)."""
        instance = self.instance
        attaching = []
        for bdm in bdms:
            if not bdm.is_volume:
                continue
            if not bdm.attachment_id:
                if not bdm.connection_info:
                    attaching.append(bdm.volume_id)
                continue        # else a record of the old attach flow
            volume = self.volume_api.get(self.context, bdm.volume_id)
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

    def _switch(self, bdm, new):
        """Move one record onto its destination attachment and delete the
        source one.  A record a detach removed meanwhile: the volume leaves
        the destination too (disconnected there, its attachment deleted)."""
        context, instance, dest = self.context, self.instance, self.dest
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
            self._delete_logged(new.attachment_id)
        self._delete_logged(old_attachment_id)

    def _delete_logged(self, attachment_id):
        try:
            self._delete_attachment(attachment_id)
        except Exception:
            LOG.exception("could not delete attachment %s", attachment_id)
