"""POST /volumes/{id}/action: one action per body.

The attach actions from before 3.27 (``os-reserve``, ``os-unreserve``,
``os-initialize_connection``, ``os-terminate_connection``, ``os-attach``,
``os-detach``, ``os-begin_detaching``, ``os-roll_detaching``), and the
volume's own: read-only flag, bootable, extend, reset status, retype and
migration (``os-migrate_volume_completion`` is the compute side's call
back after a swap), and ``os-force_detach`` (admin).  Status codes
as Cinder's: 202, but 200 for os-initialize_connection (with its
``connection_info``), os-migrate_volume_completion (``save_volume_id``)
and os-set_bootable.  ``os-reimage`` (3.68) re-images a volume, Nova's
rebuild of a volume-backed server from compute 2.93.
"""
import falcon
from oslo_utils import strutils

from volattach import exception
from volattach.volume import states
from volattach.volume import reimaged_event
from volattach.volume import validation
from volattach.volume import microversion as mv
from volattach.volume.handlers import context, version
from volattach.volume.handlers.volumes import checked_size
from volattach.volume.schemas import volumes as schemas


REIMAGE_VERSION = mv.Version(3, 68)


class Action:
    def __init__(self, manager):
        self.manager = manager
        self.actions = {
            "os-update_readonly_flag": self._update_readonly_flag,
            "os-set_bootable": self._set_bootable,
            "os-extend": self._extend,
            "os-reimage": self._reimage,
            "os-reserve": self._reserve,
            "os-unreserve": self._unreserve,
            "os-initialize_connection": self._initialize_connection,
            "os-terminate_connection": self._terminate_connection,
            "os-attach": self._attach,
            "os-detach": self._detach,
            "os-begin_detaching": self._begin_detaching,
            "os-roll_detaching": self._roll_detaching,
            "os-reset_status": self._reset_status,
            "os-force_detach": self._force_detach,
            "os-retype": self._retype,
            "os-migrate_volume": self._migrate_volume,
            "os-migrate_volume_completion": self._migrate_volume_completion,
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
        resp.status = falcon.HTTP_202
        result = action(req, volume_id, data)
        if result is not None:
            resp.status = falcon.HTTP_200
            if result:
                resp.media = result

    # -- the volume's own actions -------------------------------------------

    def _update_readonly_flag(self, req, volume_id, data):
        validation.validate(schemas.update_readonly_flag, data)
        readonly = strutils.bool_from_string(
            data["os-update_readonly_flag"]["readonly"], strict=True)
        self.manager.volume_set_readonly(context(req), volume_id, readonly)

    def _set_bootable(self, req, volume_id, data):
        validation.validate(schemas.set_bootable, data)
        bootable = strutils.bool_from_string(
            data["os-set_bootable"]["bootable"], strict=True)
        self.manager.volume_set_bootable(context(req), volume_id, bootable)
        return {}                      # 200, no body (as Cinder)

    def _extend(self, req, volume_id, data):
        validation.validate(schemas.extend, data)
        new_size = checked_size(data["os-extend"]["new_size"], "new_size")
        # from 3.42 an in-use volume may be extended (Cinder's
        # extend_attached_volume); before, only an available one
        self.manager.volume_extend(
            context(req), volume_id, new_size,
            attached_allowed=version(req) >= mv.VOLUME_EXTEND_INUSE)

    def _reimage(self, req, volume_id, data):
        # Cinder's os-reimage is 3.68's: before it there is no such action
        if version(req) < REIMAGE_VERSION:
            raise exception.InvalidInput(
                message="There is no such action: os-reimage")
        validation.validate(schemas.reimage, data)
        args = data["os-reimage"]
        servers = self.manager.volume_reimage(
            context(req), volume_id, args["image_id"],
            reimage_reserved=strutils.bool_from_string(
                args.get("reimage_reserved", False), strict=True))
        # a reserved volume: its server's rebuild waits for the event
        reimaged_event.post_in_background(self.manager.conf, servers,
                                          volume_id)

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

    def _force_detach(self, req, volume_id, data):
        validation.validate(schemas.force_detach, data)
        args = data["os-force_detach"] or {}
        self.manager.legacy.force_detach(
            context(req), volume_id, attachment_id=args.get("attachment_id"),
            connector=args.get("connector"))

    # -- retype and migration (volume_migration) -----------------------------

    def _retype(self, req, volume_id, data):
        validation.validate(schemas.retype, data)
        args = data["os-retype"]
        self.manager.migration.retype(
            context(req), volume_id, args["new_type"],
            policy=args.get("migration_policy") or "never")

    def _migrate_volume(self, req, volume_id, data):
        validation.validate(schemas.migrate_volume, data)
        self.manager.migration.migrate(context(req), volume_id,
                                       data["os-migrate_volume"]["host"])

    def _migrate_volume_completion(self, req, volume_id, data):
        validation.validate(schemas.migrate_volume_completion, data)
        args = data["os-migrate_volume_completion"]
        saved = self.manager.migration.complete(
            context(req), volume_id, args["new_volume"],
            error=bool(args.get("error")))
        return {"save_volume_id": saved}

    # -- attach actions from before 3.27 ------------------------------------

    def _reserve(self, req, volume_id, data):
        validation.validate(schemas.reserve, data)
        self.manager.legacy.reserve(context(req), volume_id)

    def _unreserve(self, req, volume_id, data):
        validation.validate(schemas.unreserve, data)
        self.manager.legacy.unreserve(context(req), volume_id)

    def _initialize_connection(self, req, volume_id, data):
        validation.validate(schemas.initialize_connection, data)
        info = self.manager.legacy.initialize_connection(
            context(req), volume_id,
            data["os-initialize_connection"]["connector"])
        return {"connection_info": info}

    def _terminate_connection(self, req, volume_id, data):
        validation.validate(schemas.terminate_connection, data)
        self.manager.legacy.terminate_connection(
            context(req), volume_id,
            data["os-terminate_connection"]["connector"])

    def _attach(self, req, volume_id, data):
        validation.validate(schemas.attach, data)
        args = data["os-attach"]
        if not args.get("instance_uuid") and not args.get("host_name"):
            raise exception.InvalidInput(
                message="Invalid request to attach volume to an invalid "
                        "target")
        self.manager.legacy.attach(
            context(req), volume_id, instance_uuid=args.get("instance_uuid"),
            host_name=args.get("host_name"), mountpoint=args["mountpoint"],
            mode=args.get("mode", "rw"))

    def _detach(self, req, volume_id, data):
        validation.validate(schemas.detach, data)
        self.manager.legacy.detach(
            context(req), volume_id,
            attachment_id=(data["os-detach"] or {}).get("attachment_id"))

    def _begin_detaching(self, req, volume_id, data):
        self.manager.volume_begin_detaching(context(req), volume_id)

    def _roll_detaching(self, req, volume_id, data):
        self.manager.volume_roll_detaching(context(req), volume_id)
