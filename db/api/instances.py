"""Queries of the compute database's ``instances`` table (with their block
device mappings where one request reads both)."""
import json
import re

from sqlalchemy import (LABEL_STYLE_TABLENAME_PLUS_COL, bindparam, delete, func,
                        insert, select, tuple_, update)

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

# The SELECTs of every API request, built once with their values bound at
# execution: building a statement and its cache key costs SQLAlchemy more
# than running it.
_INSTANCE_BY_UUID = (select(c.INSTANCES)
                     .where(c.INSTANCES.c.uuid == bindparam("uuid"),
                            c.INSTANCES.c.deleted == 0).limit(1))
_INSTANCE_BY_UUID_WITH_DELETED = (select(c.INSTANCES)
                                  .where(c.INSTANCES.c.uuid == bindparam("uuid"))
                                  .limit(1))
# An instance and its BDMs in one statement: one row per BDM (or a single
# row of NULL BDM columns), the instance's columns first.
_INSTANCE_WITH_BDMS = (
    select(c.INSTANCES, c.BDMS)
    .select_from(c.INSTANCES.outerjoin(
        c.BDMS, c.BDMS.c.instance_uuid == c.INSTANCES.c.uuid))
    .where(c.INSTANCES.c.uuid == bindparam("uuid"), c.INSTANCES.c.deleted == 0)
    .order_by(c.BDMS.c.id)
    .set_label_style(LABEL_STYLE_TABLENAME_PLUS_COL))
_INSTANCE_KEYS = tuple(col.key for col in c.INSTANCES.c)
_BDM_KEYS = tuple(col.key for col in c.BDMS.c)
# GET os-volume_attachments: the server's project and, per volume mapping,
# only the columns its view shows (not connection_info, a large text).  The
# destination test is in the ON clause so that a server without volumes
# still gives its one row (with NULL mapping columns).
_VOLUME_ATTACHMENT_COLUMNS = ("id", "uuid", "instance_uuid", "volume_id", "device_name",
                              "tag", "delete_on_termination", "attachment_id",
                              "attach_mode")
_INSTANCE_VOLUME_ATTACHMENTS = (
    select(c.INSTANCES.c.project_id,
           *[c.BDMS.c[name] for name in _VOLUME_ATTACHMENT_COLUMNS])
    .select_from(c.INSTANCES.outerjoin(
        c.BDMS, (c.BDMS.c.instance_uuid == c.INSTANCES.c.uuid)
        & (c.BDMS.c.destination_type == "volume")))
    .where(c.INSTANCES.c.uuid == bindparam("uuid"), c.INSTANCES.c.deleted == 0)
    .order_by(c.BDMS.c.id))


def _with_sizes(values):
    """``values`` with the flavor's vcpus and memory_mb (the quotas of
    cores and ram count these columns)."""
    values = c.fix_keys(values)
    flavor = values.get("flavor")
    if flavor:
        flavor = json.loads(flavor)
        values.setdefault("vcpus", int(flavor.get("vcpus") or 0))
        values.setdefault("memory_mb", int(flavor.get("memory_mb") or 0))
    return values


def instance_create(values):
    def create(s):
        row = models.Instance(**_with_sizes(values))
        s.add(row)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(create)


def instance_create_many(values_list, project_id, user_id, admit, tags=()):
    """Create instance rows of one project in one transaction that holds
    the project's quota lock (``db.api.quotas.lock_project``):
    ``admit(project_usages, user_usages)`` runs first with the counted
    usage and returns how many of ``values_list`` to create (it raises to
    create none).  Each created server gets ``tags``.  The rows created,
    in order."""
    from volattach.db.api import quotas

    def create(conn):
        quotas.lock_project(conn, project_id)
        count = admit(quotas.count_instances(conn, project_id),
                      quotas.count_instances(conn, project_id, user_id))
        rows = []
        for values in values_list[:count]:
            values = _with_sizes(values)
            # the Core table names the column "metadata"
            values["metadata"] = values.pop("metadata_", None)
            new_id = conn.execute(insert(c.INSTANCES).values(
                **values)).inserted_primary_key[0]
            rows.append(c.one_dict(conn.execute(
                select(c.INSTANCES).where(c.INSTANCES.c.id == new_id))))
            for tag in dict.fromkeys(tags):
                conn.execute(insert(c.TAGS).values(
                    instance_uuid=values["uuid"], tag=tag))
        return rows
    return c.database().write(create)


def instance_get_by_uuid(uuid, read_deleted=False):
    row = c.read_first(_INSTANCE_BY_UUID_WITH_DELETED if read_deleted
                       else _INSTANCE_BY_UUID, {"uuid": uuid})
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return row


def instance_get_with_bdms(uuid):
    """A (not deleted) instance's row and its BDM rows in id order, in one
    statement: what every API request about one server's volumes needs
    first.  InstanceNotFound when there is no such instance."""
    rows = c.database().read_single(
        lambda conn: conn.execute(_INSTANCE_WITH_BDMS, {"uuid": uuid}).all())
    if not rows:
        raise exception.InstanceNotFound(instance_id=uuid)
    split = len(_INSTANCE_KEYS)
    bdm_id = split + _BDM_KEYS.index("id")
    instance = dict(zip(_INSTANCE_KEYS, rows[0][:split]))
    # the BDM columns are NULL when the instance has none
    bdms = [dict(zip(_BDM_KEYS, row[split:])) for row in rows
            if row[bdm_id] is not None]
    return instance, bdms


def instance_volume_attachments(uuid):
    """``(project_id, rows)`` of a (not deleted) instance: its volume
    mappings (destination ``volume``) in id order, each a row with the
    attributes ``_VOLUME_ATTACHMENT_COLUMNS`` names, in one statement.  The
    list of a server's attachments reads nothing else.  InstanceNotFound
    when there is no such instance."""
    rows = c.database().read_single(
        lambda conn: conn.execute(_INSTANCE_VOLUME_ATTACHMENTS, {"uuid": uuid}).all())
    if not rows:
        raise exception.InstanceNotFound(instance_id=uuid)
    # a server without volume mappings: one row, its mapping columns NULL
    return rows[0].project_id, [row for row in rows if row.id is not None]


def instance_get_all(filters=None, limit=None, marker=None, sort_dir="desc"):
    """Instances matching ``filters`` (project_id, host, deleted, uuids...)."""
    filters = dict(filters or {})
    read_deleted = filters.pop("read_deleted", False)

    def get_all(s):
        q = select(models.Instance)
        if not read_deleted:
            q = q.where(models.Instance.deleted == 0)
        for key in ("project_id", "host", "vm_state", "user_id", "reservation_id"):
            if filters.get(key) is not None:
                q = q.where(getattr(models.Instance, key) == filters[key])
        if filters.get("uuids") is not None:
            q = q.where(models.Instance.uuid.in_(filters["uuids"]))
        if filters.get("flavorid") is not None:
            q = q.where(c.contains(models.Instance.flavor,
                                   '"flavorid": %s'
                                   % json.dumps(filters["flavorid"])))
        q = _tag_filters(q, filters)
        if filters.get("locked") is not None:
            q = q.where(models.Instance.locked == bool(filters["locked"]))
        if filters.get("image_ref") is not None:
            q = q.where(models.Instance.image_ref == filters["image_ref"])
        if filters.get("changes-since") is not None:
            q = q.where(func.coalesce(models.Instance.updated_at,
                                      models.Instance.created_at)
                        >= filters["changes-since"])
        if filters.get("changes-before") is not None:
            q = q.where(func.coalesce(models.Instance.updated_at,
                                      models.Instance.created_at)
                        <= filters["changes-before"])
        order = (models.Instance.created_at.desc(), models.Instance.id.desc()) \
            if sort_dir == "desc" else (models.Instance.created_at, models.Instance.id)
        if marker:
            mrow = s.execute(select(models.Instance.created_at, models.Instance.id)
                             .where(models.Instance.uuid == marker)).first()
            if mrow is None:
                raise exception.InstanceNotFound(instance_id=marker)
            # a row-value comparison, not (a < x OR a = x AND b < y): both
            # databases start the index scan at the marker with it, where
            # the OR form read every row before the marker (scenario C)
            key = tuple_(models.Instance.created_at, models.Instance.id)
            position = tuple_(mrow.created_at, mrow.id)
            q = q.where(key < position if sort_dir == "desc" else key > position)
        q = q.order_by(*order)
        if not filters.get("name"):
            if limit:
                q = q.limit(limit)
            return [c.row_dict(r) for r in s.scalars(q)]
        # the name is a regular expression searched as Nova does, by
        # Python's re on either database: PostgreSQL's ~ has a syntax of
        # its own and refused some of Python's (500)
        name = re.compile(filters["name"])
        rows = []
        for row in s.scalars(q.execution_options(yield_per=200)):
            if row.display_name is not None and name.search(row.display_name):
                rows.append(c.row_dict(row))
                if limit and len(rows) >= limit:
                    break
        return rows
    return c.orm_read(get_all)


def _tag_filters(q, filters):
    """Nova's tag filters: ``tags`` (every one), ``tags-any`` (at least
    one), ``not-tags`` (not every one), ``not-tags-any`` (none)."""
    def having(tags):
        return (select(c.TAGS.c.instance_uuid)
                .where(c.TAGS.c.tag.in_(tags))
                .group_by(c.TAGS.c.instance_uuid)
                .having(func.count(func.distinct(c.TAGS.c.tag)) == len(tags)))

    def any_of(tags):
        return select(c.TAGS.c.instance_uuid).where(c.TAGS.c.tag.in_(tags))
    uuid = models.Instance.uuid
    if filters.get("tags"):
        q = q.where(uuid.in_(having(list(set(filters["tags"])))))
    if filters.get("tags-any"):
        q = q.where(uuid.in_(any_of(filters["tags-any"])))
    if filters.get("not-tags"):
        q = q.where(uuid.not_in(having(list(set(filters["not-tags"])))))
    if filters.get("not-tags-any"):
        q = q.where(uuid.not_in(any_of(filters["not-tags-any"])))
    return q


def _state_condition(column, expected):
    """``column`` is one of ``expected`` (which may hold None)."""
    expected = list(expected)
    conds = []
    non_null = [e for e in expected if e is not None]
    if non_null:
        conds.append(column.in_(non_null))
    if None in expected:
        conds.append(column.is_(None))
    return conds[0] if len(conds) == 1 else (conds[0] | conds[1])


def instance_update(uuid, values, expected_task_state=None, expected_vm_state=None):
    """Update an instance; with expected states, a compare-and-swap.

    ``expected_task_state`` / ``expected_vm_state`` are lists of allowed
    current values (None allowed as an element).  On mismatch raise
    UnexpectedTaskState / UnexpectedVMState with the actual value.
    """
    values = c.fix_keys(values)

    def change(s):
        q = update(models.Instance).where(models.Instance.uuid == uuid,
                                          models.Instance.deleted == 0)
        for column, expected in ((models.Instance.task_state, expected_task_state),
                                 (models.Instance.vm_state, expected_vm_state)):
            if expected is not None:
                q = q.where(_state_condition(column, expected))
        values.setdefault("updated_at", c.now())
        result = s.execute(q.values(**values))
        if result.rowcount == 0:
            row = s.scalars(select(models.Instance).where(
                models.Instance.uuid == uuid, models.Instance.deleted == 0)).first()
            if row is None:
                raise exception.InstanceNotFound(instance_id=uuid)
            if expected_task_state is not None and row.task_state not in expected_task_state:
                raise exception.UnexpectedTaskState(expected=expected_task_state,
                                                    actual=row.task_state)
            raise exception.UnexpectedVMState(expected=expected_vm_state,
                                              actual=row.vm_state)
        row = s.scalars(select(models.Instance).where(models.Instance.uuid == uuid)
                        .execution_options(populate_existing=True)).first()
        return c.row_dict(row)
    return c.orm_write(change)


def instance_destroy(uuid):
    """Soft-delete: the row stays (deleted = id) for instance actions."""
    now = c.now()

    def destroy(s):
        row = s.scalars(select(models.Instance).where(
            models.Instance.uuid == uuid, models.Instance.deleted == 0)).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        row.deleted = row.id
        row.deleted_at = now
        row.terminated_at = now
        row.vm_state = "deleted"
        row.task_state = None
        # a deleted instance takes no new mapping: its abandoned
        # reservations have nothing left to refuse
        s.execute(delete(c.ABANDONED).where(
            c.ABANDONED.c.instance_uuid == uuid))
        # nor is it a member of its server group any more
        s.execute(delete(models.InstanceGroupMember.__table__).where(
            models.InstanceGroupMember.instance_uuid == uuid))
        s.execute(delete(c.TAGS).where(c.TAGS.c.instance_uuid == uuid))
        s.flush()
        return c.row_dict(row)
    return c.orm_write(destroy)


def instance_count_by_host(hosts):
    hosts = list(hosts)
    rows = c.database().read_single(lambda conn: conn.execute(
        select(c.INSTANCES.c.host, func.count())
        .where(c.INSTANCES.c.deleted == 0, c.INSTANCES.c.host.in_(hosts))
        .group_by(c.INSTANCES.c.host)).all())
    counts = {h: 0 for h in hosts}
    counts.update({h: n for h, n in rows})
    return counts
