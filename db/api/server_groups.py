"""Queries of the compute database's server groups (``instance_groups``)
and their members (``instance_group_members``).

``instance_group_place`` is where a group's policy holds under
concurrency: it locks the group's row (``SELECT ... FOR UPDATE`` on
PostgreSQL; the write transaction is ``BEGIN IMMEDIATE`` on SQLite, which
already admits one writer), reads where the group's servers are (their
hosts, and the destinations of their live migrations under way), lets the
caller choose, and records the choice (the servers' ``host``, a
migration's destination) before the lock goes: a second placement in the
same group sees the first.
"""
import json
import uuid as uuidlib

from sqlalchemy import delete, insert, select, update

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

GROUPS = models.InstanceGroup.__table__
MEMBERS = models.InstanceGroupMember.__table__
MIGRATIONS = models.Migration.__table__

# live migrations whose destination counts as a member's host
_MIGRATING = ("queued", "preparing", "running", "post-migrating")


def _group(row, members):
    row = dict(row)
    row["rules"] = json.loads(row["rules"]) if row.get("rules") else {}
    row["members"] = members
    return row


def _live_members(conn, group_ids):
    """group id -> the uuids of its members that are not deleted, in the
    order they joined."""
    result = {gid: [] for gid in group_ids}
    if not group_ids:
        return result
    rows = conn.execute(
        select(MEMBERS.c.group_id, MEMBERS.c.instance_uuid)
        .join(c.INSTANCES, c.INSTANCES.c.uuid == MEMBERS.c.instance_uuid)
        .where(MEMBERS.c.group_id.in_(group_ids), c.INSTANCES.c.deleted == 0)
        .order_by(MEMBERS.c.id)).all()
    for gid, uuid in rows:
        result[gid].append(uuid)
    return result


def _with_members(conn, rows):
    members = _live_members(conn, [r["id"] for r in rows])
    return [_group(r, members[r["id"]]) for r in rows]


def instance_group_create(values):
    """Store a group (``rules`` a dict); returns it with no members."""
    values = dict(values, created_at=c.now(),
                  rules=json.dumps(values.get("rules") or {}))
    values.setdefault("uuid", str(uuidlib.uuid4()))

    def create(conn):
        group_id = conn.execute(
            insert(GROUPS).values(**values)).inserted_primary_key[0]
        return _group(dict(values, id=group_id, updated_at=None), [])
    return c.database().write(create)


def instance_group_get(group_uuid):
    """The group with its live members; InstanceGroupNotFound."""
    def get(conn):
        rows = c.dicts(conn.execute(select(GROUPS).where(
            GROUPS.c.uuid == group_uuid)))
        if not rows:
            raise exception.InstanceGroupNotFound(group_uuid=group_uuid)
        return _with_members(conn, rows)[0]
    return c.database().read(get)


def instance_group_get_all(project_id=None):
    """Every group (of ``project_id``), oldest first, with live members."""
    q = select(GROUPS).order_by(GROUPS.c.id)
    if project_id is not None:
        q = q.where(GROUPS.c.project_id == project_id)
    return c.database().read(lambda conn: _with_members(
        conn, c.dicts(conn.execute(q))))


def instance_group_get_by_instance(instance_uuid):
    """The group ``instance_uuid`` was created into, or None."""
    def get(conn):
        rows = c.dicts(conn.execute(
            select(GROUPS).join(MEMBERS, MEMBERS.c.group_id == GROUPS.c.id)
            .where(MEMBERS.c.instance_uuid == instance_uuid).limit(1)))
        return _with_members(conn, rows)[0] if rows else None
    return c.database().read(get)


def instance_group_destroy(group_uuid):
    """Delete the group and its member rows; InstanceGroupNotFound."""
    def destroy(conn):
        row = conn.execute(select(GROUPS.c.id).where(
            GROUPS.c.uuid == group_uuid)).first()
        if row is None:
            raise exception.InstanceGroupNotFound(group_uuid=group_uuid)
        conn.execute(delete(MEMBERS).where(MEMBERS.c.group_id == row[0]))
        conn.execute(delete(GROUPS).where(GROUPS.c.id == row[0]))
    c.database().write(destroy)


def instance_group_add_members(group_uuid, instance_uuids):
    """Record ``instance_uuids`` as members; InstanceGroupNotFound when the
    group went meanwhile."""
    def add(conn):
        row = conn.execute(select(GROUPS.c.id).where(
            GROUPS.c.uuid == group_uuid)).first()
        if row is None:
            raise exception.InstanceGroupNotFound(group_uuid=group_uuid)
        now = c.now()
        for uuid in instance_uuids:
            conn.execute(insert(MEMBERS).values(
                group_id=row[0], instance_uuid=uuid, created_at=now))
    c.database().write(add)


def instance_group_members_delete(instance_uuid, conn):
    """Drop ``instance_uuid`` from its groups (in the caller's
    transaction: ``instance_destroy``)."""
    conn.execute(delete(MEMBERS).where(
        MEMBERS.c.instance_uuid == instance_uuid))


def instance_group_place(group_uuid, choose, moving=False, migration_id=None,
                         task_state="scheduling"):
    """Place servers of a group under the group's lock.

    ``choose(group, member_hosts)`` gets the group and the hosts its
    servers occupy (``{instance_uuid: host}``: placed members, and a
    member live-migrating counted at its destination too, as
    ``(uuid, "migration")``) and returns ``{instance_uuid: host}``; those
    servers get that host (only while in ``task_state``: a server deleted
    or changed meanwhile is left out of the answer), or, ``moving`` (a live
    migration), its record ``migration_id`` (when there is one) gets that
    destination ("preparing").  Returns what was
    recorded.  Exceptions of ``choose`` (NoValidHost) roll back."""
    def place(conn):
        locked = conn.execute(select(GROUPS).where(
            GROUPS.c.uuid == group_uuid).with_for_update())
        rows = c.dicts(locked)
        if not rows:
            raise exception.InstanceGroupNotFound(group_uuid=group_uuid)
        group = _with_members(conn, rows)[0]
        member_hosts = {}
        placed = conn.execute(
            select(c.INSTANCES.c.uuid, c.INSTANCES.c.host)
            .join(MEMBERS, MEMBERS.c.instance_uuid == c.INSTANCES.c.uuid)
            .where(MEMBERS.c.group_id == group["id"],
                   c.INSTANCES.c.deleted == 0,
                   c.INSTANCES.c.host.isnot(None))).all()
        member_hosts.update({uuid: host for uuid, host in placed})
        migrating = conn.execute(
            select(MIGRATIONS.c.instance_uuid, MIGRATIONS.c.dest_compute)
            .join(MEMBERS, MEMBERS.c.instance_uuid == MIGRATIONS.c.instance_uuid)
            .where(MEMBERS.c.group_id == group["id"],
                   MIGRATIONS.c.status.in_(_MIGRATING),
                   MIGRATIONS.c.dest_compute.isnot(None))).all()
        member_hosts.update({(uuid, "migration"): host
                             for uuid, host in migrating})
        chosen = choose(group, member_hosts)
        recorded = {}
        for uuid, host in chosen.items():
            if moving:
                if migration_id is not None:
                    conn.execute(update(MIGRATIONS)
                                 .where(MIGRATIONS.c.id == migration_id)
                                 .values(dest_compute=host, dest_node=host,
                                         status="preparing",
                                         updated_at=c.now()))
                recorded[uuid] = host
                continue
            done = conn.execute(
                update(c.INSTANCES)
                .where(c.INSTANCES.c.uuid == uuid,
                       c.INSTANCES.c.deleted == 0,
                       c.INSTANCES.c.task_state == task_state)
                .values(host=host, node=host)).rowcount
            if done:
                recorded[uuid] = host
        return recorded
    return c.database().write(place)
