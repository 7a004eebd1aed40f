"""InstanceAction and InstanceActionEvent: what was done to a server, by whom,
with which request id, and how each step ended (os-instance-actions)."""
import traceback as tb

from oslo_versionedobjects import fields

from volattach.objects import base

# action names (Nova's)
CREATE = "create"
DELETE = "delete"
ATTACH_VOLUME = "attach_volume"
DETACH_VOLUME = "detach_volume"
SWAP_VOLUME = "swap_volume"


@base.VolattachObjectRegistry.register
class InstanceAction(base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {
        "id": fields.IntegerField(),
        "action": fields.StringField(),
        "instance_uuid": fields.UUIDField(),
        "request_id": fields.StringField(),
        "user_id": fields.StringField(nullable=True),
        "project_id": fields.StringField(nullable=True),
        "start_time": fields.DateTimeField(),
        "finish_time": fields.DateTimeField(nullable=True),
        "message": fields.StringField(nullable=True),
        "updated_at": fields.DateTimeField(nullable=True),
    }

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    @classmethod
    @base.remotable
    def action_start(cls, context, instance_uuid, action):
        from volattach.db import api as db_api
        row = db_api.action_start({
            "action": action, "instance_uuid": instance_uuid,
            "request_id": context.request_id, "user_id": context.user_id,
            "project_id": context.project_id})
        return cls._from_row(context, row)

    @classmethod
    @base.remotable
    def get_by_request_id(cls, context, instance_uuid, request_id):
        from volattach.db import api as db_api
        row = db_api.action_get_by_request_id(instance_uuid, request_id)
        return cls._from_row(context, row) if row else None


@base.VolattachObjectRegistry.register
class InstanceActionList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("InstanceAction")}

    @classmethod
    @base.remotable
    def get_by_instance_uuid(cls, context, instance_uuid):
        from volattach.db import api as db_api
        return cls(context, objects=[InstanceAction._from_row(context, r)
                                     for r in db_api.actions_get(instance_uuid)])


@base.VolattachObjectRegistry.register
class InstanceActionEvent(base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {
        "id": fields.IntegerField(),
        "action_id": fields.IntegerField(),
        "event": fields.StringField(),
        "start_time": fields.DateTimeField(),
        "finish_time": fields.DateTimeField(nullable=True),
        "result": fields.StringField(nullable=True),
        "traceback": fields.StringField(nullable=True),
        "host": fields.StringField(nullable=True),
        "details": fields.StringField(nullable=True),
    }

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    @classmethod
    @base.remotable
    def event_start(cls, context, instance_uuid, event, host=None):
        """Start ``event`` under the action of this request (created if missing)."""
        from volattach.db import api as db_api
        # one transaction: the action lookup and the event's INSERT
        row = db_api.action_event_start_for_request(
            instance_uuid, context.request_id, event, host,
            {"action": event.split("_", 1)[-1], "user_id": context.user_id,
             "project_id": context.project_id})
        return cls._from_row(context, row)

    @base.remotable
    def finish(self, error=None):
        """Finish this event with Success, or Error and the failure's text
        (and its action marked failed, in the same transaction)."""
        from volattach.db import api as db_api
        if error is None:
            values = {"result": "Success", "traceback": None, "details": None}
            failed_action_id = None
        else:
            text = "".join(tb.format_exception_only(type(error), error)) \
                if isinstance(error, BaseException) else str(error)
            values = {"result": "Error", "traceback": text,
                      "details": str(error)[:255]}
            failed_action_id = self.action_id
        finish_time = db_api.action_event_finish_and_fail(
            self.id, failed_action_id=failed_action_id, **values)
        # what was written, without reading the row back
        base.fill(self, dict(values, finish_time=finish_time))


@base.VolattachObjectRegistry.register
class InstanceActionEventList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("InstanceActionEvent")}

    @classmethod
    @base.remotable
    def get_by_action(cls, context, action_id):
        from volattach.db import api as db_api
        return cls(context, objects=[InstanceActionEvent._from_row(context, r)
                                     for r in db_api.action_events_get(action_id)])
