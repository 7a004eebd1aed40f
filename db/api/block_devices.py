"""Queries of the compute database's ``block_device_mappings`` table."""
from sqlalchemy import bindparam, delete, insert, select, update

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

_BDMS_BY_INSTANCES = (select(c.BDMS)
                      .where(c.BDMS.c.instance_uuid.in_(
                          bindparam("uuids", expanding=True)))
                      .order_by(c.BDMS.c.id))
# The writes of the conductor's attach and detach workflows, built once like
# the API's reads; an UPDATE or INSERT without .values() takes its columns
# from the parameters of each execution.
_BDM_UPDATE_RETURNING = (update(c.BDMS).where(c.BDMS.c.id == bindparam("bdm_id_"))
                         .returning(*c.BDMS.c))
_BDM_IDS_OF_INSTANCE = select(c.BDMS.c.id).where(
    c.BDMS.c.instance_uuid == bindparam("instance_uuid_"))
_BDM_INSERT_RETURNING = insert(c.BDMS).returning(*c.BDMS.c)
_BDM_DELETE = delete(c.BDMS).where(c.BDMS.c.id == bindparam("bdm_id_"))
_BDM_DELETE_IF_ATTACHMENT = _BDM_DELETE.where(
    c.BDMS.c.attachment_id.is_not_distinct_from(bindparam("attachment_id_")))
_BDM_BY_ID = select(c.BDMS).where(c.BDMS.c.id == bindparam("bdm_id_"))
_BDM_UPDATE_IF_ATTACHMENT_RETURNING = _BDM_UPDATE_RETURNING.where(
    c.BDMS.c.attachment_id.is_not_distinct_from(bindparam("attachment_id_")))
# The instance a new mapping is for, read in the mapping's transaction and
# share-locked there (PostgreSQL; SQLite's writes are serial): a delete
# marks the instance (task_state ``deleting``, then ``deleted``) with an
# UPDATE, which waits for the INSERT's commit, so the delete's later read of
# the instance's mappings cannot miss one, and no mapping is added after.
_INSTANCE_FOR_NEW_BDM = (select(c.INSTANCES.c.task_state)
                         .where(c.INSTANCES.c.uuid == bindparam("instance_uuid_"),
                                c.INSTANCES.c.deleted == 0)
                         .with_for_update(read=True))
_BDM_BY_VOLUME_AND_INSTANCE = (select(c.BDMS)
                               .where(c.BDMS.c.volume_id == bindparam("volume_id"),
                                      c.BDMS.c.instance_uuid == bindparam("instance_uuid"))
                               .order_by(c.BDMS.c.id).limit(1))


# An abandoned reservation takes the instance's row exclusively: it waits
# for a mapping's INSERT in flight (which holds the row shared) to commit,
# and a mapping created after it reads the reservation it wrote.
_INSTANCE_FOR_ABANDON = (select(c.INSTANCES.c.id)
                         .where(c.INSTANCES.c.uuid == bindparam("instance_uuid_"),
                                c.INSTANCES.c.deleted == 0)
                         .with_for_update())
_ABANDONED_BY_UUID = select(c.ABANDONED.c.bdm_uuid).where(
    c.ABANDONED.c.bdm_uuid == bindparam("bdm_uuid_"))
# only while it holds no attachment: only the attach that gave up would
# have given it one
_BDM_DELETE_BY_UUID = delete(c.BDMS).where(
    c.BDMS.c.uuid == bindparam("bdm_uuid_"),
    c.BDMS.c.instance_uuid == bindparam("instance_uuid_"),
    c.BDMS.c.attachment_id.is_(None))


def _check_instance_takes_mappings(conn, values):
    """Raise unless the mapping ``values`` may be created: its instance
    exists and no delete has begun (see ``_INSTANCE_FOR_NEW_BDM``), and
    its uuid is not one an attach abandoned (``bdm_abandon_reservation``:
    ``ReservationAbandoned``)."""
    instance_uuid = values["instance_uuid"]
    found = conn.execute(_INSTANCE_FOR_NEW_BDM,
                         {"instance_uuid_": instance_uuid}).first()
    if found is None:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    if found.task_state == "deleting":
        raise exception.InstanceInvalidState(
            method="create a block device mapping of",
            instance_uuid=instance_uuid, attr="task_state", state="deleting")
    # a statement of its own, after the one that waited for the instance's
    # row: under READ COMMITTED it sees an abandon that committed during
    # that wait (a subquery of the locking SELECT would not)
    bdm_uuid = values.get("uuid")
    if bdm_uuid and conn.execute(_ABANDONED_BY_UUID,
                                 {"bdm_uuid_": bdm_uuid}).first():
        raise exception.ReservationAbandoned(bdm_uuid=bdm_uuid,
                                             instance_uuid=instance_uuid)


def bdm_create(values):
    """Create a BDM; ``InstanceNotFound`` or ``InstanceInvalidState`` (409)
    when its instance is gone or being deleted."""
    def create(s):
        _check_instance_takes_mappings(s, values)
        row = models.BlockDeviceMapping(**values)
        s.add(row)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(create)


def bdm_update(bdm_id, values):
    def change(s):
        row = s.get(models.BlockDeviceMapping, bdm_id)
        if row is None:
            raise exception.BDMNotFound(id=bdm_id)
        for key, value in values.items():
            setattr(row, key, value)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(change)


def bdm_update_returning(bdm_id, values):
    """``bdm_update`` in one statement: UPDATE ... RETURNING the row, without
    reading it first (a workflow's BDM saves: SQLite >= 3.35, PostgreSQL),
    and no transaction around it (``write_single``: no BEGIN and COMMIT
    round trips on PostgreSQL)."""
    db = c.database()
    if not db.engine.dialect.update_returning:
        return bdm_update(bdm_id, values)
    row = db.write_single(lambda conn: c.first_dict(conn.execute(
        _BDM_UPDATE_RETURNING, dict(values, bdm_id_=bdm_id))))
    if row is None:
        raise exception.BDMNotFound(id=bdm_id)
    return row


def bdm_update_if_attachment(bdm_id, attachment_id, values):
    """Update the BDM only while it holds ``attachment_id`` (a workflow that
    moves the record to another attachment: a swap, an offload).
    ``(True, row)`` once written; ``(False, row)``, with nothing written,
    when it holds another attachment since (a concurrent swap or offload
    moved it); ``BDMNotFound`` when a detach or a delete took it."""
    params = dict(values, bdm_id_=bdm_id, attachment_id_=attachment_id)

    def change(conn):
        if conn.dialect.update_returning:
            row = c.first_dict(conn.execute(
                _BDM_UPDATE_IF_ATTACHMENT_RETURNING, params))
            if row is not None:
                return True, row
        elif conn.execute(update(c.BDMS).where(
                c.BDMS.c.id == bindparam("bdm_id_"),
                c.BDMS.c.attachment_id.is_not_distinct_from(
                    bindparam("attachment_id_"))), params).rowcount:
            return True, c.one_dict(conn.execute(_BDM_BY_ID, params))
        row = c.first_dict(conn.execute(_BDM_BY_ID, params))
        if row is None:
            raise exception.BDMNotFound(id=bdm_id)
        return False, row
    return c.database().write(change)


def bdm_create_unless_new_mappings(values, seen_ids):
    """Create a BDM unless its instance has a mapping whose id is not in
    ``seen_ids`` (one created since the caller listed them): then None and
    nothing is written.  The caller serializes the creations of one
    instance's mappings (the compute's per-instance lock), so the check and
    the INSERT need no lock of their own; its instance is checked as in
    ``bdm_create``."""
    db = c.database()
    seen = set(seen_ids)

    def create(conn):
        _check_instance_takes_mappings(conn, values)
        ids = conn.execute(_BDM_IDS_OF_INSTANCE,
                           {"instance_uuid_": values["instance_uuid"]}).scalars()
        if any(bdm_id not in seen for bdm_id in ids):
            return None
        if not conn.dialect.insert_returning:
            bdm_id = conn.execute(insert(c.BDMS), values).inserted_primary_key[0]
            return c.one_dict(conn.execute(
                select(c.BDMS).where(c.BDMS.c.id == bdm_id)))
        return c.one_dict(conn.execute(_BDM_INSERT_RETURNING, values))
    return db.write(create)


def bdm_abandon_reservation(instance_uuid, bdm_uuid):
    """An attach whose reserve got no answer gives up on record
    ``bdm_uuid`` of ``instance_uuid``: destroy it if the reserve made it,
    and refuse any creation of it from now on (the compute may run a
    reserve that waited in the broker after this, or send its creation
    again).  True when a record was destroyed.

    One transaction, which takes the instance's row exclusively first
    (PostgreSQL; SQLite's writes are serial): a creation in flight holds
    it shared (``_INSTANCE_FOR_NEW_BDM``), so either that creation
    committed before and its record is destroyed here, or it reads the
    reservation written here and is refused.  Calling it again is
    harmless."""
    params = {"instance_uuid_": instance_uuid, "bdm_uuid_": bdm_uuid}

    def abandon(conn):
        # a deleted instance takes no mapping any more: nothing to keep
        alive = conn.execute(_INSTANCE_FOR_ABANDON, params).first()
        destroyed = conn.execute(_BDM_DELETE_BY_UUID, params).rowcount
        if alive and conn.execute(_ABANDONED_BY_UUID, params).first() is None:
            conn.execute(insert(c.ABANDONED), {
                "bdm_uuid": bdm_uuid, "instance_uuid": instance_uuid,
                "created_at": c.now()})
        return bool(destroyed)
    return c.database().write(abandon)


def bdm_destroy(bdm_id):
    c.database().write_single(
        lambda conn: conn.execute(_BDM_DELETE, {"bdm_id_": bdm_id}))


def bdm_destroy_if_attachment(bdm_id, attachment_id):
    """Delete the BDM only while it holds ``attachment_id`` (a detach or a
    delete that deleted that attachment).  None when the record is gone,
    now or before; its row, with nothing written, when it holds another
    attachment since (an offload or a swap changed it, an attach saved its
    attachment into it)."""
    params = {"bdm_id_": bdm_id, "attachment_id_": attachment_id}

    def destroy(conn):
        if conn.execute(_BDM_DELETE_IF_ATTACHMENT, params).rowcount:
            return None
        return c.first_dict(conn.execute(_BDM_BY_ID, params))
    return c.database().write(destroy)


def bdm_get_by_instance_uuids(instance_uuids):
    return c.read(_BDMS_BY_INSTANCES, {"uuids": list(instance_uuids)})


def bdm_get_by_volume_and_instance(volume_id, instance_uuid):
    row = c.read_first(_BDM_BY_VOLUME_AND_INSTANCE,
                       {"volume_id": volume_id, "instance_uuid": instance_uuid})
    if row is None:
        raise exception.VolumeBDMNotFound(volume_id=volume_id)
    return row


def bdm_get_by_volume(volume_id):
    return c.read(select(c.BDMS).where(c.BDMS.c.volume_id == volume_id))


def bdm_get_all_volume_bdms():
    return c.read(select(c.BDMS).where(c.BDMS.c.destination_type == "volume"))
