"""Serialization of volumes, attachments, types and services into Cinder's
response bodies (the shapes of cinder-29-attachments-transcript.md).

Timestamps are ISO 8601 without a zone, like Cinder's.  Attachment
timestamps that are unset print as ``""`` and an unset ``attach_mode`` as
the string ``"null"`` (Cinder's quirks, kept for its clients).
"""
import datetime

from volattach.volume import microversion as mv


def _time(value):
    return value.isoformat() if value is not None else None


def _att_time(value):
    return value.isoformat() if value is not None else ""


# -- volumes ------------------------------------------------------------------

def _links(prefix, project_id, volume_id):
    return [
        {"rel": "self", "href": "%s/v3/%s/volumes/%s"
         % (prefix, project_id, volume_id)},
        {"rel": "bookmark", "href": "%s/%s/volumes/%s"
         % (prefix, project_id, volume_id)},
    ]


def volume_summary(vol, prefix):
    return {"id": vol["id"], "name": vol["name"],
            "links": _links(prefix, vol["project_id"], vol["id"])}


def volume_summary_totals(count, total_size, metadata, with_metadata):
    """GET /volumes/summary (3.12; ``metadata`` from 3.36)."""
    summary = {"total_count": count, "total_size": total_size}
    if with_metadata:
        summary["metadata"] = metadata
    return {"volume-summary": summary}


def volume_attachment(att):
    """One completed attachment inside the volume view."""
    return {
        "id": att["volume_id"],
        "attachment_id": att["id"],
        "volume_id": att["volume_id"],
        "server_id": att["instance_uuid"],
        "host_name": att["attached_host"],
        "device": att["mountpoint"],
        "attached_at": _time(att["attach_time"]),
    }


def _metadata(vol):
    """The volume's metadata; like Cinder, the read-only flag shows there as
    ``readonly: "True"`` (what `openstack volume show` lists), and as
    ``"False"`` once the flag was set back."""
    metadata = dict(vol["metadata"] or {})
    if vol.get("readonly") or vol.get("readonly_set"):
        metadata["readonly"] = "True" if vol.get("readonly") else "False"
    return metadata


def volume_detail(vol, prefix, version, is_admin, admin_attributes=True,
                  image_metadata=False):
    """The full volume view.  ``admin_attributes``: add the ``os-vol-*``
    keys for admins (Cinder shows them on GET, not on the create reply).
    ``image_metadata``: add ``volume_image_metadata`` of a volume made from
    an image (Cinder's extension adds it to show and detail lists only)."""
    view = {
        "id": vol["id"],
        "status": vol["status"],
        "size": vol["size"],
        "availability_zone": vol["availability_zone"],
        "created_at": _time(vol["created_at"]),
        "updated_at": _time(vol["updated_at"]),
        "name": vol["name"],
        "description": vol["description"],
        "volume_type": vol["volume_type_name"],
        "snapshot_id": None,
        "source_volid": None,
        "metadata": _metadata(vol),
        "links": _links(prefix, vol["project_id"], vol["id"]),
        "user_id": vol["user_id"],
        "bootable": "true" if vol["bootable"] else "false",
        "encrypted": False,
        "replication_status": None,
        "consistencygroup_id": None,
        "multiattach": bool(vol["multiattach"]),
        "attachments": [volume_attachment(a)
                        for a in vol.get("attachments", [])],
        "migration_status": vol["migration_status"],
    }
    if image_metadata and vol.get("image_id"):
        # no image service: the image's id is all there is to say of it
        view["volume_image_metadata"] = {"image_id": vol["image_id"],
                                         "image_name": vol["image_id"]}
    if version >= mv.GROUP_VOLUME:
        view["group_id"] = None
    if is_admin and version >= mv.VOLUME_DETAIL_PROVIDER_ID:
        view["provider_id"] = None
    if version >= mv.SHARED_TARGETS:
        view["shared_targets"] = bool(vol["shared_targets"])
        view["service_uuid"] = vol["service_uuid"]
    if is_admin and version >= mv.VOLUME_CLUSTER_NAME:
        view["cluster_name"] = None
    if version >= mv.VOLUME_TYPE_ID_IN_VOLUME_DETAIL:
        view["volume_type_id"] = vol["volume_type_id"]
    if version >= mv.USE_QUOTA:
        view["consumes_quota"] = True
    if is_admin and admin_attributes:
        view["os-vol-tenant-attr:tenant_id"] = vol["project_id"]
        view["os-vol-mig-status-attr:migstat"] = vol["migration_status"]
        view["os-vol-mig-status-attr:name_id"] = vol.get("name_id")
        view["os-vol-host-attr:host"] = vol["host"]
    return view


# -- attachments --------------------------------------------------------------

def attachment_summary(att):
    return {"id": att["id"], "status": att["attach_status"],
            "instance": att["instance_uuid"], "volume_id": att["volume_id"]}


def attachment_detail(att):
    view = attachment_summary(att)
    view.update({
        "attached_at": _att_time(att["attach_time"]),
        "detached_at": _att_time(att["detach_time"]),
        "attach_mode": att["attach_mode"] or "null",
        "connection_info": att["connection_info"] or {},
    })
    if "shared_connections_by_attachment" in att:
        view["shared_connections_by_attachment"] = (
            att["shared_connections_by_attachment"])
    return view


# -- volume types -------------------------------------------------------------

def volume_type(vtype, access=True):
    """A volume type; ``access``: with ``os-volume-type-access:is_public``,
    which Cinder's type-access extension adds to show, list and create,
    not to the update reply."""
    view = {
        "id": vtype["id"],
        "name": vtype["name"],
        "is_public": bool(vtype["is_public"]),
        "extra_specs": vtype["extra_specs"],
        "description": vtype["description"],
    }
    if access:
        view["os-volume-type-access:is_public"] = bool(vtype["is_public"])
    return view


# -- services -----------------------------------------------------------------

def service(svc, down_time, now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    last = svc["updated_at"] or svc["created_at"]
    up = (now - last).total_seconds() <= down_time
    return {
        "binary": svc["binary"],
        "host": svc["host"],
        "zone": svc["availability_zone"],
        "status": "disabled" if svc["disabled"] else "enabled",
        "state": "up" if up else "down",
        "updated_at": _time(svc["updated_at"]),
        "backend_state": "up" if up else "down",
        "cluster": None,
        "disabled_reason": svc["disabled_reason"],
        "replication_status": "disabled",
        "active_backend_id": None,
        "frozen": False,
    }
