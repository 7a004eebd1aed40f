"""volumeAttachment bodies of os-volume_attachments.

List and show (a block device mapping: an object, or for the list a row
with the same attribute names):
  ``id`` (the volume id)        up to 2.88
  ``volumeId``, ``serverId``    always
  ``device``                    only when the mapping has a device name
  ``tag``                       2.70+
  ``delete_on_termination``     2.79+
  ``attachment_id``, ``bdm_uuid`` 2.89+
  ``attach_mode``               2.105+ (volattach's extension) (and an attachment still in progress,
                                without a Cinder attachment, is not shown)

Attach response (up to 2.100; 2.101+ has no body): ``id``, ``serverId``,
``volumeId``, ``device`` (always, may be null), ``tag`` (2.70+),
``delete_on_termination`` (2.79+); Nova never applied 2.89 to it.
"""
from volattach.objects import block_device as block_device_obj


def visible(req, bdm):
    """False for an attachment in progress at 2.89+ (no attachment_id yet)."""
    if req.context.microversion.matches("2.89"):
        return bdm.attachment_id is not None
    return True


def attachment(req, bdm):
    mv = req.context.microversion
    body = {}
    if not mv.matches("2.89"):
        body["id"] = bdm.volume_id
    body["volumeId"] = bdm.volume_id
    body["serverId"] = bdm.instance_uuid
    if bdm.device_name:
        body["device"] = bdm.device_name
    if mv.matches("2.70"):
        body["tag"] = bdm.tag
    if mv.matches("2.79"):
        body["delete_on_termination"] = bool(bdm.delete_on_termination)
    if mv.matches("2.89"):
        body["attachment_id"] = bdm.attachment_id
        body["bdm_uuid"] = bdm.uuid
    if mv.matches("2.105"):
        body["attach_mode"] = _attach_mode(bdm)
    return body


def _attach_mode(bdm):
    """``rw`` unless the mapping says otherwise.  ``bdm`` is an object (the
    field may be unset) or a database row (NULL for a mapping stored before
    the column existed)."""
    is_set = getattr(bdm, "obj_attr_is_set", None)
    if is_set is not None and not is_set("attach_mode"):
        return block_device_obj.DEFAULT_ATTACH_MODE
    return bdm.attach_mode or block_device_obj.DEFAULT_ATTACH_MODE


def index(req, bdms):
    return {"volumeAttachments": [attachment(req, bdm) for bdm in bdms
                                  if bdm.volume_id and visible(req, bdm)]}


def show(req, bdm):
    return {"volumeAttachment": attachment(req, bdm)}


def attach(req, server_id, volume_id, device, tag, delete_on_termination):
    mv = req.context.microversion
    body = {"id": volume_id, "serverId": server_id, "volumeId": volume_id,
            "device": device}
    if mv.matches("2.70"):
        body["tag"] = tag
    if mv.matches("2.79"):
        body["delete_on_termination"] = bool(delete_on_termination)
    return {"volumeAttachment": body}
