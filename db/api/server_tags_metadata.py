"""A server's tags (``instance_tags``) and metadata (the ``metadata``
column of ``instances``, JSON text).

Each change is one transaction that first takes the server's row ``FOR
UPDATE`` (PostgreSQL; SQLite's writes are serial): a change racing the
server's delete either runs before it (and the delete drops the tags) or
finds no server (InstanceNotFound), never leaving a tag behind; two
metadata changes merge one after the other, neither lost."""
import json

from sqlalchemy import delete, func, insert, select, update

from volattach.db.api import _common as c
from volattach import exception

_T = c.TAGS


def _lock_instance(conn, uuid):
    row = c.first_dict(conn.execute(
        select(c.INSTANCES.c.id, c.INSTANCES.c.metadata)
        .where(c.INSTANCES.c.uuid == uuid, c.INSTANCES.c.deleted == 0)
        .with_for_update()))
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return row


def _tags(conn, uuid):
    return list(conn.execute(select(_T.c.tag).where(_T.c.instance_uuid == uuid)
                             .order_by(c.binary(_T.c.tag))).scalars())


def tag_get_all(uuid):
    return c.database().read_single(lambda conn: _tags(conn, uuid))


def tags_by_instances(uuids):
    """``{uuid: [tag, ...]}`` for every uuid (tags in code point order)."""
    result = {u: [] for u in uuids}
    if not result:
        return result
    rows = c.read(select(_T.c.instance_uuid, _T.c.tag)
                  .where(_T.c.instance_uuid.in_(list(result)))
                  .order_by(c.binary(_T.c.tag)))
    for row in rows:
        result[row["instance_uuid"]].append(row["tag"])
    return result


def tag_add(uuid, tag, max_count):
    """Add ``tag``; False when the server has it already; TooManyTags when
    it holds ``max_count`` tags."""
    def write(conn):
        _lock_instance(conn, uuid)
        tags = _tags(conn, uuid)
        if tag in tags:
            return False
        if len(tags) >= max_count:
            raise exception.TooManyTags(maximum=max_count)
        conn.execute(insert(_T).values(instance_uuid=uuid, tag=tag))
        return True
    return c.database().write(write)


def tag_set_all(uuid, tags):
    """Replace the server's tags with ``tags`` (no duplicates)."""
    def write(conn):
        _lock_instance(conn, uuid)
        conn.execute(delete(_T).where(_T.c.instance_uuid == uuid))
        for tag in dict.fromkeys(tags):
            conn.execute(insert(_T).values(instance_uuid=uuid, tag=tag))
        return _tags(conn, uuid)
    return c.database().write(write)


def tag_delete(uuid, tag):
    def write(conn):
        _lock_instance(conn, uuid)
        if not conn.execute(delete(_T).where(_T.c.instance_uuid == uuid,
                                             _T.c.tag == tag)).rowcount:
            raise exception.InstanceTagNotFound(instance_id=uuid, tag=tag)
    c.database().write(write)


def tag_delete_all(uuid):
    def write(conn):
        _lock_instance(conn, uuid)
        conn.execute(delete(_T).where(_T.c.instance_uuid == uuid))
    c.database().write(write)


def tag_count(uuid):
    return c.database().read_single(lambda conn: conn.execute(
        select(func.count()).select_from(_T)
        .where(_T.c.instance_uuid == uuid)).scalar())


def instance_metadata_update(uuid, metadata, replace=False, delete_key=None,
                             max_items=-1):
    """Merge ``metadata`` into the server's (``replace``: instead of it;
    ``delete_key``: remove that key, KeyError when missing) and return the
    result; MetadataLimitExceeded when it would hold more than
    ``max_items`` (-1: no limit), with nothing written."""
    def write(conn):
        row = _lock_instance(conn, uuid)
        current = json.loads(row["metadata"]) if row["metadata"] else {}
        if delete_key is not None:
            if delete_key not in current:
                raise KeyError(delete_key)
            del current[delete_key]
        elif replace:
            current = dict(metadata)
        else:
            current.update(metadata)
        if 0 <= max_items < len(current) and delete_key is None:
            raise exception.MetadataLimitExceeded(allowed=max_items)
        conn.execute(update(c.INSTANCES).where(c.INSTANCES.c.id == row["id"])
                     .values(metadata=json.dumps(current),
                             updated_at=c.now()))
        return current
    return c.database().write(write)
