"""Data access of the volume service: every query, as functions of a
connection (``Database.read``/``read_single``/``write``).

Rows come back as plain dicts keyed by column name, JSON columns decoded
(a volume's ``metadata``, an attachment's ``connection_info``).  Functions
that decide a state change do it in the database, never read-then-write:

* ``volume_reserve`` is a compare-and-swap UPDATE whose WHERE clause holds
  the allowed statuses (and the multiattach flag); the row it returns says
  that the reservation won.  On PostgreSQL the UPDATE also takes the row
  lock, so every other writer of that volume waits for this transaction.
* ``attachment_lock`` locks the attachment's volume row (SELECT ... FOR
  UPDATE) first in every other attachment change, so the status set at the
  end of a transaction always accounts for every committed attachment.
* ``volume_delete`` deletes only a deletable volume without attachments, in
  one statement.

On SQLite the write transaction itself is ``BEGIN IMMEDIATE`` (one writer at
a time), which gives the same guarantees.

The statements of the attach cycle and of the volume and attachment reads
are built once per shape by cached builders (``_stmt_*``), with bind
parameters: SQLAlchemy then finds their compiled form in its cache at once
instead of building and hashing a new statement per call.  Those reads are
single statements (joins), consistent without a transaction around them
(``Database.read_single``).
"""
import functools
import json
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from volattach import exception
from volattach.volume import states
from volattach.volume.db import models

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


def _one_of(column, values):
    """``column IN (...)`` of constants, as plain bound values: an
    "expanding" IN (SQLAlchemy's default for a list) is rendered again at
    every execution."""
    return column.in_([sa.literal(value) for value in values])


def _json_object(text):
    """A JSON object column's value (``{}`` stored as such is common)."""
    if text is None or text == "{}" or text == "":
        return {}
    return json.loads(text)


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
    stmt = _stmt_volume_update(
        tuple(sorted(params)),
        None if expected_statuses is None else tuple(expected_statuses),
        project_id is not None)
    params["_volume_id"] = volume_id
    params["_project_id"] = project_id
    return conn.execute(stmt, params).rowcount == 1


@functools.cache
def _stmt_volume_reserve(scoped, returning):
    allowed = sa.or_(
        sa.and_(volumes.c.multiattach == sa.true(),
                _one_of(volumes.c.status, states.MULTIATTACH_RESERVABLE)),
        sa.and_(volumes.c.multiattach == sa.false(),
                _one_of(volumes.c.status, states.RESERVABLE)))
    stmt = (sa.update(volumes)
            .where(volumes.c.id == sa.bindparam("_volume_id"), allowed)
            .values(updated_at=sa.bindparam("updated_at")))
    if scoped:
        stmt = stmt.where(volumes.c.project_id == sa.bindparam("_project_id"))
    if returning:
        stmt = stmt.returning(*volumes.c)
    return stmt


def volume_reserve(conn, volume_id, project_id=None):
    """Compare-and-swap: the volume (without its type name; its status
    unchanged) if its status allows one more reservation, its row now
    locked by this transaction; else None."""
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
        volumes.c.migration_status.is_(None),
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


# -- attachments --------------------------------------------------------------

_ATTACHMENT_KEYS = tuple(c.name for c in attachments.c)
_ATTACHMENT_ID = _ATTACHMENT_KEYS.index("id")


def _attachment_dict(values):
    """An attachment dict from row values in table order."""
    att = dict(zip(_ATTACHMENT_KEYS, values))
    if att["connection_info"] is not None:
        att["connection_info"] = json.loads(att["connection_info"])
    return att


def _attachment_not_found(attachment_id):
    return exception.VolumeAttachmentNotFound(
        "Volume attachment could not be found with filter: "
        "attachment_id = %s." % attachment_id,
        attachment_id=attachment_id)


def _encoded(values):
    """Column values of an attachment write (connection_info as JSON)."""
    info = values.get("connection_info")
    if info is not None and not isinstance(info, str):
        values = dict(values, connection_info=json.dumps(info))
    return values


def attachment_create(conn, values):
    """INSERT the attachment; returns it as stored (no read back)."""
    att = dict.fromkeys(_ATTACHMENT_KEYS)
    att.update(values)
    att["id"] = att["id"] or str(uuid.uuid4())
    att["created_at"] = att["created_at"] or utcnow()
    conn.execute(sa.insert(attachments), _encoded(att))
    return att


@functools.cache
def _stmt_attachment(scoped):
    query = sa.select(attachments).where(
        attachments.c.id == sa.bindparam("attachment_id"))
    if scoped:
        query = query.where(
            attachments.c.project_id == sa.bindparam("project_id"))
    return query


def attachment_get(conn, attachment_id, project_id=None):
    row = conn.execute(_stmt_attachment(project_id is not None),
                       {"attachment_id": attachment_id,
                        "project_id": project_id}).first()
    if row is None:
        raise _attachment_not_found(attachment_id)
    return _attachment_dict(tuple(row))


@functools.cache
def _stmt_lock_attachment_and_volume(scoped):
    query = (sa.select(attachments, *[c.label("locked_volume_" + c.name)
                                      for c in volumes.c])
             .join(volumes, volumes.c.id == attachments.c.volume_id)
             .where(attachments.c.id == sa.bindparam("attachment_id"))
             .with_for_update())
    if scoped:
        query = query.where(
            attachments.c.project_id == sa.bindparam("project_id"))
    return query


def attachment_lock(conn, attachment_id, project_id=None):
    """``(attachment, volume)`` of an attachment about to change, both rows
    locked until the end of the transaction, in one statement
    (``project_id``: only if the attachment belongs to it; else
    VolumeAttachmentNotFound).

    PostgreSQL: SELECT ... FOR UPDATE of both rows; when another
    transaction changed them while this one waited for the lock, it
    returns their new versions (no row if the attachment was deleted), so
    nothing needs reading again.  Every writer of attachments locks the
    volume row (this, or volume_reserve's UPDATE) and none waits for an
    attachment row while holding its volume's: no lock cycle.  SQLite:
    BEGIN IMMEDIATE already excludes every other writer.
    """
    row = conn.execute(_stmt_lock_attachment_and_volume(project_id
                                                        is not None),
                       {"attachment_id": attachment_id,
                        "project_id": project_id}).first()
    if row is None:
        raise _attachment_not_found(attachment_id)
    values = tuple(row)
    width = len(_ATTACHMENT_KEYS)
    return _attachment_dict(values[:width]), _volume_dict(values[width:])


def attachment_exists(conn, volume_id, instance_uuid):
    query = sa.select(attachments.c.id).where(
        attachments.c.volume_id == volume_id,
        attachments.c.instance_uuid == instance_uuid).limit(1)
    return conn.execute(query).first() is not None


@functools.cache
def _stmt_attachment_update(keys):
    return (sa.update(attachments)
            .where(attachments.c.id == sa.bindparam("_attachment_id"))
            .values({key: sa.bindparam(key) for key in keys}))


def attachment_update(conn, attachment_id, values):
    """UPDATE the attachment; returns the values written (``updated_at``
    included, ``connection_info`` as given)."""
    values = dict(values)
    values.setdefault("updated_at", utcnow())
    params = _encoded(values)
    params = dict(params, _attachment_id=attachment_id)
    conn.execute(_stmt_attachment_update(tuple(sorted(values))), params)
    return values


@functools.cache
def _stmt_attachment_delete():
    return sa.delete(attachments).where(
        attachments.c.id == sa.bindparam("attachment_id"))


def attachment_delete(conn, attachment_id):
    """Delete the attachment; its attachment_specs go with it (foreign key
    ON DELETE CASCADE, enforced on SQLite by ``PRAGMA foreign_keys``)."""
    return conn.execute(_stmt_attachment_delete(),
                        {"attachment_id": attachment_id}).rowcount == 1


# Attachments that share a host connection with the attachment of the row
# (``attachment_shared_with``), joined to each attachment of a list: the
# other connected attachments on the same connector host of the same volume
# service, both volumes on shared targets.
_shared = attachments.alias("shared")
_shared_volume = volumes.alias("shared_volume")
_own_volume = volumes.alias("own_volume")
_SHARES_CONNECTION = sa.and_(
    _one_of(attachments.c.attach_status, states.CONNECTED),
    attachments.c.attached_host != "",
    _own_volume.c.shared_targets == sa.true(),
    _shared.c.id != attachments.c.id,
    _shared.c.attached_host == attachments.c.attached_host,
    _one_of(_shared.c.attach_status, states.CONNECTED),
    _shared_volume.c.shared_targets == sa.true(),
    _shared_volume.c.service_uuid.is_not_distinct_from(
        _own_volume.c.service_uuid))


@functools.cache
def _stmt_attachments(by_id, scoped, by_volume, by_instance, with_shared):
    """Attachments (one, or a filtered list), with, if ``with_shared``, one
    row per attachment sharing its connection (a LEFT OUTER JOIN)."""
    if with_shared:
        query = (sa.select(attachments,
                           _shared.c.id.label("shared_attachment_id"))
                 .select_from(attachments.outerjoin(
                     _own_volume, _own_volume.c.id == attachments.c.volume_id)
                     .outerjoin(_shared.join(
                         _shared_volume,
                         _shared_volume.c.id == _shared.c.volume_id),
                         _SHARES_CONNECTION)))
    else:
        query = sa.select(attachments)
    for wanted, column, param in (
            (by_id, attachments.c.id, "attachment_id"),
            (scoped, attachments.c.project_id, "project_id"),
            (by_volume, attachments.c.volume_id, "volume_id"),
            (by_instance, attachments.c.instance_uuid, "instance_uuid")):
        if wanted:
            query = query.where(column == sa.bindparam(param))
    query = query.order_by(attachments.c.created_at, attachments.c.id)
    if with_shared:
        query = query.order_by(_shared.c.created_at, _shared.c.id)
    return query


def _attachments_from_rows(rows, with_shared):
    """Attachment dicts from the rows of ``_stmt_attachments`` (with
    ``shared_connections_by_attachment`` if ``with_shared``)."""
    if not with_shared:
        return [_attachment_dict(tuple(row)) for row in rows]
    width = len(_ATTACHMENT_KEYS)
    result = []
    for row in rows:
        values = tuple(row)
        if not result or result[-1]["id"] != values[_ATTACHMENT_ID]:
            att = _attachment_dict(values[:width])
            att["shared_connections_by_attachment"] = []
            result.append(att)
        if values[width] is not None:
            result[-1]["shared_connections_by_attachment"].append(
                values[width])
    return result


def attachment_get_with_shared(conn, attachment_id, project_id=None):
    """The attachment with ``shared_connections_by_attachment``, in one
    statement."""
    rows = conn.execute(
        _stmt_attachments(True, project_id is not None, False, False, True),
        {"attachment_id": attachment_id, "project_id": project_id})
    found = _attachments_from_rows(rows, with_shared=True)
    if not found:
        raise _attachment_not_found(attachment_id)
    return found[0]


def attachment_list(conn, project_id=None, volume_id=None, instance_id=None,
                    with_shared=False):
    """Attachments, oldest first (``with_shared``: each with its
    ``shared_connections_by_attachment``), in one statement."""
    stmt = _stmt_attachments(False, project_id is not None, bool(volume_id),
                             bool(instance_id), with_shared)
    rows = conn.execute(stmt, {"project_id": project_id,
                               "volume_id": volume_id,
                               "instance_uuid": instance_id})
    return _attachments_from_rows(rows, with_shared)


@functools.cache
def _stmt_shared_with():
    return (sa.select(_shared.c.id)
            .join(_shared_volume, _shared_volume.c.id == _shared.c.volume_id)
            .where(_shared.c.id != sa.bindparam("attachment_id"),
                   _shared.c.attached_host == sa.bindparam("attached_host"),
                   _one_of(_shared.c.attach_status, states.CONNECTED),
                   _shared_volume.c.shared_targets == sa.true(),
                   _shared_volume.c.service_uuid.is_not_distinct_from(
                       sa.bindparam("service_uuid", type_=sa.String)))
            .order_by(_shared.c.created_at, _shared.c.id))


def attachment_shared_with(conn, attachment, volume):
    """Ids of the other connected attachments that share ``attachment``'s
    host connection (see ``_SHARES_CONNECTION``); ``volume`` is its volume.
    No query when it cannot share one."""
    if (attachment["attach_status"] not in states.CONNECTED
            or not attachment["attached_host"]
            or not volume["shared_targets"]):
        return []
    return list(conn.execute(_stmt_shared_with(), {
        "attachment_id": attachment["id"],
        "attached_host": attachment["attached_host"],
        "service_uuid": volume["service_uuid"]}).scalars())


# -- attachment specs (the stored connector) ----------------------------------

@functools.cache
def _stmt_specs_get():
    return sa.select(attachment_specs.c.key, attachment_specs.c.value).where(
        attachment_specs.c.attachment_id == sa.bindparam("attachment_id"))


def _spec_texts(connector):
    """{key: JSON text of its value}: the rows of a connector."""
    return {str(key): json.dumps(value)
            for key, value in (connector or {}).items()}


def attachment_specs_get(conn, attachment_id):
    """The stored connector: {key: value}."""
    return {key: json.loads(value) for key, value in conn.execute(
        _stmt_specs_get(), {"attachment_id": attachment_id})}


def attachment_specs_set(conn, attachment_id, connector, known_empty=False):
    """Store ``connector`` as the attachment's specs: one row per key,
    values as JSON; nothing is written when they do not change.
    ``known_empty``: the attachment was never connected, so it has no
    specs (only a connect writes them): nothing to read or delete."""
    texts = _spec_texts(connector)
    stored = {} if known_empty else dict(conn.execute(
        _stmt_specs_get(), {"attachment_id": attachment_id}).all())
    if texts == stored:
        return
    if stored:
        conn.execute(sa.delete(attachment_specs).where(
            attachment_specs.c.attachment_id == attachment_id))
    if texts:
        conn.execute(sa.insert(attachment_specs), [
            {"attachment_id": attachment_id, "key": key, "value": value}
            for key, value in texts.items()])
