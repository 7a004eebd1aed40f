"""Migration and MigrationList: the record of a server's move between
hosts (a live migration here), its source, destination and status, as
os-migrations and /servers/{id}/migrations show it."""
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception

LIVE_MIGRATION = "live-migration"
# Nova's migration types (volattach records live migrations only)
MIGRATION_TYPES = ("migration", "resize", LIVE_MIGRATION, "evacuation")

# A live migration's statuses, in the order the conductor sets them
# (conductor/tasks/live_migrate.py); "error" when it failed before the
# guest moved, "failed" when the move itself failed.
ACCEPTED = "accepted"
PREPARING = "preparing"
RUNNING = "running"
COMPLETED = "completed"
ERROR = "error"
FAILED = "failed"
# Nova's statuses of a live migration under way (/servers/{id}/migrations)
IN_PROGRESS = ("queued", PREPARING, RUNNING, "post-migrating")


class MigrationTypeField(fields.AutoTypedField):
    AUTO_TYPE = fields.Enum(valid_values=MIGRATION_TYPES)


@base.VolattachObjectRegistry.register
class Migration(base.VolattachPersistentObject, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "instance_uuid": fields.UUIDField(),
        "source_compute": fields.StringField(nullable=True),
        "dest_compute": fields.StringField(nullable=True),
        "source_node": fields.StringField(nullable=True),
        "dest_node": fields.StringField(nullable=True),
        "dest_host": fields.StringField(nullable=True),
        "old_instance_type_id": fields.IntegerField(nullable=True),
        "new_instance_type_id": fields.IntegerField(nullable=True),
        "status": fields.StringField(nullable=True),
        "migration_type": MigrationTypeField(nullable=True),
        "hidden": fields.BooleanField(default=False),
        "user_id": fields.StringField(nullable=True),
        "project_id": fields.StringField(nullable=True),
        "deleted": fields.BooleanField(default=False),
    })

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    @property
    def is_live_migration(self):
        return self.migration_type == LIVE_MIGRATION

    @property
    def in_progress(self):
        return self.status in IN_PROGRESS

    @base.remotable
    def create(self):
        """Store this migration; the user and project default to the
        context's (who asked for the move), the uuid to a new one."""
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create",
                                              reason="already created")
        values = {n: getattr(self, n) for n in self.obj_what_changed()}
        if not values.get("migration_type"):
            raise exception.ObjectActionError(
                action="create", reason="a migration needs a migration_type")
        if "user_id" not in values:
            values["user_id"] = self._context.user_id
        if "project_id" not in values:
            values["project_id"] = self._context.project_id
        base.fill(self, db_api.migration_create(values))

    @base.remotable
    def save(self):
        from volattach.db import api as db_api
        values = {n: getattr(self, n) for n in self.obj_what_changed()
                  if n not in ("id", "uuid", "created_at", "updated_at")}
        if values:
            base.fill(self, db_api.migration_update(self.id, values))

    @classmethod
    @base.remotable
    def get_by_id(cls, context, migration_id):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.migration_get(migration_id))

    @classmethod
    @base.remotable
    def get_by_id_and_instance(cls, context, migration_id, instance_uuid):
        """MigrationNotFoundForInstance unless ``instance_uuid`` has a
        migration ``migration_id``."""
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.migration_get_by_id_and_instance(
            migration_id, instance_uuid))


@base.VolattachObjectRegistry.register
class MigrationList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("Migration")}

    @classmethod
    def _from_rows(cls, context, rows):
        return cls(context, objects=[Migration._from_row(context, r)
                                     for r in rows])

    @classmethod
    @base.remotable
    def get_by_filters(cls, context, filters, limit=None, marker=None):
        """Newest first; ``filters`` and ``marker`` (a migration uuid) as
        ``db_api.migration_get_all_by_filters`` takes them."""
        from volattach.db import api as db_api
        return cls._from_rows(context, db_api.migration_get_all_by_filters(
            filters, limit=limit, marker=marker))

    @classmethod
    @base.remotable
    def get_in_progress_by_instance(cls, context, instance_uuid,
                                    migration_type=None):
        """The server's migrations under way (IN_PROGRESS), oldest first."""
        from volattach.db import api as db_api
        return cls._from_rows(context,
                              db_api.migration_get_by_instance_and_statuses(
                                  instance_uuid, IN_PROGRESS, migration_type))
