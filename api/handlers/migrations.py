"""/os-migrations and /servers/{server_id}/migrations[/{migration_id}].

os-migrations (admin) lists the migration records newest first, filtered
by ``host`` (source or destination), ``status``, ``instance_uuid``,
``source_compute``, ``migration_type`` and ``hidden`` at every version
(unknown parameters are ignored until 2.59, refused from then on); from 2.59
it pages by ``limit`` and ``marker`` (a migration uuid; 400 when unknown) and
filters by ``changes-since`` (``changes-before`` 2.66) on ``updated_at``;
from 2.80 by ``user_id`` and ``project_id``.

/servers/{server_id}/migrations (admin, from 2.23; below it the route does
not exist) lists the server's live migrations in progress, and shows one of
them by id; any other migration is a 404.
"""
from oslo_utils import strutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import migrations as schemas
from volattach.api.views import migrations as view
from volattach import exception

RULE = "os_compute_api:os-migrations:%s"
SERVER_RULE = "os_compute_api:servers:migrations:%s"

# query parameter -> filter of the same name (the last value counts, as
# Nova reads them)
_FILTERS = ("host", "status", "instance_uuid", "source_compute",
            "migration_type", "user_id", "project_id")


def _filters(query):
    filters = {name: common.last(query, name) for name in _FILTERS
               if name in query}
    if "hidden" in query:
        filters["hidden"] = strutils.bool_from_string(
            common.last(query, "hidden"))
    since, before = common.changes_range(query)
    if since:
        filters["changes-since"] = since
    if before:
        filters["changes-before"] = before
    return filters


class Migrations(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.INDEX_QUERY,
                                          common.query(req))
        policy.authorize(ctx, RULE % "index")
        limit = marker = None
        if mv.matches("2.59"):
            limit, marker = common.limit_and_marker(self.conf, query)
        # below 2.59 the schema dropped what is not a filter there
        # (changes-since, limit, marker...): Nova ignores them too
        migrations = self.compute.get_migrations(ctx, _filters(query),
                                                 limit=limit, marker=marker)
        common.send(resp, view.index(req, self.conf, migrations, query))


class ServerMigrations(common.Resource):

    def _instance(self, req, server_id, action, versioned_query):
        mv = req.context.microversion
        if not mv.matches("2.23"):
            # Nova's answer for a method of a later microversion
            raise exception.NotFound(
                message="The resource could not be found.")
        validation.validate_query(mv, versioned_query, common.query(req))
        ctx = req.context.ctx
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, SERVER_RULE % action,
                         {"project_id": instance.project_id})
        return ctx, instance

    def on_get(self, req, resp, server_id):
        ctx, instance = self._instance(req, server_id, "index",
                                       schemas.SERVER_INDEX_QUERY)
        migrations = self.compute.get_migrations_in_progress_by_instance(
            ctx, instance.uuid)
        common.send(resp, {"migrations": [view.server_migration(req, m)
                                          for m in migrations]})

    def on_get_item(self, req, resp, server_id, migration_id):
        ctx, instance = self._instance(req, server_id, "show",
                                       schemas.SERVER_SHOW_QUERY)
        names = {"id": migration_id, "uuid": server_id}
        try:
            migration = self.compute.get_migration_by_id_and_instance(
                ctx, migration_id, instance.uuid)
        except exception.MigrationNotFoundForInstance:
            raise exception.MigrationNotFoundForInstance(
                message="In-progress live migration %(id)s is not found for "
                        "server %(uuid)s." % names)
        if not migration.is_live_migration:
            raise exception.MigrationNotFoundForInstance(
                message="Migration %(id)s for server %(uuid)s is not "
                        "live-migration." % names)
        if not migration.in_progress:
            raise exception.MigrationNotFoundForInstance(
                message="Live migration %(id)s for server %(uuid)s is not in "
                        "progress." % names)
        common.send(resp, {"migration": view.server_migration(req, migration)})
