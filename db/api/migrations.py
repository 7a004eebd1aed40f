"""Queries of the compute database's ``migrations`` table: the records of
live migrations that os-migrations and /servers/{id}/migrations list."""
import uuid as uuidlib

from oslo_utils import timeutils
from sqlalchemy import and_, insert, or_, select, update

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

MIGRATIONS = models.Migration.__table__

# filter name -> column compared for equality (os-migrations' filters;
# "host" and "status" are handled apart)
_EQUAL_FILTERS = ("instance_uuid", "migration_type", "user_id", "project_id")


def migration_create(values):
    """Store a migration (a uuid is generated when ``values`` has none);
    returns the stored row."""
    values = dict(values)
    values.setdefault("uuid", str(uuidlib.uuid4()))
    values.setdefault("hidden", False)
    values.setdefault("deleted", False)
    values["created_at"] = c.now()
    values["updated_at"] = None

    def create(conn):
        migration_id = conn.execute(
            insert(MIGRATIONS).values(**values)).inserted_primary_key[0]
        return dict(values, id=migration_id)
    return c.database().write(create)


def migration_update(migration_id, values):
    """Update a migration's columns; returns the stored row
    (MigrationNotFound when there is none)."""
    values = dict(values, updated_at=c.now())
    values.pop("id", None)

    def change(conn):
        changed = conn.execute(update(MIGRATIONS).where(
            MIGRATIONS.c.id == migration_id).values(**values)).rowcount
        if not changed:
            raise exception.MigrationNotFound(migration_id=migration_id)
        return c.one_dict(conn.execute(select(MIGRATIONS).where(
            MIGRATIONS.c.id == migration_id)))
    return c.database().write(change)


def migration_get(migration_id):
    row = c.read_one(select(MIGRATIONS).where(
        MIGRATIONS.c.id == migration_id, MIGRATIONS.c.deleted.is_(False)))
    if row is None:
        raise exception.MigrationNotFound(migration_id=migration_id)
    return row


def migration_get_by_id_and_instance(migration_id, instance_uuid):
    row = c.read_one(select(MIGRATIONS).where(
        MIGRATIONS.c.id == migration_id,
        MIGRATIONS.c.instance_uuid == instance_uuid,
        MIGRATIONS.c.deleted.is_(False)))
    if row is None:
        raise exception.MigrationNotFoundForInstance(
            migration_id=migration_id, instance_id=instance_uuid)
    return row


def migration_get_by_instance_and_statuses(instance_uuid, statuses,
                                           migration_type=None):
    """The server's migrations in one of ``statuses``, oldest first."""
    stmt = select(MIGRATIONS).where(
        MIGRATIONS.c.instance_uuid == instance_uuid,
        MIGRATIONS.c.status.in_(list(statuses)),
        MIGRATIONS.c.deleted.is_(False))
    if migration_type:
        stmt = stmt.where(MIGRATIONS.c.migration_type == migration_type)
    return c.read(stmt.order_by(MIGRATIONS.c.created_at, MIGRATIONS.c.id))


def _filtered(stmt, filters):
    if filters.get("status"):
        status = filters["status"]
        stmt = stmt.where(MIGRATIONS.c.status.in_(
            [status] if isinstance(status, str) else list(status)))
    if filters.get("host"):
        stmt = stmt.where(or_(MIGRATIONS.c.source_compute == filters["host"],
                              MIGRATIONS.c.dest_compute == filters["host"]))
    elif filters.get("source_compute"):
        stmt = stmt.where(
            MIGRATIONS.c.source_compute == filters["source_compute"])
    for name in _EQUAL_FILTERS:
        if filters.get(name):
            stmt = stmt.where(MIGRATIONS.c[name] == filters[name])
    if filters.get("hidden") is not None:
        stmt = stmt.where(MIGRATIONS.c.hidden.is_(bool(filters["hidden"])))
    if filters.get("changes-since"):
        since = timeutils.normalize_time(filters["changes-since"])
        stmt = stmt.where(MIGRATIONS.c.updated_at >= since)
    if filters.get("changes-before"):
        before = timeutils.normalize_time(filters["changes-before"])
        stmt = stmt.where(MIGRATIONS.c.updated_at <= before)
    return stmt


def migration_get_all_by_filters(filters, limit=None, marker=None):
    """Migrations matching ``filters``, newest first (created_at, then id,
    descending).

    ``filters``: ``status`` (a string or a list), ``host`` (source or
    destination; ``source_compute`` is ignored when it is given),
    ``source_compute``, ``instance_uuid``, ``migration_type``, ``user_id``,
    ``project_id``, ``hidden`` (a bool), ``changes-since`` and
    ``changes-before`` (datetimes, compared with ``updated_at``).  ``marker``
    is the uuid of a migration: the page starts after it (MarkerNotFound
    when no migration has that uuid); ``limit`` caps the page."""
    if limit == 0:
        return []
    stmt = select(MIGRATIONS).where(MIGRATIONS.c.deleted.is_(False))
    stmt = _filtered(stmt, filters or {})
    if marker is not None:
        after = c.read_one(select(MIGRATIONS.c.created_at, MIGRATIONS.c.id)
                           .where(MIGRATIONS.c.uuid == marker))
        if after is None:
            raise exception.MarkerNotFound(marker=marker)
        stmt = stmt.where(or_(
            MIGRATIONS.c.created_at < after["created_at"],
            and_(MIGRATIONS.c.created_at == after["created_at"],
                 MIGRATIONS.c.id < after["id"])))
    stmt = stmt.order_by(MIGRATIONS.c.created_at.desc(), MIGRATIONS.c.id.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    return c.read(stmt)
