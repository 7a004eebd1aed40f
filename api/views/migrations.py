"""os-migrations and /servers/{server_id}/migrations bodies.

os-migrations, per migration: id, status, instance_uuid, source_node,
source_compute, dest_node, dest_compute, dest_host, old_instance_type_id,
new_instance_type_id, created_at, updated_at; migration_type 2.23+, with
``links`` to /servers/{id}/migrations/{id} for a live migration in
progress; uuid 2.59+ (and ``migrations_links`` when a page is full);
user_id and project_id 2.80+.  Hidden migrations are never shown.

/servers/{server_id}/migrations (2.23+), per in-progress live migration:
id, status, server_uuid, source/dest compute and node, dest_host, the
memory and disk progress counters (always null here: no driver reports
them), created_at, updated_at; uuid 2.59+; user_id and project_id 2.80+.
"""
from volattach.api import common
from volattach.api.views import primitive_time


def _server_collection(instance_uuid):
    return "servers/%s/migrations" % instance_uuid


def migration(req, mig):
    mv = req.context.microversion
    body = {
        "id": mig.id,
        "status": mig.status,
        "instance_uuid": mig.instance_uuid,
        "source_node": mig.source_node,
        "source_compute": mig.source_compute,
        "dest_node": mig.dest_node,
        "dest_compute": mig.dest_compute,
        "dest_host": mig.dest_host,
        "old_instance_type_id": mig.old_instance_type_id,
        "new_instance_type_id": mig.new_instance_type_id,
        "created_at": primitive_time(mig.created_at),
        "updated_at": primitive_time(mig.updated_at),
    }
    if mv.matches("2.23"):
        body["migration_type"] = mig.migration_type
        if mig.is_live_migration and mig.in_progress:
            body["links"] = common.links(
                req, _server_collection(mig.instance_uuid), mig.id)
    if mv.matches("2.59"):
        body["uuid"] = mig.uuid
    if mv.matches("2.80"):
        body["user_id"] = mig.user_id
        body["project_id"] = mig.project_id
    return body


def index(req, conf, migrations, query_dict):
    body = {"migrations": [migration(req, m) for m in migrations
                           if not m.hidden]}
    if req.context.microversion.matches("2.59"):
        next_links = common.collection_links(
            req, conf, body["migrations"], "os-migrations", id_key="uuid",
            query_dict=query_dict)
        if next_links:
            body["migrations_links"] = next_links
    return body


def server_migration(req, mig):
    mv = req.context.microversion
    body = {
        "created_at": primitive_time(mig.created_at),
        "dest_compute": mig.dest_compute,
        "dest_host": mig.dest_host,
        "dest_node": mig.dest_node,
        "disk_processed_bytes": None,
        "disk_remaining_bytes": None,
        "disk_total_bytes": None,
        "id": mig.id,
        "memory_processed_bytes": None,
        "memory_remaining_bytes": None,
        "memory_total_bytes": None,
        "server_uuid": mig.instance_uuid,
        "source_compute": mig.source_compute,
        "source_node": mig.source_node,
        "status": mig.status,
        "updated_at": primitive_time(mig.updated_at),
    }
    if mv.matches("2.59"):
        body["uuid"] = mig.uuid
    if mv.matches("2.80"):
        body["user_id"] = mig.user_id
        body["project_id"] = mig.project_id
    return body
