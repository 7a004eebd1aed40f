"""Data access of the volume service: every query, as functions of a
connection already inside a transaction (``Database.read``/``write``).

Rows come back as plain dicts keyed by column name.  Functions that decide a
state change do it in the database, never read-then-write:

* ``volume_reserve`` is a compare-and-swap UPDATE whose WHERE clause holds
  the allowed statuses (and the multiattach flag); its rowcount says whether
  the reservation won.  On PostgreSQL the UPDATE also takes the row lock, so
  every other writer of that volume waits for this transaction.
* ``volume_lock`` (SELECT ... FOR UPDATE) is taken first by every other
  attachment change, so the status recomputed from the attachments at the end
  of a transaction always sees every committed attachment.
* ``volume_delete`` deletes only a deletable volume without attachments, in
  one statement.

On SQLite the write transaction itself is ``BEGIN IMMEDIATE`` (one writer at
a time), which gives the same guarantees.
"""
import json
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from volattach import exception
from volume import states
from volume.db import models

services = models.Service.__table__
volume_types = models.VolumeType.__table__
extra_specs = models.VolumeTypeExtraSpec.__table__
volumes = models.Volume.__table__
attachments = models.VolumeAttachment.__table__
attachment_specs = models.AttachmentSpec.__table__

DEFAULT_TYPE_NAME = "__DEFAULT__"

utcnow = models.utcnow


def _dict(row):
    return dict(row._mapping) if row is not None else None


# -- services -----------------------------------------------------------------

def service_get_or_create(conn, host, binary, topic, availability_zone):
    """This service's row, created on first registration."""
    query = sa.select(services).where(services.c.host == host,
                                      services.c.binary == binary)
    row = conn.execute(query).first()
    if row is None:
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(services).values(
                    uuid=str(uuid.uuid4()), host=host, binary=binary,
                    topic=topic, availability_zone=availability_zone,
                    disabled=False, report_count=0, created_at=utcnow(),
                    updated_at=utcnow()))
        except sa_exc.IntegrityError:
            pass  # registered concurrently by another process
        row = conn.execute(query).first()
    return _dict(row)


def service_heartbeat(conn, service_id):
    conn.execute(sa.update(services).where(services.c.id == service_id)
                 .values(updated_at=utcnow(),
                         report_count=services.c.report_count + 1))


def service_list(conn, host=None, binary=None):
    query = sa.select(services).order_by(services.c.id)
    if host:
        query = query.where(services.c.host == host)
    if binary:
        query = query.where(services.c.binary == binary)
    return [_dict(r) for r in conn.execute(query)]


# -- volume types -------------------------------------------------------------

def _with_specs(conn, rows):
    rows = [_dict(r) for r in rows]
    if not rows:
        return rows
    specs = {}
    query = sa.select(extra_specs).where(
        extra_specs.c.volume_type_id.in_([r["id"] for r in rows]))
    for spec in conn.execute(query):
        specs.setdefault(spec.volume_type_id, {})[spec.key] = spec.value
    for row in rows:
        row["extra_specs"] = specs.get(row["id"], {})
    return rows


def type_create(conn, name, description=None, is_public=True,
                specs=None, type_id=None):
    type_id = type_id or str(uuid.uuid4())
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(volume_types).values(
                id=type_id, name=name, description=description,
                is_public=is_public, created_at=utcnow()))
    except sa_exc.IntegrityError:
        raise exception.VolumeTypeExists(name=name)
    for key, value in (specs or {}).items():
        conn.execute(sa.insert(extra_specs).values(
            volume_type_id=type_id, key=key, value=value))
    return type_get(conn, type_id)


def type_get(conn, id_or_name):
    """A type by id, else by name (``default`` is the default type)."""
    if id_or_name == "default":
        id_or_name = DEFAULT_TYPE_NAME
    rows = conn.execute(sa.select(volume_types).where(
        volume_types.c.id == id_or_name)).all()
    if not rows:
        rows = conn.execute(sa.select(volume_types).where(
            volume_types.c.name == id_or_name)).all()
    if not rows:
        raise exception.VolumeTypeNotFound(volume_type_id=id_or_name)
    return _with_specs(conn, rows)[0]


def type_list(conn, include_private=False):
    query = sa.select(volume_types).order_by(volume_types.c.created_at,
                                             volume_types.c.name)
    if not include_private:
        query = query.where(volume_types.c.is_public == sa.true())
    return _with_specs(conn, conn.execute(query).all())


def type_delete(conn, type_id):
    vtype = type_get(conn, type_id)
    if vtype["name"] == DEFAULT_TYPE_NAME:
        raise exception.InvalidInput(
            reason="Default volume type can not be deleted.")
    in_use = conn.execute(sa.select(sa.func.count()).select_from(volumes)
                          .where(volumes.c.volume_type_id == vtype["id"]))
    if in_use.scalar():
        raise exception.VolumeTypeInUse(volume_type_id=vtype["id"])
    conn.execute(sa.delete(extra_specs).where(
        extra_specs.c.volume_type_id == vtype["id"]))
    conn.execute(sa.delete(volume_types).where(
        volume_types.c.id == vtype["id"]))


# -- volumes ------------------------------------------------------------------

def _volume_query():
    return (sa.select(volumes, volume_types.c.name.label("volume_type_name"))
            .join(volume_types, volumes.c.volume_type_id == volume_types.c.id))


def _scoped(query, table, project_id):
    if project_id is not None:
        query = query.where(table.c.project_id == project_id)
    return query


def volume_create(conn, values):
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    values.setdefault("created_at", utcnow())
    values["metadata"] = json.dumps(values.pop("metadata", None) or {})
    conn.execute(sa.insert(volumes).values(**values))
    return volume_get(conn, values["id"])


def volume_get(conn, volume_id, project_id=None, for_update=False):
    """The volume (``project_id``: only if it belongs to that project)."""
    query = _scoped(_volume_query().where(volumes.c.id == volume_id),
                    volumes, project_id)
    if for_update:
        query = query.with_for_update(of=volumes)
    row = conn.execute(query).first()
    if row is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    return _volume_dict(row)


def volume_lock(conn, volume_id):
    """Lock the volume row until the end of the transaction (PostgreSQL;
    on SQLite the IMMEDIATE transaction already excludes other writers)."""
    return volume_get(conn, volume_id, for_update=True)


def _volume_dict(row):
    vol = _dict(row)
    vol["metadata"] = json.loads(vol.get("metadata") or "{}")
    return vol


def volume_list(conn, project_id=None):
    query = _scoped(_volume_query(), volumes, project_id).order_by(
        volumes.c.created_at.desc(), volumes.c.id)
    return [_volume_dict(r) for r in conn.execute(query)]


def volume_update(conn, volume_id, values, expected_statuses=None,
                  project_id=None):
    """UPDATE the volume, only if its status is one of
    ``expected_statuses`` (compare-and-swap).  True if a row changed."""
    values = dict(values)
    values.setdefault("updated_at", utcnow())
    stmt = _scoped(sa.update(volumes).where(volumes.c.id == volume_id),
                   volumes, project_id)
    if expected_statuses is not None:
        stmt = stmt.where(volumes.c.status.in_(expected_statuses))
    return conn.execute(stmt.values(**values)).rowcount == 1


def volume_reserve(conn, volume_id, project_id=None):
    """Compare-and-swap: True if the volume's status allows one more
    reservation (and its row is now locked by this transaction)."""
    allowed = sa.or_(
        sa.and_(volumes.c.multiattach == sa.true(),
                volumes.c.status.in_(states.MULTIATTACH_RESERVABLE)),
        sa.and_(volumes.c.multiattach == sa.false(),
                volumes.c.status.in_(states.RESERVABLE)))
    stmt = _scoped(sa.update(volumes).where(volumes.c.id == volume_id,
                                            allowed), volumes, project_id)
    return conn.execute(stmt.values(updated_at=utcnow())).rowcount == 1


def volume_delete(conn, volume_id, project_id=None):
    """Delete a deletable, unattached, non-migrating volume in one
    statement.  True if it was deleted."""
    has_attachments = sa.exists().where(attachments.c.volume_id == volume_id)
    stmt = _scoped(sa.delete(volumes).where(
        volumes.c.id == volume_id,
        volumes.c.status.in_(states.DELETABLE),
        volumes.c.migration_status.is_(None),
        ~has_attachments), volumes, project_id)
    return conn.execute(stmt).rowcount == 1


def volume_sync_status(conn, volume_id, transition=None):
    """Set the status of an attach-derived volume.

    ``transition`` (reserved on a new reservation, attaching on a connect)
    is the status real Cinder moves the volume to whatever its other
    attachments are, so that a client polling for in-use waits for this
    attachment too; without it the status is derived from the attachments
    (complete and delete).
    """
    if transition is not None:
        status = transition
    else:
        statuses = conn.execute(sa.select(attachments.c.attach_status).where(
            attachments.c.volume_id == volume_id)).scalars().all()
        status = states.status_from_attachments(statuses)
    conn.execute(sa.update(volumes).where(
        volumes.c.id == volume_id,
        volumes.c.status.in_(states.ATTACH_DERIVED)).values(
            status=status, updated_at=utcnow()))
    return status


# -- attachments --------------------------------------------------------------

def attachment_create(conn, values):
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    values.setdefault("created_at", utcnow())
    conn.execute(sa.insert(attachments).values(**values))
    return attachment_get(conn, values["id"])


def attachment_get(conn, attachment_id, project_id=None):
    query = _scoped(sa.select(attachments).where(
        attachments.c.id == attachment_id), attachments, project_id)
    row = conn.execute(query).first()
    if row is None:
        raise exception.VolumeAttachmentNotFound(
            "Volume attachment could not be found with filter: "
            "attachment_id = %s." % attachment_id,
            attachment_id=attachment_id)
    return _dict(row)


def attachment_exists(conn, volume_id, instance_uuid):
    query = sa.select(attachments.c.id).where(
        attachments.c.volume_id == volume_id,
        attachments.c.instance_uuid == instance_uuid).limit(1)
    return conn.execute(query).first() is not None


def attachment_update(conn, attachment_id, values):
    values = dict(values)
    values.setdefault("updated_at", utcnow())
    conn.execute(sa.update(attachments).where(
        attachments.c.id == attachment_id).values(**values))


def attachment_delete(conn, attachment_id):
    conn.execute(sa.delete(attachment_specs).where(
        attachment_specs.c.attachment_id == attachment_id))
    return conn.execute(sa.delete(attachments).where(
        attachments.c.id == attachment_id)).rowcount == 1


def attachment_list(conn, project_id=None, volume_id=None, instance_id=None,
                    statuses=None):
    query = _scoped(sa.select(attachments), attachments, project_id)
    if volume_id:
        query = query.where(attachments.c.volume_id == volume_id)
    if instance_id:
        query = query.where(attachments.c.instance_uuid == instance_id)
    if statuses:
        query = query.where(attachments.c.attach_status.in_(statuses))
    query = query.order_by(attachments.c.created_at, attachments.c.id)
    return [_dict(r) for r in conn.execute(query)]


def attachments_by_volume(conn, volume_ids, statuses=None):
    """{volume_id: [attachment, ...]} for the volume views."""
    result = {vid: [] for vid in volume_ids}
    if not volume_ids:
        return result
    query = sa.select(attachments).where(
        attachments.c.volume_id.in_(list(volume_ids)))
    if statuses:
        query = query.where(attachments.c.attach_status.in_(statuses))
    query = query.order_by(attachments.c.attach_time, attachments.c.id)
    for row in conn.execute(query):
        result[row.volume_id].append(_dict(row))
    return result


def attachment_specs_set(conn, attachment_id, connector):
    """Replace the stored connector: one row per key, values as JSON."""
    conn.execute(sa.delete(attachment_specs).where(
        attachment_specs.c.attachment_id == attachment_id))
    if connector:
        conn.execute(sa.insert(attachment_specs), [
            {"attachment_id": attachment_id, "key": str(key),
             "value": json.dumps(value)}
            for key, value in connector.items()])


def attachment_specs_get(conn, attachment_id):
    query = sa.select(attachment_specs.c.key, attachment_specs.c.value).where(
        attachment_specs.c.attachment_id == attachment_id)
    return {key: json.loads(value) for key, value in conn.execute(query)}


def attachment_shared_with(conn, attachment):
    """Ids of the other connected attachments that share ``attachment``'s
    host connection: same volume service, same connector host, and both
    volumes on shared targets."""
    if (attachment["attach_status"] not in states.CONNECTED
            or not attachment["attached_host"]):
        return []
    own = conn.execute(sa.select(volumes.c.shared_targets,
                                 volumes.c.service_uuid).where(
        volumes.c.id == attachment["volume_id"])).first()
    if own is None or not own.shared_targets:
        return []
    query = (sa.select(attachments.c.id)
             .join(volumes, attachments.c.volume_id == volumes.c.id)
             .where(attachments.c.id != attachment["id"],
                    attachments.c.attached_host == attachment["attached_host"],
                    attachments.c.attach_status.in_(states.CONNECTED),
                    volumes.c.shared_targets == sa.true(),
                    volumes.c.service_uuid == own.service_uuid)
             .order_by(attachments.c.created_at, attachments.c.id))
    return list(conn.execute(query).scalars())
