"""/volumes: create, list (summary, detail, totals), show, update, delete.

The lists filter on ``name``, ``status``, ``metadata``, ``bootable`` and
``availability_zone``, sort (``sort``, or ``sort_key``/``sort_dir``) and
page (``marker``, ``limit``, with Cinder's ``volumes_links``).  The volume
actions are in ``volume_actions``.
"""
import falcon
from oslo_utils import strutils

from volattach import exception
from volattach.volume import listing
from volattach.volume import manager as manager_mod
from volattach.volume import microversion as mv
from volattach.volume import views
from volattach.volume.handlers import body, context, flag, version
from volattach.volume.schemas import volumes as schemas

VOLUME_SUMMARY = mv.Version(3, 12)
SUMMARY_METADATA = mv.Version(3, 36)

# Query parameters that filter the lists, and the column each one reads.
_FILTERS = {"name": "name", "display_name": "name", "status": "status",
            "bootable": "bootable", "availability_zone": "availability_zone"}
_SORT_KEYS = ("id", "name", "display_name", "status", "size", "created_at",
              "updated_at", "availability_zone", "bootable")


def _detail(req, vol, admin_attributes=True, image_metadata=False):
    ctx = context(req)
    return views.volume_detail(vol, req.prefix, version(req), ctx.is_admin,
                               admin_attributes=admin_attributes,
                               image_metadata=image_metadata)


def checked_size(value, field="size"):
    """A size from a body already checked by its schema: an integer from 1
    to Cinder's DB_MAX_INT (a string of digits may be any length)."""
    size = int(value)
    if size < 1:
        raise exception.ValidationError(
            "Invalid input for field/attribute %s. Value: %s. %s is less "
            "than the minimum of 1" % (field, value, value))
    if size > manager_mod.DB_MAX_INT:
        raise exception.ValidationError(
            "Invalid input for field/attribute %s. Value: %s. %s is greater "
            "than the maximum of %d" % (field, value, value,
                                        manager_mod.DB_MAX_INT))
    return size


def _listed(req, manager):
    """The page of volumes the query asks for, and its next link."""
    filters = {}
    for param, column in _FILTERS.items():
        value = req.get_param(param)
        if value is not None:
            if column == "bootable":
                value = value.strip().lower() in ("1", "true", "yes", "t")
            filters[column] = value
    metadata = listing.metadata_param(req.get_param("metadata"))
    if metadata:
        filters["metadata"] = metadata
    limit = listing.limit_param(req.get_param("limit"))
    keys = listing.sort_params(req.get_param("sort"),
                               req.get_param("sort_key"),
                               req.get_param("sort_dir"), _SORT_KEYS)
    keys = [("name" if k == "display_name" else k, d) for k, d in keys]
    vols = manager.volume_list(context(req),
                               all_tenants=flag(req, "all_tenants"),
                               filters=filters)
    vols = listing.page(listing.sort_items(vols, keys),
                        req.get_param("marker"), limit)
    links = listing.next_link(req.prefix + req.path, req.params, vols, limit)
    return vols, links


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        vols, links = _listed(req, self.manager)
        resp.media = {"volumes": [views.volume_summary(v, req.prefix)
                                  for v in vols]}
        if links:
            resp.media["volumes_links"] = links

    def on_post(self, req, resp):
        data = body(req, schemas.create)["volume"]
        size = checked_size(data["size"])
        if data.get("snapshot_id"):
            raise exception.SnapshotNotFound(snapshot_id=data["snapshot_id"])
        if data.get("source_volid"):
            self.manager.volume_get(context(req), data["source_volid"])
            raise exception.InvalidInput(
                reason="Creating a volume from another volume is not "
                       "supported by this volume service.")
        vol = self.manager.volume_create(
            context(req), size,
            name=data.get("name", data.get("display_name")),
            description=data.get("description",
                                 data.get("display_description")),
            volume_type=data.get("volume_type"),
            availability_zone=data.get("availability_zone"),
            metadata=data.get("metadata"),
            multiattach=strutils.bool_from_string(data.get("multiattach")),
            image_ref=data.get("imageRef"))
        resp.status = falcon.HTTP_202
        resp.media = {"volume": _detail(req, vol, admin_attributes=False)}


class Detail:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        vols, links = _listed(req, self.manager)
        resp.media = {"volumes": [_detail(req, v, image_metadata=True)
                                  for v in vols]}
        if links:
            resp.media["volumes_links"] = links


class Summary:
    """GET /volumes/summary (3.12); below, "summary" is a volume id."""

    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        if version(req) < VOLUME_SUMMARY:
            raise exception.VolumeNotFound(volume_id="summary")
        count, total, metadata = self.manager.volume_summary(
            context(req), all_tenants=flag(req, "all_tenants"))
        resp.media = views.volume_summary_totals(
            count, total, metadata, version(req) >= SUMMARY_METADATA)


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, volume_id):
        vol = self.manager.volume_get(context(req), volume_id)
        resp.media = {"volume": _detail(req, vol, image_metadata=True)}

    def on_put(self, req, resp, volume_id):
        data = body(req, schemas.update)["volume"]
        values = {}
        for column, keys in (("name", ("name", "display_name")),
                             ("description", ("description",
                                              "display_description"))):
            for key in keys:
                if key in data:
                    values[column] = data[key]
        if data.get("metadata") is not None:
            values["metadata"] = data["metadata"]
        vol = self.manager.volume_update(context(req), volume_id, values)
        resp.media = {"volume": _detail(req, vol)}

    def on_delete(self, req, resp, volume_id):
        self.manager.volume_delete(context(req), volume_id)
        resp.status = falcon.HTTP_202
