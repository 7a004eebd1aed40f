"""GET /os-services (admin): the daemons and whether they are up."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import services as schemas
from volattach.api.views import services as view

POLICY = "os_compute_api:os-services:list"

# Not RPC services: their state is not reported, Nova leaves them out too.
API_BINARIES = ("volattach-api", "nova-osapi_compute", "nova-metadata")


class Services(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        query = validation.validate_query(req.context.microversion,
                                          schemas.INDEX_QUERY, common.query(req))
        policy.authorize(ctx, POLICY)
        services = self.compute.service_list(
            ctx, binary=common.last(query, "binary") or None,
            host=common.last(query, "host") or None)
        services = [(svc, up) for svc, up in services
                    if svc.binary not in API_BINARIES]
        common.send(resp, view.index(req, services))
