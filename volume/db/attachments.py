"""Queries of attachments and their attachment_specs (the stored
connector), including the shared-connection lookups."""
import functools
import json
import uuid

import sqlalchemy as sa

from volattach import exception
from volattach.volume import states
from volattach.volume.db.common import (_one_of, attachment_specs,
                                        attachments, utcnow, volumes)
from volattach.volume.db.volumes import _volume_dict

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
    att["legacy"] = bool(att["legacy"])
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



# -- attachments of the attach actions from before 3.27 -----------------------

def legacy_pending(conn, volume_id):
    """The volume's os-reserve reservations not yet attached, oldest
    first."""
    query = (sa.select(attachments)
             .where(attachments.c.volume_id == volume_id,
                    attachments.c.legacy == sa.true(),
                    attachments.c.attach_status != states.ATT_ATTACHED)
             .order_by(attachments.c.created_at, attachments.c.id))
    return [_attachment_dict(tuple(row)) for row in conn.execute(query)]


def attached_of_volume(conn, volume_id):
    """The volume's attached attachments (either API), oldest first."""
    query = (sa.select(attachments)
             .where(attachments.c.volume_id == volume_id,
                    attachments.c.attach_status == states.ATT_ATTACHED)
             .order_by(attachments.c.attach_time, attachments.c.id))
    return [_attachment_dict(tuple(row)) for row in conn.execute(query)]
