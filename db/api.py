"""Data access for the compute database: small functions, one transaction each.

Objects call these (``objects/*.py``); nothing above the objects layer talks
SQL.  Rows come back as plain dicts so that objects never hold ORM state.
Conditional updates (``instance_update`` with ``expected_task_state``) are
compare-and-swap UPDATEs, so two API workers cannot both start an operation
on one server.
"""

from sqlalchemy import delete, func, select, update

from db import engine as db_engine
from db import models
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


def _read(stmt):
    """Rows of a Core SELECT as dicts (reads skip the ORM: no identity map,
    no entity objects; this is the API's hot path)."""
    with db_engine.get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(stmt).mappings()]


def _read_one(stmt):
    rows = _read(stmt.limit(1))
    return rows[0] if rows else None


_INSTANCES = models.Instance.__table__
_BDMS = models.BlockDeviceMapping.__table__
_SERVICES = models.Service.__table__
_FLAVORS = models.Flavor.__table__


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
    return _read_one(select(_SERVICES).where(_SERVICES.c.host == host,
                                             _SERVICES.c.binary == binary))


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
    q = select(_INSTANCES).where(_INSTANCES.c.uuid == uuid)
    if not read_deleted:
        q = q.where(_INSTANCES.c.deleted == 0)
    row = _read_one(q)
    if row is None:
        raise exception.InstanceNotFound(instance_id=uuid)
    return row


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


def bdm_destroy(bdm_id):
    with db_engine.session() as s:
        s.execute(delete(models.BlockDeviceMapping)
                  .where(models.BlockDeviceMapping.id == bdm_id))
        s.commit()


def bdm_get_by_instance_uuids(instance_uuids):
    return _read(select(_BDMS).where(_BDMS.c.instance_uuid.in_(list(instance_uuids)))
                 .order_by(_BDMS.c.id))


def bdm_get_by_volume_and_instance(volume_id, instance_uuid):
    row = _read_one(select(_BDMS).where(_BDMS.c.volume_id == volume_id,
                                        _BDMS.c.instance_uuid == instance_uuid)
                    .order_by(_BDMS.c.id))
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
    with db_engine.session() as s:
        row = models.InstanceAction(**values)
        s.add(row)
        s.commit()
        return _row(row)


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
