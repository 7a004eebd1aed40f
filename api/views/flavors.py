"""Flavor bodies.

List (``GET /flavors``): id, name, links; description 2.55+.
Detail and show: id, name, ram, disk, vcpus, links,
``OS-FLV-EXT-DATA:ephemeral``, ``os-flavor-access:is_public``, swap ("" when
0, 0 from 2.75), ``OS-FLV-DISABLED:disabled`` and rxtx_factor (both gone from
2.102), description 2.55+, extra_specs 2.61+ (always {}: flavors here carry
none).
"""
from volattach.api import common
from volattach.api.views import field


def basic(req, flavor):
    body = {"id": str(flavor.flavorid), "name": flavor.name,
            "links": common.links(req, "flavors", flavor.flavorid)}
    if req.context.microversion.matches("2.55"):
        body["description"] = field(flavor, "description")
    return body


def full(req, flavor):
    mv = req.context.microversion
    body = {
        "id": str(flavor.flavorid),
        "name": flavor.name,
        "ram": flavor.memory_mb,
        "disk": flavor.root_gb,
        "swap": flavor.swap or "",
        "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
        "OS-FLV-DISABLED:disabled": bool(field(flavor, "disabled", False)),
        "vcpus": flavor.vcpus,
        "os-flavor-access:is_public": bool(field(flavor, "is_public", True)),
        "rxtx_factor": field(flavor, "rxtx_factor") or "",
        "links": common.links(req, "flavors", flavor.flavorid),
    }
    if mv.matches("2.55"):
        body["description"] = field(flavor, "description")
    if mv.matches("2.61"):
        body["extra_specs"] = {}
    if mv.matches("2.75"):
        body["swap"] = flavor.swap or 0
    if mv.matches("2.102"):
        del body["OS-FLV-DISABLED:disabled"]
        del body["rxtx_factor"]
    return body


def _list(req, conf, flavors, func, collection):
    items = [func(req, flavor) for flavor in flavors]
    body = {"flavors": items}
    next_links = common.collection_links(req, conf, items, collection)
    if next_links:
        body["flavors_links"] = next_links
    return body


def index(req, conf, flavors):
    return _list(req, conf, flavors, basic, "flavors")


def detail(req, conf, flavors):
    return _list(req, conf, flavors, full, "flavors/detail")


def show(req, flavor):
    return {"flavor": full(req, flavor)}
