"""Migrations (os-migrations, /servers/{id}/migrations): the records the
conductor's live migrations write, read for admins."""
from volattach import objects
from volattach.api.compute import base
from volattach import exception
from volattach.objects import migration as migration_obj


class MigrationsAPI(base.FacadeBase):

    def get_migrations(self, context, filters, limit=None, marker=None):
        """Migrations matching ``filters``, newest first; ``marker`` is a
        migration uuid (MarkerNotFound when none has it)."""
        return list(objects.MigrationList.get_by_filters(
            context, filters, limit=limit, marker=marker))

    def get_migrations_in_progress_by_instance(
            self, context, instance_uuid,
            migration_type=migration_obj.LIVE_MIGRATION):
        return list(objects.MigrationList.get_in_progress_by_instance(
            context, instance_uuid, migration_type))

    def get_migration_by_id_and_instance(self, context, migration_id,
                                         instance_uuid):
        """MigrationNotFoundForInstance unless the server has that
        migration (an id that is not a number is no migration)."""
        try:
            number = int(migration_id)
        except (TypeError, ValueError):
            raise exception.MigrationNotFoundForInstance(
                migration_id=migration_id, instance_id=instance_uuid)
        return objects.Migration.get_by_id_and_instance(
            context, number, instance_uuid)
