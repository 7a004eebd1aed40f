"""/volumes: create, list (summary and detail), show, delete, and the
volume actions the attach flow and admins use."""
import falcon
from oslo_utils import strutils

from volattach import exception
from volattach.volume import states
from volattach.volume import validation
from volattach.volume import views
from volattach.volume.handlers import body, context, flag, version
from volattach.volume.schemas import volumes as schemas


def _detail(req, vol, admin_attributes=True):
    ctx = context(req)
    return views.volume_detail(vol, req.prefix, version(req), ctx.is_admin,
                               admin_attributes=admin_attributes)


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        vols = self.manager.volume_list(context(req),
                                        all_tenants=flag(req, "all_tenants"))
        resp.media = {"volumes": [views.volume_summary(v, req.prefix)
                                  for v in vols]}

    def on_post(self, req, resp):
        data = body(req, schemas.create)["volume"]
        size = int(data["size"])
        if size < 1:
            raise exception.ValidationError(
                "Invalid input for field/attribute size. Value: %s. %s is "
                "less than the minimum of 1" % (data["size"], data["size"]))
        vol = self.manager.volume_create(
            context(req), size,
            name=data.get("name", data.get("display_name")),
            description=data.get("description",
                                 data.get("display_description")),
            volume_type=data.get("volume_type"),
            availability_zone=data.get("availability_zone"),
            metadata=data.get("metadata"),
            multiattach=strutils.bool_from_string(data.get("multiattach")))
        resp.status = falcon.HTTP_202
        resp.media = {"volume": _detail(req, vol, admin_attributes=False)}


class Detail:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        vols = self.manager.volume_list(context(req),
                                        all_tenants=flag(req, "all_tenants"))
        resp.media = {"volumes": [_detail(req, v) for v in vols]}


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, volume_id):
        vol = self.manager.volume_get(context(req), volume_id)
        resp.media = {"volume": _detail(req, vol)}

    def on_delete(self, req, resp, volume_id):
        self.manager.volume_delete(context(req), volume_id)
        resp.status = falcon.HTTP_202


class Action:
    """POST /volumes/{id}/action: one action per body, answered 202."""

    def __init__(self, manager):
        self.manager = manager
        self.actions = {
            "os-update_readonly_flag": self._update_readonly_flag,
            "os-begin_detaching": self._begin_detaching,
            "os-roll_detaching": self._roll_detaching,
            "os-reset_status": self._reset_status,
        }

    def on_post(self, req, resp, volume_id):
        data = req.get_media(default_when_empty=None)
        if not isinstance(data, dict) or len(data) != 1:
            raise exception.InvalidInput(
                message="Malformed request body")
        name = next(iter(data))
        action = self.actions.get(name)
        if action is None:
            raise exception.InvalidInput(
                message="There is no such action: %s" % name)
        action(req, volume_id, data)
        resp.status = falcon.HTTP_202

    def _update_readonly_flag(self, req, volume_id, data):
        validation.validate(schemas.update_readonly_flag, data)
        readonly = strutils.bool_from_string(
            data["os-update_readonly_flag"]["readonly"], strict=True)
        self.manager.volume_set_readonly(context(req), volume_id, readonly)

    def _begin_detaching(self, req, volume_id, data):
        self.manager.volume_begin_detaching(context(req), volume_id)

    def _roll_detaching(self, req, volume_id, data):
        self.manager.volume_roll_detaching(context(req), volume_id)

    def _reset_status(self, req, volume_id, data):
        validation.validate(schemas.reset_status, data)
        args = data["os-reset_status"]
        status = args.get("status")
        if status is not None and status not in states.RESETTABLE:
            raise exception.InvalidInput(
                reason="Status %s is not a valid volume status." % status)
        self.manager.volume_reset_status(
            context(req), volume_id, status=status,
            migration_status=args.get("migration_status"))
