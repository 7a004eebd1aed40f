"""The volume service's events to the compute API: ``volume-extended``.

After it grew an attached volume, the volume service posts one
``volume-extended`` event per attached server (``tag``: the volume id) to
the compute API's ``POST /os-server-external-events`` at microversion
2.51, as Cinder's ``compute.nova.API.extend_volume`` does.  The compute
API is ``[volume] compute_endpoint`` (volattach-all's own by default),
reached with ``compute_client``'s credentials: the ``[cinder]`` service
user's keystoneauth options under Keystone, a noauth admin and service
token on loopback noauth.  Each call waits at most ``[volume]
compute_timeout`` seconds.

Delivery is best effort, as Cinder's: a compute API that does not answer
(refused, timeout, 5xx) or that fails an event is logged as ONE warning
line with its cause, and the volume stays in-use at its new size; the
compute reads the size when it next plugs the volume (hard reboot,
re-attach), so nothing is lost.

``send(name, volume_id, servers, microversion)`` posts any event of a
volume the same way (``volume-reimaged`` at 2.93 would fit).
"""
from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from volattach.volume import compute_client

LOG = logging.getLogger(__name__)

VOLUME_EXTENDED = "volume-extended"
# the compute microversion the event exists from (Cinder sends 2.51)
API_VERSION = "2.51"


class ComputeEvents:
    """Posts the events; ``client``: the service's ComputeClient (its
    session and endpoint)."""

    def __init__(self, conf, client=None):
        self.conf = conf
        self.client = client or compute_client.ComputeClient(conf)

    def volume_extended(self, volume_id, server_ids):
        """Post ``volume-extended`` of ``volume_id`` for each server; True
        when the compute API took every event (code 200)."""
        return self.send(VOLUME_EXTENDED, volume_id, server_ids, API_VERSION)

    def send(self, name, volume_id, server_ids, api_version):
        """Post one event ``name`` (tag: ``volume_id``) per server at
        compute microversion ``api_version``; True when the compute API
        took every event.  Any failure is one WARNING line."""
        events = [{"name": name, "server_uuid": server, "tag": volume_id}
                  for server in server_ids]
        if not events:
            return True
        endpoint = compute_client.compute_endpoint(self.conf)
        url = "%s/os-server-external-events" % endpoint.rstrip("/")
        what = ("%s of volume %s for server(s) %s"
                % (name, volume_id, ", ".join(server_ids)))
        try:
            resp = self.client.session.post(
                url, json={"events": events}, raise_exc=False,
                headers={"X-OpenStack-Nova-API-Version": api_version},
                timeout=self.conf.volume.compute_timeout)
        except ks_exc.ClientException as exc:
            LOG.warning("%s not delivered: the compute API at %s did not "
                        "answer: %s: %s", what, endpoint,
                        type(exc).__name__, exc)
            return False
        if resp.status_code not in (200, 207):
            LOG.warning("%s not delivered: the compute API at %s answered "
                        "%s %s", what, endpoint, resp.status_code,
                        " ".join(resp.text[:200].split()))
            return False
        try:
            answered = resp.json()["events"]
        except (ValueError, KeyError, TypeError):
            answered = None
        if not isinstance(answered, list):
            LOG.warning("%s: the compute API at %s answered %s without "
                        "its events: %s", what, endpoint, resp.status_code,
                        " ".join(resp.text[:200].split()))
            return False
        failed = ["%s %s %s" % (e.get("server_uuid"), e.get("code"),
                                e.get("status")) if isinstance(e, dict)
                  else repr(e)
                  for e in answered
                  if not isinstance(e, dict) or e.get("code") != 200]
        if failed:
            LOG.warning("%s: the compute API failed %d event(s): %s", what,
                        len(failed), "; ".join(failed))
            return False
        LOG.info("%s delivered to the compute API at %s", what, endpoint)
        return True
