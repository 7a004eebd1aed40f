"""GET /flavors, /flavors/detail, /flavors/{flavor_id} (read-only)."""
from oslo_utils import strutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import flavors as schemas
from volattach.api.views import flavors as view
from volattach import exception

POLICY = "os_compute_api:os-flavor-manage:list"

_SORT_ATTRS = {"flavorid": "flavorid", "id": "id", "name": "name",
               "memory_mb": "memory_mb", "root_gb": "root_gb",
               "ephemeral_gb": "ephemeral_gb", "swap": "swap",
               "vcpus": "vcpus", "rxtx_factor": "rxtx_factor",
               "is_public": "is_public", "disabled": "disabled",
               "description": "description"}


class Flavors(common.Resource):

    def _flavors(self, req):
        ctx = req.context.ctx
        query = validation.validate_query(req.context.microversion,
                                          schemas.INDEX_QUERY, common.query(req))
        policy.authorize(ctx, POLICY)
        flavors = list(self.compute.flavor_list(ctx))
        if ctx.is_admin:
            is_public = common.last(query, "is_public")
            if is_public is None:
                flavors = [f for f in flavors if f.is_public]
            elif is_public.lower() != "none":
                try:
                    wanted = strutils.bool_from_string(is_public, strict=True)
                except ValueError:
                    raise exception.InvalidInput(
                        message="Invalid is_public filter [%s]" % is_public)
                flavors = [f for f in flavors if f.is_public == wanted]
        else:
            flavors = [f for f in flavors if f.is_public and not f.disabled]
        for param, attr in (("minRam", "memory_mb"), ("minDisk", "root_gb")):
            value = common.last(query, param)
            if value is not None:
                try:
                    minimum = int(value)
                except ValueError:
                    raise exception.InvalidInput(
                        message="Invalid %s filter [%s]" % (param, value))
                flavors = [f for f in flavors if getattr(f, attr) >= minimum]
        name = common.last(query, "name")
        if name is not None:
            flavors = [f for f in flavors if f.name == name]
        sort_key = _SORT_ATTRS.get(common.last(query, "sort_key") or "flavorid",
                                   "flavorid")
        reverse = (common.last(query, "sort_dir") or "asc") == "desc"
        flavors.sort(key=lambda f: (getattr(f, sort_key) is None,
                                    getattr(f, sort_key)), reverse=reverse)
        limit, marker = common.limit_and_marker(self.conf, query)
        if marker is not None:
            ids = [f.flavorid for f in flavors]
            if marker not in ids:
                raise exception.InvalidInput(
                    message="marker [%s] not found" % marker)
            flavors = flavors[ids.index(marker) + 1:]
        return flavors[:limit]

    def on_get(self, req, resp):
        common.send(resp, view.index(req, self.conf, self._flavors(req)))

    def on_get_detail(self, req, resp):
        common.send(resp, view.detail(req, self.conf, self._flavors(req)))

    def on_get_item(self, req, resp, flavor_id):
        validation.validate_query(req.context.microversion, schemas.SHOW_QUERY,
                                  common.query(req))
        policy.authorize(req.context.ctx, POLICY)
        flavor = self.compute.flavor_get(req.context.ctx, flavor_id)
        common.send(resp, view.show(req, flavor))
