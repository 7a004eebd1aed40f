"""POST /os-server-external-events: other services tell the compute API
about its servers (Nova's contract).

Body ``{"events": [{"name", "server_uuid", "status"?, "tag"?}, ...]}``,
validated against the schema of the microversion (the names it accepts),
then the policy (the service role or an admin, Nova's default).  The answer
repeats each event with its own ``code`` and ``status`` (200 completed, or
failed with 404 unknown server, 400 a missing tag, 422 a server that no
compute that takes events owns); the whole answer is 200 when every event
was accepted and 207 otherwise, also when none was (Nova since bug
1855752: never 404).  The facade (``api.compute.external_events``) hands
the accepted ones on.
"""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import server_external_events as schemas

POLICY = "os_compute_api:os-server-external-events:create"


class ServerExternalEvents(common.Resource):

    def on_post(self, req, resp):
        body = validation.validate_body(req.context.microversion,
                                        schemas.CREATE, common.read_body(req))
        ctx = req.context.ctx
        policy.authorize(ctx, POLICY, {})
        events, all_accepted = self.compute.external_instance_event(
            ctx, body["events"])
        common.send(resp, {"events": events},
                    status=200 if all_accepted else 207)
