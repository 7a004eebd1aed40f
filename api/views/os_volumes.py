"""Bodies of the os-volumes proxy: a volume of the block storage API in
Nova's camelCase summary form."""


def _attachments(volume):
    attachments = [{"id": volume["id"], "volumeId": volume["id"],
                    "serverId": att.get("server_id"),
                    "device": att.get("device") or ""}
                   for att in volume.get("attachments") or []
                   if att.get("server_id")]
    # Nova answers [{}] for a volume attached nowhere
    return attachments or [{}]


def volume(vol):
    return {
        "id": vol["id"],
        "status": vol["status"],
        "size": vol["size"],
        "availabilityZone": vol.get("availability_zone") or "",
        "createdAt": vol["created_at"],
        "attachments": _attachments(vol),
        "displayName": vol.get("name"),
        "displayDescription": vol.get("description"),
        "volumeType": vol.get("volume_type"),
        "snapshotId": vol.get("snapshot_id"),
        "metadata": vol.get("metadata") or {},
    }
