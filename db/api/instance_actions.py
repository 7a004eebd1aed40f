"""Queries of the compute database's ``instance_actions`` and
``instance_actions_events`` tables."""
from sqlalchemy import DateTime, String, bindparam, insert, select, update

from volattach.db.api import _common as c
from volattach.db import models

_ACTION_INSERT = insert(c.ACTIONS)
# An event started under the newest action of a request: one INSERT ... SELECT.
_EVENT_START_UNDER_REQUEST = (
    insert(c.EVENTS).from_select(
        ["action_id", "event", "host", "start_time"],
        select(c.ACTIONS.c.id, bindparam("event", type_=String),
               bindparam("host", type_=String),
               bindparam("start_time", type_=DateTime))
        .where(c.ACTIONS.c.instance_uuid == bindparam("instance_uuid"),
               c.ACTIONS.c.request_id == bindparam("request_id"))
        .order_by(c.ACTIONS.c.id.desc()).limit(1))
    .returning(*c.EVENTS.c))
_ACTION_INSERT_RETURNING_ID = insert(c.ACTIONS).returning(c.ACTIONS.c.id)
_EVENT_INSERT_RETURNING = insert(c.EVENTS).returning(*c.EVENTS.c)
_EVENT_UPDATE = update(c.EVENTS).where(c.EVENTS.c.id == bindparam("event_id_"))
_ACTION_UPDATE = update(c.ACTIONS).where(c.ACTIONS.c.id == bindparam("action_id_"))


def action_start(values):
    """Record an instance action: one INSERT (Core, no ORM unit of work),
    its defaults filled here so that the row needs no reading back."""
    now = c.now()
    row = {"start_time": now, "finish_time": None, "message": None,
           "updated_at": now, "user_id": None, "project_id": None}
    row.update(values)

    def insert_row(conn):
        action_id = conn.execute(_ACTION_INSERT, row).inserted_primary_key[0]
        conn.commit()
        return action_id
    row["id"] = c.database().write_single(insert_row)
    return row


def action_get_by_request_id(instance_uuid, request_id):
    return c.orm_read(lambda s: c.row_dict(s.scalars(select(models.InstanceAction).where(
        models.InstanceAction.instance_uuid == instance_uuid,
        models.InstanceAction.request_id == request_id)
        .order_by(models.InstanceAction.id.desc())).first()))


def action_finish(action_id, message=None):
    def finish(s):
        row = s.get(models.InstanceAction, action_id)
        row.finish_time = c.now()
        if message is not None:
            row.message = message
        s.flush()
        return c.row_dict(row)
    return c.orm_write(finish)


def actions_get(instance_uuid):
    return c.orm_read(lambda s: [c.row_dict(r) for r in s.scalars(
        select(models.InstanceAction)
        .where(models.InstanceAction.instance_uuid == instance_uuid)
        .order_by(models.InstanceAction.start_time.desc(),
                  models.InstanceAction.id.desc()))])


def action_event_start(values):
    def start(s):
        row = models.InstanceActionEvent(**values)
        s.add(row)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(start)


def action_event_finish(event_id, result, traceback=None, details=None):
    def finish(s):
        row = s.get(models.InstanceActionEvent, event_id)
        row.finish_time = c.now()
        row.result = result
        row.traceback = traceback
        row.details = details
        s.flush()
        return c.row_dict(row)
    return c.orm_write(finish)


def action_event_start_for_request(instance_uuid, request_id, event, host,
                                   action_values):
    """Start ``event`` under the newest action of ``request_id`` on the
    instance: an INSERT ... SELECT of that action's id (one statement, no
    transaction around it), or, when the request has no action yet (a
    workflow the conductor started on its own), in one transaction, the
    action ``action_values`` then the event.  Returns the event row."""
    db = c.database()
    if not db.engine.dialect.insert_returning:
        return _action_event_start_in_steps(instance_uuid, request_id, event, host,
                                            action_values)
    values = {"event": event, "host": host, "start_time": c.now()}
    params = dict(values, instance_uuid=instance_uuid, request_id=request_id)

    def start_under_request(conn):
        return c.first_dict(conn.execute(_EVENT_START_UNDER_REQUEST, params))

    # The common case, an action of the request exists: that one statement
    # alone (no BEGIN and COMMIT round trips).  It inserted nothing
    # otherwise: the transaction below tries it again, then makes both.
    row = db.write_single(start_under_request)
    if row is not None:
        return row

    def start(conn):
        row = start_under_request(conn)
        if row is None:
            action_id = conn.execute(_ACTION_INSERT_RETURNING_ID, dict(
                action_values, instance_uuid=instance_uuid, request_id=request_id,
                start_time=values["start_time"])).scalar_one()
            row = c.one_dict(conn.execute(_EVENT_INSERT_RETURNING,
                                          dict(values, action_id=action_id)))
        return row
    return db.write(start)


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
    now = c.now()

    def finish(conn):
        conn.execute(_EVENT_UPDATE, {"event_id_": event_id, "finish_time": now,
                                     "result": result, "traceback": traceback,
                                     "details": details})
        if failed_action_id is not None:
            conn.execute(_ACTION_UPDATE, {"action_id_": failed_action_id,
                                          "finish_time": now, "message": "Error"})
    if failed_action_id is None:    # one UPDATE: no transaction around it
        c.database().write_single(finish)
    else:
        c.database().write(finish)
    return now


def action_events_get(action_id):
    return c.orm_read(lambda s: [c.row_dict(r) for r in s.scalars(
        select(models.InstanceActionEvent)
        .where(models.InstanceActionEvent.action_id == action_id)
        .order_by(models.InstanceActionEvent.start_time.desc(),
                  models.InstanceActionEvent.id.desc()))])


def action_mark_failed(action_id, message="Error"):
    return action_finish(action_id, message=message)
