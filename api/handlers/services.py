"""GET /os-services (admin): the daemons and whether they are up.

The ``binary`` filter also takes Nova's names of the daemons
(``nova-compute``, ``nova-conductor``), which tempest's host pickers,
openstackclient's ``--service`` and hypervisor counts use: it then lists
the services registered under either name, so computes of every release
are found while they are rolled.
"""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import services as schemas
from volattach.api.views import services as view

POLICY = "os_compute_api:os-services:list"

# Not RPC services: their state is not reported, Nova leaves them out too.
API_BINARIES = ("volattach-api", "nova-osapi_compute", "nova-metadata")

# Nova's name of a daemon -> every name it may be registered under
BINARY_ALIASES = {
    "nova-compute": ("nova-compute", "volattach-compute"),
    "nova-conductor": ("nova-conductor", "volattach-conductor"),
}


class Services(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        query = validation.validate_query(req.context.microversion,
                                          schemas.INDEX_QUERY, common.query(req))
        policy.authorize(ctx, POLICY)
        binary = common.last(query, "binary") or None
        binaries = BINARY_ALIASES.get(binary)
        services = self.compute.service_list(
            ctx, binary=None if binaries else binary,
            host=common.last(query, "host") or None)
        services = [(svc, up) for svc, up in services
                    if svc.binary not in API_BINARIES
                    and (not binaries or svc.binary in binaries)]
        common.send(resp, view.index(req, services))
