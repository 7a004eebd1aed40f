"""Queries of volumes: create, read (with their attached attachments),
compare-and-swap updates, reservation and delete."""
import functools
import json
import uuid

import sqlalchemy as sa

from volattach import exception
from volattach.volume import states
from volattach.volume.db.common import (_json_object, _one_of, attachments,
                                        utcnow, volume_types, volumes)

_VOLUME_KEYS = tuple(c.name for c in volumes.c)
_VOLUME_ID = _VOLUME_KEYS.index("id")
_VOLUME_TYPE_NAME = volume_types.c.name.label("volume_type_name")
# The attachment fields of the volume view (views.volume_attachment).
_VIEW_ATTACHMENT_COLUMNS = (
    attachments.c.id, attachments.c.volume_id, attachments.c.instance_uuid,
    attachments.c.attached_host, attachments.c.mountpoint,
    attachments.c.attach_time)
_VIEW_ATTACHMENT_KEYS = tuple(c.name for c in _VIEW_ATTACHMENT_COLUMNS)


def _volume_dict(values, keys=_VOLUME_KEYS):
    """A volume dict from row values in ``keys`` order."""
    vol = dict(zip(keys, values))
    vol["metadata"] = _json_object(vol.get("metadata"))
    return vol


def _scoped(query, table, project_id):
    if project_id is not None:
        query = query.where(table.c.project_id == project_id)
    return query


@functools.cache
def _stmt_volume(scoped, for_update):
    query = (sa.select(volumes, _VOLUME_TYPE_NAME)
             .join(volume_types, volumes.c.volume_type_id == volume_types.c.id)
             .where(volumes.c.id == sa.bindparam("volume_id")))
    if scoped:
        query = query.where(volumes.c.project_id == sa.bindparam("project_id"))
    if for_update:
        query = query.with_for_update(of=volumes)
    return query


@functools.cache
def _stmt_volumes_with_attachments(by_id, scoped):
    """Volumes with their type's name and their attached attachments, one
    row per (volume, attachment) (a LEFT OUTER JOIN), in one statement."""
    attached = sa.and_(attachments.c.volume_id == volumes.c.id,
                       attachments.c.attach_status == states.ATT_ATTACHED)
    query = (sa.select(volumes, _VOLUME_TYPE_NAME,
                       *[c.label("attachment_" + c.name)
                         for c in _VIEW_ATTACHMENT_COLUMNS])
             .select_from(volumes.join(
                 volume_types, volumes.c.volume_type_id == volume_types.c.id)
                 .outerjoin(attachments, attached)))
    if by_id:
        query = query.where(volumes.c.id == sa.bindparam("volume_id"))
    else:
        query = query.order_by(volumes.c.created_at.desc(), volumes.c.id)
    if scoped:
        query = query.where(volumes.c.project_id == sa.bindparam("project_id"))
    return query.order_by(attachments.c.attach_time, attachments.c.id)


def _volumes_from_rows(rows):
    """Volume dicts, each with its ``attachments``, from the rows of
    ``_stmt_volumes_with_attachments`` (a volume's rows are contiguous)."""
    width = len(_VOLUME_KEYS) + 1   # + volume_type_name
    keys = _VOLUME_KEYS + ("volume_type_name",)
    result = []
    for row in rows:
        values = tuple(row)
        if not result or result[-1]["id"] != values[_VOLUME_ID]:
            vol = _volume_dict(values[:width], keys)
            vol["attachments"] = []
            result.append(vol)
        if values[width] is not None:
            result[-1]["attachments"].append(
                dict(zip(_VIEW_ATTACHMENT_KEYS, values[width:])))
    return result


def volume_create(conn, values):
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    values.setdefault("created_at", utcnow())
    values["metadata"] = json.dumps(values.pop("metadata", None) or {})
    conn.execute(sa.insert(volumes).values(**values))
    return volume_get(conn, values["id"])


def volume_get(conn, volume_id, project_id=None, for_update=False):
    """The volume (``project_id``: only if it belongs to that project),
    without its attachments."""
    row = conn.execute(
        _stmt_volume(project_id is not None, for_update),
        {"volume_id": volume_id, "project_id": project_id}).first()
    if row is None:
        raise exception.VolumeNotFound(volume_id=volume_id)
    return _volume_dict(tuple(row), _VOLUME_KEYS + ("volume_type_name",))


def volume_get_with_attachments(conn, volume_id, project_id=None):
    """The volume with its attached attachments (the volume view), in one
    statement: consistent without a transaction."""
    rows = conn.execute(
        _stmt_volumes_with_attachments(True, project_id is not None),
        {"volume_id": volume_id, "project_id": project_id})
    found = _volumes_from_rows(rows)
    if not found:
        raise exception.VolumeNotFound(volume_id=volume_id)
    return found[0]


def volume_list(conn, project_id=None):
    """Every volume (of ``project_id``), newest first, with its attached
    attachments, in one statement."""
    return _volumes_from_rows(conn.execute(
        _stmt_volumes_with_attachments(False, project_id is not None),
        {"project_id": project_id}))


@functools.cache
def _stmt_volume_update(keys, expected_statuses, scoped):
    stmt = (sa.update(volumes)
            .where(volumes.c.id == sa.bindparam("_volume_id"))
            .values({key: sa.bindparam(key) for key in keys}))
    if expected_statuses is not None:
        stmt = stmt.where(_one_of(volumes.c.status, expected_statuses))
    if scoped:
        stmt = stmt.where(volumes.c.project_id == sa.bindparam("_project_id"))
    return stmt


def volume_update(conn, volume_id, values, expected_statuses=None,
                  project_id=None):
    """UPDATE the volume, only if its status is one of
    ``expected_statuses`` (compare-and-swap).  True if a row changed."""
    params = dict(values)
    params.setdefault("updated_at", utcnow())
    if isinstance(params.get("metadata"), dict):
        params["metadata"] = json.dumps(params["metadata"])
    stmt = _stmt_volume_update(
        tuple(sorted(params)),
        None if expected_statuses is None else tuple(expected_statuses),
        project_id is not None)
    params["_volume_id"] = volume_id
    params["_project_id"] = project_id
    return conn.execute(stmt, params).rowcount == 1


# An os-reserve reservation not attached yet: the new API may not reserve
# the volume meanwhile (nor may os-reserve while the new API holds one, by
# status: see legacy_reserve).
_LEGACY_PENDING = sa.exists().where(
    attachments.c.volume_id == volumes.c.id,
    attachments.c.legacy == sa.true(),
    attachments.c.attach_status != states.ATT_ATTACHED)


@functools.cache
def _stmt_volume_reserve(scoped, returning):
    allowed = sa.or_(
        sa.and_(volumes.c.multiattach == sa.true(),
                _one_of(volumes.c.status, states.MULTIATTACH_RESERVABLE)),
        sa.and_(volumes.c.multiattach == sa.false(),
                _one_of(volumes.c.status, states.RESERVABLE)))
    stmt = (sa.update(volumes)
            .where(volumes.c.id == sa.bindparam("_volume_id"), allowed,
                   ~_LEGACY_PENDING)
            .values(updated_at=sa.bindparam("updated_at")))
    if scoped:
        stmt = stmt.where(volumes.c.project_id == sa.bindparam("_project_id"))
    if returning:
        stmt = stmt.returning(*volumes.c)
    return stmt


def volume_reserve(conn, volume_id, project_id=None):
    """Compare-and-swap (no os-reserve reservation pending on it): the
    volume (without its type name; its status unchanged) if its status
    allows one more reservation, its row now locked by this transaction;
    else None."""
    params = {"_volume_id": volume_id, "_project_id": project_id,
              "updated_at": utcnow()}
    scoped = project_id is not None
    if conn.dialect.update_returning:
        row = conn.execute(_stmt_volume_reserve(scoped, True), params).first()
        return _volume_dict(tuple(row)) if row is not None else None
    # SQLite before 3.35: no RETURNING.
    if conn.execute(_stmt_volume_reserve(scoped, False), params).rowcount != 1:
        return None
    return volume_get(conn, volume_id)


def volume_delete(conn, volume_id, project_id=None):
    """Delete a deletable, unattached, non-migrating volume in one
    statement.  True if it was deleted."""
    has_attachments = sa.exists().where(attachments.c.volume_id == volume_id)
    stmt = _scoped(sa.delete(volumes).where(
        volumes.c.id == volume_id,
        volumes.c.status.in_(states.DELETABLE),
        sa.or_(volumes.c.migration_status.is_(None),
               volumes.c.migration_status.in_(("success", "error"))),
        ~has_attachments), volumes, project_id)
    return conn.execute(stmt).rowcount == 1


@functools.cache
def _stmt_volume_attach_status():
    return (sa.update(volumes)
            .where(volumes.c.id == sa.bindparam("_volume_id"),
                   _one_of(volumes.c.status, states.ATTACH_DERIVED))
            .values(status=sa.bindparam("status"),
                    updated_at=sa.bindparam("updated_at")))


def volume_set_attach_status(conn, volume_id, status):
    """Set the status of a volume whose status follows its attachments
    (``states.ATTACH_DERIVED``; others, set by os-reset_status, stay)."""
    conn.execute(_stmt_volume_attach_status(),
                 {"_volume_id": volume_id, "status": status,
                  "updated_at": utcnow()})
    return status


@functools.cache
def _stmt_attach_statuses():
    return sa.select(attachments.c.attach_status).where(
        attachments.c.volume_id == sa.bindparam("volume_id"))


def volume_sync_status(conn, volume_id):
    """Set the status of an attach-derived volume from its attachments."""
    statuses = conn.execute(_stmt_attach_statuses(),
                            {"volume_id": volume_id}).scalars().all()
    return volume_set_attach_status(
        conn, volume_id, states.status_from_attachments(statuses))



def legacy_reserve(conn, volume_id, project_id=None):
    """os-reserve's compare-and-swap: an available volume (or an in-use
    multiattach one) moves to attaching.  True if it did."""
    allowed = sa.or_(
        volumes.c.status == states.AVAILABLE,
        sa.and_(volumes.c.multiattach == sa.true(),
                volumes.c.status == states.IN_USE))
    stmt = _scoped(sa.update(volumes).where(volumes.c.id == volume_id,
                                            allowed), volumes, project_id)
    return conn.execute(stmt.values(status=states.ATTACHING,
                                    updated_at=utcnow())).rowcount == 1


def volume_summary(conn, project_id=None):
    """(count, total size, {metadata key: [values]}) of the volumes."""
    query = _scoped(sa.select(volumes.c.size, volumes.c.metadata),
                    volumes, project_id)
    count, total, metadata = 0, 0, {}
    for size, meta in conn.execute(query):
        count += 1
        total += size
        for key, value in _json_object(meta).items():
            if value not in metadata.setdefault(key, []):
                metadata[key].append(value)
    return count, total, metadata


def volume_destroy(conn, volume_id):
    """Delete the volume row whatever its status (its attachments first)."""
    conn.execute(sa.delete(attachments).where(
        attachments.c.volume_id == volume_id))
    conn.execute(sa.delete(volumes).where(volumes.c.id == volume_id))


def volume_finish_migration(conn, source_id, target_id):
    """The end of a migration, as Cinder's: the source keeps its id and
    takes over the target's type and host, its data (``name_id``) and its
    attachments (the swapped-in ones); the source's own attachments and the
    target row go."""
    target = volume_get(conn, target_id)
    conn.execute(sa.delete(attachments).where(
        attachments.c.volume_id == source_id))
    conn.execute(sa.update(attachments).where(
        attachments.c.volume_id == target_id).values(volume_id=source_id))
    conn.execute(sa.delete(volumes).where(volumes.c.id == target_id))
    volume_update(conn, source_id, {
        "volume_type_id": target["volume_type_id"], "host": target["host"],
        "multiattach": target["multiattach"],
        "name_id": target["name_id"] or target["id"],
        "migration_status": "success"})
