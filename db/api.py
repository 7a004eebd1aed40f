"""Data access for the compute database: small functions, one transaction each.

Objects call these (``objects/*.py``); nothing above the objects layer talks
SQL.  Rows come back as plain dicts so that objects never hold ORM state.
Conditional updates (``instance_update`` with ``expected_task_state``) are
compare-and-swap UPDATEs, so two API workers cannot both start an operation
on one server.
"""

from sqlalchemy import (DateTime, String, bindparam, delete, func, insert, select,
                        update)

from sqlalchemy import LABEL_STYLE_TABLENAME_PLUS_COL

from volattach.db import engine as db_engine
from volattach.db import models
from volattach import exception


def _now():
    return models.utcnow()


def _row(obj):
    if obj is None:
        return None
    values = {c.key: getattr(obj, c.key) for c in obj.__mapper__.column_attrs}
    if "metadata_" in values:
        values["metadata"] = values.pop("metadata_")
    return values


def _read(stmt, params=None):
    """Rows of a Core SELECT as dicts (reads skip the ORM: no identity map,
    no entity objects; this is the API's hot path).  One statement: no
    transaction around it (``db_engine.lone_statement``)."""
    with db_engine.lone_statement() as conn:
        return [dict(r) for r in conn.execute(stmt, params).mappings()]


def _read_one(stmt):
    rows = _read(stmt.limit(1))
    return rows[0] if rows else None


def _read_first(stmt, params):
    """The first row of a prebuilt SELECT (which has its own LIMIT 1)."""
    rows = _read(stmt, params)
    return rows[0] if rows else None


_INSTANCES = models.Instance.__table__
_BDMS = models.BlockDeviceMapping.__table__
_SERVICES = models.Service.__table__
_FLAVORS = models.Flavor.__table__
_ACTIONS = models.InstanceAction.__table__
_EVENTS = models.InstanceActionEvent.__table__

# The SELECTs of every API request, built once with their values bound at
# execution: building a statement and its cache key costs SQLAlchemy about
# three times what running it costs (on SQLite).
_INSTANCE_BY_UUID = (select(_INSTANCES)
                     .where(_INSTANCES.c.uuid == bindparam("uuid"),
                            _INSTANCES.c.deleted == 0).limit(1))
_INSTANCE_BY_UUID_WITH_DELETED = (select(_INSTANCES)
                                  .where(_INSTANCES.c.uuid == bindparam("uuid"))
                                  .limit(1))
_BDMS_BY_INSTANCES = (select(_BDMS)
                      .where(_BDMS.c.instance_uuid.in_(
                          bindparam("uuids", expanding=True)))
                      .order_by(_BDMS.c.id))
# An instance and its BDMs in one statement: one row per BDM (or a single
# row of NULL BDM columns), the instance's columns first.
_INSTANCE_WITH_BDMS = (
    select(_INSTANCES, _BDMS)
    .select_from(_INSTANCES.outerjoin(_BDMS, _BDMS.c.instance_uuid == _INSTANCES.c.uuid))
    .where(_INSTANCES.c.uuid == bindparam("uuid"), _INSTANCES.c.deleted == 0)
    .order_by(_BDMS.c.id)
    .set_label_style(LABEL_STYLE_TABLENAME_PLUS_COL))
_INSTANCE_KEYS = tuple(c.key for c in _INSTANCES.c)
_BDM_KEYS = tuple(c.key for c in _BDMS.c)
# GET os-volume_attachments: the server's project and, per volume mapping,
# only the columns its view shows (not connection_info, a large text).  The
# destination test is in the ON clause so that a server without volumes
# still gives its one row (with NULL mapping columns).
_VOLUME_ATTACHMENT_COLUMNS = ("id", "uuid", "instance_uuid", "volume_id", "device_name",
                              "tag", "delete_on_termination", "attachment_id",
                              "attach_mode")
_INSTANCE_VOLUME_ATTACHMENTS = (
    select(_INSTANCES.c.project_id,
           *[_BDMS.c[name] for name in _VOLUME_ATTACHMENT_COLUMNS])
    .select_from(_INSTANCES.outerjoin(
        _BDMS, (_BDMS.c.instance_uuid == _INSTANCES.c.uuid)
        & (_BDMS.c.destination_type == "volume")))
    .where(_INSTANCES.c.uuid == bindparam("uuid"), _INSTANCES.c.deleted == 0)
    .order_by(_BDMS.c.id))
_ACTION_INSERT = insert(_ACTIONS)
_SERVICE_BY_HOST_AND_BINARY = (select(_SERVICES)
                               .where(_SERVICES.c.host == bindparam("host"),
                                      _SERVICES.c.binary == bindparam("binary"))
                               .limit(1))


def _fix_keys(values):
    values = dict(values)
    if "metadata" in values:
        values["metadata_"] = values.pop("metadata")
    return values


# -- services ---------------------------------------------------------------

def service_create(values):
    with db_engine.session() as s:
        row = models.Service(**values)
        s.add(row)
        s.commit()
        return _row(row)


def service_get_by_host_and_binary(host, binary):
    return _read_first(_SERVICE_BY_HOST_AND_BINARY, {"host": host, "binary": binary})


def service_get(service_id):
    with db_engine.session() as s:
        row = s.get(models.Service, service_id)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        return _row(row)


def service_get_all(binary=None, host=None):
    q = select(_SERVICES).order_by(_SERVICES.c.id)
    if binary:
        q = q.where(_SERVICES.c.binary == binary)
    if host:
        q = q.where(_SERVICES.c.host == host)
    return _read(q)


def service_update(service_id, values):
    with db_engine.session() as s:
        row = s.get(models.Service, service_id)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        for key, value in values.items():
            setattr(row, key, value)
        s.commit()
        return _row(row)


def service_heartbeat(service_id):
    """One UPDATE: report_count + 1 and last_seen_up = now."""
    with db_engine.session() as s:
        result = s.execute(update(models.Service)
                           .where(models.Service.id == service_id)
                           .values(report_count=models.Service.report_count + 1,
                                   last_seen_up=_now()))
        s.commit()
        if result.rowcount == 0:
            raise exception.ServiceNotFound(service_id=service_id)


def service_destroy(service_id):
    with db_engine.session() as s:
        s.execute(delete(models.Service).where(models.Service.id == service_id))
        s.commit()


def service_get_minimum_version(binary):
    with db_engine.session() as s:
        return s.scalar(select(func.min(models.Service.version)).where(
            models.Service.binary == binary, models.Service.forced_down.is_(False)))


# -- flavors ----------------------------------------------------------------

def flavor_get_all():
    return _read(select(_FLAVORS).where(_FLAVORS.c.disabled.is_(False))
                 .order_by(_FLAVORS.c.flavorid))


def flavor_get_by_flavor_id(flavorid):
    row = _read_one(select(_FLAVORS).where(_FLAVORS.c.flavorid == str(flavorid)))
    if row is None:
        raise exception.FlavorNotFound(flavor_id=flavorid)
    return row


# -- instances --------------------------------------------------------------

def instance_create(values):
    with db_engine.session() as s:
        row = models.Instance(**_fix_keys(values))
        s.add(row)
        s.commit()
        return _row(row)


def instance_get_by_uuid(uuid, read_deleted=False):
    row = _read_first(_INSTANCE_BY_UUID_WITH_DELETED if read_deleted
                      else _INSTANCE_BY_UUID, {"uuid": uuid})
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return row


def instance_get_with_bdms(uuid):
    """A (not deleted) instance's row and its BDM rows in id order, in one
    statement: what every API request about one server's volumes needs
    first.  InstanceNotFound when there is no such instance."""
    with db_engine.lone_statement() as conn:
        rows = conn.execute(_INSTANCE_WITH_BDMS, {"uuid": uuid}).all()
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
    with db_engine.lone_statement() as conn:
        rows = conn.execute(_INSTANCE_VOLUME_ATTACHMENTS, {"uuid": uuid}).all()
    if not rows:
        raise exception.InstanceNotFound(instance_id=uuid)
    # a server without volume mappings: one row, its mapping columns NULL
    return rows[0].project_id, [row for row in rows if row.id is not None]


def instance_get_all(filters=None, limit=None, marker=None, sort_dir="desc"):
    """Instances matching ``filters`` (project_id, host, deleted, uuids...)."""
    filters = dict(filters or {})
    with db_engine.session() as s:
        q = select(models.Instance)
        if not filters.pop("read_deleted", False):
            q = q.where(models.Instance.deleted == 0)
        for key in ("project_id", "host", "vm_state", "user_id", "reservation_id"):
            if filters.get(key) is not None:
                q = q.where(getattr(models.Instance, key) == filters[key])
        if filters.get("uuids") is not None:
            q = q.where(models.Instance.uuid.in_(filters["uuids"]))
        if filters.get("name"):
            q = q.where(models.Instance.display_name.contains(filters["name"]))
        order = (models.Instance.created_at.desc(), models.Instance.id.desc()) \
            if sort_dir == "desc" else (models.Instance.created_at, models.Instance.id)
        if marker:
            mrow = s.scalars(select(models.Instance).where(
                models.Instance.uuid == marker)).first()
            if mrow is None:
                raise exception.InstanceNotFound(instance_id=marker)
            if sort_dir == "desc":
                q = q.where((models.Instance.created_at < mrow.created_at) |
                            ((models.Instance.created_at == mrow.created_at) &
                             (models.Instance.id < mrow.id)))
            else:
                q = q.where((models.Instance.created_at > mrow.created_at) |
                            ((models.Instance.created_at == mrow.created_at) &
                             (models.Instance.id > mrow.id)))
        q = q.order_by(*order)
        if limit:
            q = q.limit(limit)
        return [_row(r) for r in s.scalars(q)]


def instance_update(uuid, values, expected_task_state=None, expected_vm_state=None):
    """Update an instance; with expected states, a compare-and-swap.

    ``expected_task_state`` / ``expected_vm_state`` are lists of allowed
    current values (None allowed as an element).  On mismatch raise
    UnexpectedTaskState / UnexpectedVMState with the actual value.
    """
    values = _fix_keys(values)
    with db_engine.session() as s:
        q = update(models.Instance).where(models.Instance.uuid == uuid,
                                          models.Instance.deleted == 0)
        for column, expected in ((models.Instance.task_state, expected_task_state),
                                 (models.Instance.vm_state, expected_vm_state)):
            if expected is None:
                continue
            expected = list(expected)
            conds = []
            non_null = [e for e in expected if e is not None]
            if non_null:
                conds.append(column.in_(non_null))
            if None in expected:
                conds.append(column.is_(None))
            cond = conds[0] if len(conds) == 1 else (conds[0] | conds[1])
            q = q.where(cond)
        values.setdefault("updated_at", _now())
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
        s.commit()
        row = s.scalars(select(models.Instance).where(models.Instance.uuid == uuid)).first()
        return _row(row)


def instance_destroy(uuid):
    """Soft-delete: the row stays (deleted = id) for instance actions."""
    now = _now()
    with db_engine.session() as s:
        row = s.scalars(select(models.Instance).where(
            models.Instance.uuid == uuid, models.Instance.deleted == 0)).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        row.deleted = row.id
        row.deleted_at = now
        row.terminated_at = now
        row.vm_state = "deleted"
        row.task_state = None
        s.commit()
        return _row(row)


def instance_count_by_host(hosts):
    with db_engine.session() as s:
        rows = s.execute(select(models.Instance.host, func.count())
                         .where(models.Instance.deleted == 0,
                                models.Instance.host.in_(list(hosts)))
                         .group_by(models.Instance.host)).all()
        counts = {h: 0 for h in hosts}
        counts.update({h: c for h, c in rows})
        return counts


# -- block device mappings ---------------------------------------------------

def bdm_create(values):
    with db_engine.session() as s:
        row = models.BlockDeviceMapping(**values)
        s.add(row)
        s.commit()
        return _row(row)


def bdm_update(bdm_id, values):
    with db_engine.session() as s:
        row = s.get(models.BlockDeviceMapping, bdm_id)
        if row is None:
            raise exception.BDMNotFound(id=bdm_id)
        for key, value in values.items():
            setattr(row, key, value)
        s.commit()
        return _row(row)


# The writes of the conductor's attach and detach workflows, built once like
# the API's reads above; an UPDATE or INSERT without .values() takes its
# columns from the parameters of each execution.
_BDM_UPDATE_RETURNING = (update(_BDMS).where(_BDMS.c.id == bindparam("bdm_id_"))
                         .returning(*_BDMS.c))
_BDM_IDS_OF_INSTANCE = select(_BDMS.c.id).where(
    _BDMS.c.instance_uuid == bindparam("instance_uuid_"))
_BDM_INSERT_RETURNING = insert(_BDMS).returning(*_BDMS.c)


def bdm_update_returning(bdm_id, values):
    """``bdm_update`` in one statement: UPDATE ... RETURNING the row, without
    reading it first (a workflow's BDM saves: SQLite >= 3.35, PostgreSQL)."""
    engine = db_engine.get_engine()
    if not engine.dialect.update_returning:
        return bdm_update(bdm_id, values)
    with engine.begin() as conn:
        row = conn.execute(_BDM_UPDATE_RETURNING,
                           dict(values, bdm_id_=bdm_id)).mappings().first()
    if row is None:
        raise exception.BDMNotFound(id=bdm_id)
    return dict(row)


def bdm_create_unless_new_mappings(values, seen_ids):
    """Create a BDM unless its instance has a mapping whose id is not in
    ``seen_ids`` (one created since the caller listed them): then None and
    nothing is written.  The caller serializes the creations of one
    instance's mappings (the compute's per-instance lock), so the check and
    the INSERT need no lock of their own."""
    engine = db_engine.get_engine()
    seen = set(seen_ids)
    with engine.begin() as conn:
        ids = conn.execute(_BDM_IDS_OF_INSTANCE,
                           {"instance_uuid_": values["instance_uuid"]}).scalars()
        if any(bdm_id not in seen for bdm_id in ids):
            return None
        if not engine.dialect.insert_returning:
            bdm_id = conn.execute(insert(_BDMS), values).inserted_primary_key[0]
            return dict(conn.execute(select(_BDMS).where(_BDMS.c.id == bdm_id))
                        .mappings().one())
        return dict(conn.execute(_BDM_INSERT_RETURNING, values).mappings().one())


_BDM_DELETE = delete(_BDMS).where(_BDMS.c.id == bindparam("bdm_id_"))
_BDM_BY_VOLUME_AND_INSTANCE = (select(_BDMS)
                               .where(_BDMS.c.volume_id == bindparam("volume_id"),
                                      _BDMS.c.instance_uuid == bindparam("instance_uuid"))
                               .order_by(_BDMS.c.id).limit(1))


def bdm_destroy(bdm_id):
    with db_engine.get_engine().begin() as conn:
        conn.execute(_BDM_DELETE, {"bdm_id_": bdm_id})


def bdm_get_by_instance_uuids(instance_uuids):
    return _read(_BDMS_BY_INSTANCES, {"uuids": list(instance_uuids)})


def bdm_get_by_volume_and_instance(volume_id, instance_uuid):
    row = _read_first(_BDM_BY_VOLUME_AND_INSTANCE,
                      {"volume_id": volume_id, "instance_uuid": instance_uuid})
    if row is None:
        raise exception.VolumeBDMNotFound(volume_id=volume_id)
    return row


def bdm_get_by_volume(volume_id):
    with db_engine.session() as s:
        return [_row(r) for r in s.scalars(
            select(models.BlockDeviceMapping).where(
                models.BlockDeviceMapping.volume_id == volume_id))]


def bdm_get_all_volume_bdms():
    with db_engine.session() as s:
        return [_row(r) for r in s.scalars(
            select(models.BlockDeviceMapping).where(
                models.BlockDeviceMapping.destination_type == "volume"))]


# -- instance actions ------------------------------------------------------------

def action_start(values):
    """Record an instance action: one INSERT (Core, no ORM unit of work),
    its defaults filled here so that the row needs no reading back."""
    now = _now()
    row = {"start_time": now, "finish_time": None, "message": None,
           "updated_at": now, "user_id": None, "project_id": None}
    row.update(values)
    with db_engine.lone_statement() as conn:
        row["id"] = conn.execute(_ACTION_INSERT, row).inserted_primary_key[0]
        conn.commit()
    return row


def action_get_by_request_id(instance_uuid, request_id):
    with db_engine.session() as s:
        return _row(s.scalars(select(models.InstanceAction).where(
            models.InstanceAction.instance_uuid == instance_uuid,
            models.InstanceAction.request_id == request_id)
            .order_by(models.InstanceAction.id.desc())).first())


def action_finish(action_id, message=None):
    with db_engine.session() as s:
        row = s.get(models.InstanceAction, action_id)
        row.finish_time = _now()
        if message is not None:
            row.message = message
        s.commit()
        return _row(row)


def actions_get(instance_uuid):
    with db_engine.session() as s:
        return [_row(r) for r in s.scalars(
            select(models.InstanceAction)
            .where(models.InstanceAction.instance_uuid == instance_uuid)
            .order_by(models.InstanceAction.start_time.desc(),
                      models.InstanceAction.id.desc()))]


def action_event_start(values):
    with db_engine.session() as s:
        row = models.InstanceActionEvent(**values)
        s.add(row)
        s.commit()
        return _row(row)


def action_event_finish(event_id, result, traceback=None, details=None):
    with db_engine.session() as s:
        row = s.get(models.InstanceActionEvent, event_id)
        row.finish_time = _now()
        row.result = result
        row.traceback = traceback
        row.details = details
        s.commit()
        return _row(row)


# An event started under the newest action of a request: one INSERT ... SELECT.
_EVENT_START_UNDER_REQUEST = (
    insert(_EVENTS).from_select(
        ["action_id", "event", "host", "start_time"],
        select(_ACTIONS.c.id, bindparam("event", type_=String),
               bindparam("host", type_=String),
               bindparam("start_time", type_=DateTime))
        .where(_ACTIONS.c.instance_uuid == bindparam("instance_uuid"),
               _ACTIONS.c.request_id == bindparam("request_id"))
        .order_by(_ACTIONS.c.id.desc()).limit(1))
    .returning(*_EVENTS.c))
_ACTION_INSERT_RETURNING_ID = insert(_ACTIONS).returning(_ACTIONS.c.id)
_EVENT_INSERT_RETURNING = insert(_EVENTS).returning(*_EVENTS.c)
_EVENT_UPDATE = update(_EVENTS).where(_EVENTS.c.id == bindparam("event_id_"))
_ACTION_UPDATE = update(_ACTIONS).where(_ACTIONS.c.id == bindparam("action_id_"))


def action_event_start_for_request(instance_uuid, request_id, event, host,
                                   action_values):
    """Start ``event`` under the newest action of ``request_id`` on the
    instance, in one transaction: an INSERT ... SELECT of that action's id
    (one statement), or, when the request has no action yet (a workflow
    the conductor started on its own), the action ``action_values`` then
    the event.  Returns the event row."""
    engine = db_engine.get_engine()
    if not engine.dialect.insert_returning:
        return _action_event_start_in_steps(instance_uuid, request_id, event, host,
                                            action_values)
    values = {"event": event, "host": host, "start_time": _now()}
    with engine.begin() as conn:
        row = conn.execute(_EVENT_START_UNDER_REQUEST, dict(
            values, instance_uuid=instance_uuid, request_id=request_id)
        ).mappings().first()
        if row is None:
            action_id = conn.execute(_ACTION_INSERT_RETURNING_ID, dict(
                action_values, instance_uuid=instance_uuid, request_id=request_id,
                start_time=values["start_time"])).scalar_one()
            row = conn.execute(_EVENT_INSERT_RETURNING,
                               dict(values, action_id=action_id)).mappings().one()
        return dict(row)


def _action_event_start_in_steps(instance_uuid, request_id, event, host,
                                 action_values):
    action = action_get_by_request_id(instance_uuid, request_id)
    if action is None:
        action = action_start(dict(action_values, instance_uuid=instance_uuid,
                                   request_id=request_id))
    return action_event_start({"action_id": action["id"], "event": event,
                               "host": host})


def action_event_finish_and_fail(event_id, result, traceback=None, details=None,
                                 failed_action_id=None):
    """Finish an event in one UPDATE, without reading it back (the caller
    knows what it wrote); with ``failed_action_id``, mark that action
    failed ("Error") in the same transaction.  Returns the finish time."""
    now = _now()
    with db_engine.get_engine().begin() as conn:
        conn.execute(_EVENT_UPDATE, {"event_id_": event_id, "finish_time": now,
                                     "result": result, "traceback": traceback,
                                     "details": details})
        if failed_action_id is not None:
            conn.execute(_ACTION_UPDATE, {"action_id_": failed_action_id,
                                          "finish_time": now, "message": "Error"})
    return now


def action_events_get(action_id):
    with db_engine.session() as s:
        return [_row(r) for r in s.scalars(
            select(models.InstanceActionEvent)
            .where(models.InstanceActionEvent.action_id == action_id)
            .order_by(models.InstanceActionEvent.start_time.desc(),
                      models.InstanceActionEvent.id.desc()))]


def action_mark_failed(action_id, message="Error"):
    return action_finish(action_id, message=message)


__all__ = [name for name in dir() if not name.startswith("_")]
