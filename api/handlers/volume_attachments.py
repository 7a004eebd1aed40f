"""/servers/{server_id}/os-volume_attachments[/{volume_id}].

Attach calls the facade with ``wait=True`` below 2.101 (the conductor's
answer carries the device name: 200 and a body) and ``wait=False`` from 2.101
(a cast: 202, no body).  Shelved servers refuse attach and detach below 2.20
(409), as in Nova.
"""
from oslo_utils import strutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import volume_attachments as schemas
from volattach.api.views import volume_attachments as view
from volattach import exception
from volattach.objects import block_device as block_device_obj

POLICY = "os_compute_api:os-volumes-attachments:%s"

SHELVED_STATES = ("shelved", "shelved_offloaded")


def _not_attached(server_id, volume_id):
    return exception.VolumeBDMNotFound(
        message="Instance %s is not attached to volume %s"
        % (server_id, volume_id))


def _check_shelved(req, instance, method):
    if (instance.vm_state in SHELVED_STATES
            and not req.context.microversion.matches("2.20")):
        raise exception.InstanceInvalidState(
            attr="vm_state", instance_uuid=instance.uuid,
            state=instance.vm_state, method=method)


def _bool(value):
    return strutils.bool_from_string(value, strict=True)


class VolumeAttachments(common.Resource):

    def _instance(self, req, server_id, action):
        """The server (404) once the caller may ``action`` it (403), and its
        block device mappings, read together (``get_with_bdms``)."""
        ctx = req.context.ctx
        instance, bdms = self.compute.get_with_bdms(ctx, server_id)
        policy.authorize(ctx, POLICY % action,
                         {"project_id": instance.project_id})
        return instance, bdms

    # -- collection ----------------------------------------------------------------
    def on_get(self, req, resp, server_id):
        query = validation.validate_query(req.context.microversion,
                                          schemas.INDEX_QUERY, common.query(req))
        # rows, not objects: the list only renders them (404 before 403,
        # as ``_instance``)
        ctx = req.context.ctx
        project_id, bdms = self.compute.list_volume_attachments(ctx, server_id)
        policy.authorize(ctx, POLICY % "index", {"project_id": project_id})
        common.send(resp, view.index(req, common.limited(self.conf, bdms, query)))

    def on_post(self, req, resp, server_id):
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.CREATE,
                                        common.read_body(req))
        attachment = body["volumeAttachment"]
        volume_id = attachment["volumeId"]
        device = attachment.get("device")
        tag = attachment.get("tag")
        delete_on_termination = _bool(attachment.get("delete_on_termination",
                                                     False))
        instance, bdms = self._instance(req, server_id, "create")
        _check_shelved(req, instance, "attach_volume")
        wait = not mv.matches("2.101")
        device = self.compute.attach_volume(
            req.context.ctx, instance, volume_id, device=device, tag=tag,
            delete_on_termination=delete_on_termination,
            supports_multiattach=mv.matches("2.60"), wait=wait,
            attach_mode=attachment.get("attach_mode",
                                        block_device_obj.DEFAULT_ATTACH_MODE), bdms=bdms)
        if not wait:
            common.send(resp, None, status=202)
            return
        common.send(resp, view.attach(req, server_id, volume_id, device, tag,
                                      delete_on_termination))

    # -- one attachment -----------------------------------------------------------
    def on_get_item(self, req, resp, server_id, volume_id):
        validation.validate_query(req.context.microversion, schemas.SHOW_QUERY,
                                  common.query(req))
        instance, bdms = self._instance(req, server_id, "show")
        try:
            bdm = self.compute.get_volume_attachment(req.context.ctx, instance,
                                                     volume_id, bdms=bdms)
        except exception.VolumeBDMNotFound:
            raise _not_attached(server_id, volume_id)
        if not view.visible(req, bdm):
            raise _not_attached(server_id, volume_id)
        common.send(resp, view.show(req, bdm))

    def on_put_item(self, req, resp, server_id, volume_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.UPDATE,
                                        common.read_body(req))
        attachment = body["volumeAttachment"]
        new_volume_id = attachment["volumeId"]
        instance = self.compute.get(ctx, server_id)
        only_swap = not mv.matches("2.85")
        if only_swap or new_volume_id != volume_id:
            policy.authorize(ctx, POLICY % "swap", {})
        else:
            policy.authorize(ctx, POLICY % "update",
                             {"project_id": instance.project_id})
        if not only_swap:
            self._update(ctx, instance, volume_id, attachment)
        if only_swap or new_volume_id != volume_id:
            self._swap(ctx, instance, volume_id, new_volume_id)
        common.send(resp, None, status=202)

    def _update(self, ctx, instance, volume_id, attachment):
        bdm = self.compute.get_volume_attachment(ctx, instance, volume_id)
        for key, current in (("id", volume_id), ("serverId", instance.uuid),
                             ("device", bdm.device_name), ("tag", bdm.tag)):
            if key in attachment and attachment[key] != current:
                raise exception.InvalidInput(
                    message="The %s property is not mutable" % key)
        if "delete_on_termination" in attachment:
            self.compute.update_volume_attachment(
                ctx, instance, volume_id,
                _bool(attachment["delete_on_termination"]))

    def _swap(self, ctx, instance, old_volume_id, new_volume_id):
        try:
            self.compute.swap_volume(ctx, instance, old_volume_id,
                                     new_volume_id)
        except exception.VolumeNotFound as exc:
            if exc.kwargs.get("volume_id") == new_volume_id:
                # named in the body, not in the URL: 400 (as in Nova)
                raise exception.InvalidVolume(message=exc.format_message())
            raise

    def on_delete_item(self, req, resp, server_id, volume_id):
        instance, bdms = self._instance(req, server_id, "delete")
        _check_shelved(req, instance, "detach_volume")
        try:
            self.compute.detach_volume(req.context.ctx, instance, volume_id,
                                       bdms=bdms)
        except exception.VolumeBDMNotFound:
            raise _not_attached(server_id, volume_id)
        common.send(resp, None, status=202)
