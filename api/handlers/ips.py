"""/servers/{server_id}/ips[/{network_label}]: os-server-ips.

The addresses of a server by network label, as Nova lists them.  Nothing
allocates ports behind this API, so a server is a member of no network:
the list is ``{"addresses": {}}`` and every network label is 404, the
answers Nova gives for a server booted with ``networks: none``.
"""
from volattach.api import common
from volattach.api import policy
from volattach import exception

POLICY = "os_compute_api:ips:%s"


def addresses(instance):
    """network label -> [{"version", "addr"}] of a server (none here)."""
    return {}


class ServerIps(common.Resource):

    def _instance(self, req, server_id, action):
        ctx = req.context.ctx
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, POLICY % action,
                         {"project_id": instance.project_id})
        return instance

    def on_get(self, req, resp, server_id):
        instance = self._instance(req, server_id, "index")
        common.send(resp, {"addresses": addresses(instance)})

    def on_get_item(self, req, resp, server_id, network_label):
        instance = self._instance(req, server_id, "show")
        networks = addresses(instance)
        if network_label not in networks:
            raise exception.NotFound(
                message="Instance is not a member of specified network")
        common.send(resp, {network_label: networks[network_label]})
