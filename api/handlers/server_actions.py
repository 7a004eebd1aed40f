"""POST /servers/{server_id}/action: os-start, os-stop, pause, unpause, lock,
unlock, shelve, shelveOffload, unshelve, suspend, resume, reboot, rebuild,
forceDelete, restore, os-migrateLive and os-resetState (admin), and
os-getConsoleOutput.  Each answers 202 with no body, except
os-getConsoleOutput (200, ``{"output": ...}``) and rebuild (202 with the
server and its new adminPass, as Nova).  An unknown server is a 404 before
the action's name is looked at.

``ACTIONS`` maps the body's only key to (schemas, policy, handler method).
An action Nova has and volattach does not (``NOVA_ONLY_ACTIONS``) names its
server first: 404 for an unknown server, as Nova answers, else 400 "There is
no such action"; a name Nova does not know either is 400 at once.
"""
import re

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.handlers import servers
from volattach.api.schemas import servers as schemas
from volattach.api.views import servers as view
from volattach import exception


# Nova's rule for os-resetState (admin only: api/policies.py)
RESET_STATE_POLICY = "os_compute_api:os-admin-actions:reset_state"

# Nova's server actions that volattach does not serve
NOVA_ONLY_ACTIONS = frozenset([
    "resize", "confirmResize", "revertResize",
    "createImage", "createBackup", "changePassword", "migrate", "evacuate",
    "os-resetNetwork", "injectNetworkInfo", "addFixedIp", "removeFixedIp",
    "addFloatingIp", "removeFloatingIp", "addSecurityGroup",
    "removeSecurityGroup", "rescue", "unrescue",
    "os-getVNCConsole", "os-getSPICEConsole", "os-getRDPConsole",
    "os-getSerialConsole", "trigger_crash_dump"])


class ServerAction(common.Resource):

    ACTIONS = {
        "os-start": (schemas.START, "os_compute_api:servers:start", "_start"),
        "os-stop": (schemas.STOP, "os_compute_api:servers:stop", "_stop"),
        "pause": (schemas.PAUSE, "os_compute_api:os-pause-server:pause",
                  "_pause"),
        "unpause": (schemas.UNPAUSE, "os_compute_api:os-pause-server:unpause",
                    "_unpause"),
        "lock": (schemas.LOCK, "os_compute_api:os-lock-server:lock", "_lock"),
        "unlock": (schemas.UNLOCK, "os_compute_api:os-lock-server:unlock",
                   "_unlock"),
        "shelve": (schemas.SHELVE, "os_compute_api:os-shelve:shelve",
                   "_shelve"),
        "shelveOffload": (schemas.SHELVE_OFFLOAD,
                          "os_compute_api:os-shelve:shelve_offload",
                          "_shelve_offload"),
        "unshelve": (schemas.UNSHELVE, "os_compute_api:os-shelve:unshelve",
                     "_unshelve"),
        "os-getConsoleOutput": (schemas.GET_CONSOLE_OUTPUT,
                                "os_compute_api:os-console-output",
                                "_get_console_output"),
        "os-migrateLive": (schemas.MIGRATE_LIVE,
                           "os_compute_api:os-migrate-server:migrate_live",
                           "_migrate_live"),
        "os-resetState": (schemas.RESET_STATE, RESET_STATE_POLICY, "_reset_state"),
        "suspend": (schemas.SUSPEND, "os_compute_api:os-suspend-server:suspend",
                    "_suspend"),
        "resume": (schemas.RESUME, "os_compute_api:os-suspend-server:resume",
                   "_resume"),
        "reboot": (schemas.REBOOT, "os_compute_api:servers:reboot", "_reboot"),
        "rebuild": (schemas.REBUILD, "os_compute_api:servers:rebuild", "_rebuild"),
        "forceDelete": (schemas.FORCE_DELETE,
                        "os_compute_api:os-deferred-delete:force",
                        "_force_delete"),
        "restore": (schemas.RESTORE, "os_compute_api:os-deferred-delete:restore",
                    "_restore"),
    }

    def on_post(self, req, resp, server_id):
        ctx = req.context.ctx
        body = common.read_body(req)
        if not isinstance(body, dict) or len(body) != 1:
            raise exception.InvalidRequest(message="Malformed request body")
        name = next(iter(body))
        if name == "os-getConsoleOutput":
            # Nova looks the server up before the body of this action
            self.compute.get(ctx, server_id)
        if name not in self.ACTIONS:
            if name in NOVA_ONLY_ACTIONS:
                self.compute.get(ctx, server_id)   # 404 for an unknown server
            raise exception.InvalidRequest(
                message="There is no such action: %s" % name)
        versioned, rule, method = self.ACTIONS[name]
        validation.validate_body(req.context.microversion, versioned, body)
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, rule, {"project_id": instance.project_id})
        result = getattr(self, method)(req, ctx, instance, body[name])
        if name == "os-getConsoleOutput":
            common.send(resp, result, status=200)
            return
        common.send(resp, result, status=202)

    _UNPRINTABLE = re.compile("[\x00-\x08\x0B-\x1F]")

    def _get_console_output(self, req, ctx, instance, value):
        output = self.compute.get_console_output(ctx, instance,
                                                 value.get("length"))
        return {"output": self._UNPRINTABLE.sub("", output)}

    def _suspend(self, req, ctx, instance, value):
        self.compute.suspend(ctx, instance)

    def _resume(self, req, ctx, instance, value):
        self.compute.resume(ctx, instance)

    def _reboot(self, req, ctx, instance, value):
        self.compute.reboot(ctx, instance, value["type"].upper())

    # rebuild's request keys -> the Instance fields they set
    _REBUILD_FIELDS = (("name", "display_name"), ("metadata", "metadata"),
                       ("description", "display_description"),
                       ("key_name", "key_name"), ("hostname", "hostname"),
                       ("user_data", "user_data"))

    def _rebuild(self, req, ctx, instance, value):
        """The server as rebuilt (PUT's body: all of a show from 2.75) and
        its adminPass, the given one or a generated one, from 2.54 its
        key_name and from 2.57 its user_data (the schema allows the key
        from 2.57; null removes it).
        personality, preserve_ephemeral and trusted certificates are
        accepted and change nothing: there is no file injection, no
        ephemeral disk and no image signature."""
        changes = {field: value[key] for key, field in self._REBUILD_FIELDS
                   if key in value}
        for key, field in (("accessIPv4", "access_ip_v4"),
                           ("accessIPv6", "access_ip_v6")):
            if key in value:
                changes[field] = servers.canonical_ip(value[key])
        admin_pass = value.get("adminPass") or servers.generate_password()
        if "metadata" in changes:
            self.compute.check_metadata_quota(ctx, instance.project_id,
                                              changes["metadata"])
        instance = self.compute.rebuild(
            ctx, instance, value["imageRef"], changes,
            reimage_boot_volume=req.context.microversion.matches("2.93"))
        bdms = self.compute.get_bdms_by_instances(ctx, [instance])
        body = view.updated(req, instance, bdms.get(instance.uuid, []),
                            tags=servers.tags_of(self.compute, req, instance))
        body["server"]["adminPass"] = admin_pass
        if req.context.microversion.matches("2.54"):
            # the key set (or kept) by the rebuild, in every answer from
            # 2.54 (a show has it from 2.75 anyway)
            body["server"]["key_name"] = instance.key_name
        if req.context.microversion.matches("2.57"):
            body["server"]["user_data"] = instance.user_data
        return body

    def _force_delete(self, req, ctx, instance, value):
        self.compute.force_delete(ctx, instance)

    def _restore(self, req, ctx, instance, value):
        self.compute.restore(ctx, instance)

    def _start(self, req, ctx, instance, value):
        self.compute.start(ctx, instance)

    def _stop(self, req, ctx, instance, value):
        self.compute.stop(ctx, instance)

    def _pause(self, req, ctx, instance, value):
        self.compute.pause(ctx, instance)

    def _unpause(self, req, ctx, instance, value):
        self.compute.unpause(ctx, instance)

    def _lock(self, req, ctx, instance, value):
        reason = None
        if req.context.microversion.matches("2.73") and value is not None:
            reason = value.get("locked_reason")
        self.compute.lock(ctx, instance, reason=reason)

    def _unlock(self, req, ctx, instance, value):
        # a lock set by an admin (of another project) needs an admin to go
        expected = "owner" if ctx.project_id == instance.project_id else "admin"
        locked_by = getattr(instance, "locked_by", None)
        if instance.locked and locked_by and locked_by != expected:
            policy.authorize(ctx,
                             "os_compute_api:os-lock-server:unlock:unlock_override",
                             {"project_id": instance.project_id})
        self.compute.unlock(ctx, instance)

    def _shelve(self, req, ctx, instance, value):
        self.compute.shelve(ctx, instance)

    def _shelve_offload(self, req, ctx, instance, value):
        self.compute.shelve_offload(ctx, instance)

    def _unshelve(self, req, ctx, instance, value):
        mv = req.context.microversion
        availability_zone = host = None
        if mv.matches("2.77") and isinstance(value, dict):
            availability_zone = value.get("availability_zone")
            if mv.matches("2.91"):
                host = value.get("host")
                if host:
                    policy.authorize(ctx,
                                     "os_compute_api:os-shelve:unshelve_to_host",
                                     {"project_id": instance.project_id})
        self.compute.unshelve(ctx, instance, availability_zone=availability_zone,
                              host=host)

    def _migrate_live(self, req, ctx, instance, value):
        # block_migration (true, false, "auto") and force change nothing
        # here: volumes move by attachment, there is no local disk to copy
        self.compute.live_migrate(ctx, instance, host=value.get("host"))

    def _reset_state(self, req, ctx, instance, value):
        self.compute.reset_state(ctx, instance, value["state"])
