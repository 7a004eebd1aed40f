"""After an ``os-reimage`` of a reserved volume (a volume-backed server
being rebuilt, compute API 2.93), tell the compute API it is done, as
Cinder does: ``POST {[volume] compute_endpoint}/os-server-external-events``
at compute 2.93 with one ``volume-reimaged`` event (tag: the volume id) per
server the volume's attachments name.  The rebuild waits for it.

It is posted from a thread of its own once the re-image is recorded, so the
202 of ``os-reimage`` does not wait on the compute API.  A compute API that
refuses or cannot be reached is logged: the waiting rebuild then times out
and its server goes to ERROR, as with Cinder.  Credentials are those of the
volume service's other compute-API call (``compute_client``).
"""
import logging
import threading

from volattach.volume import compute_client

LOG = logging.getLogger(__name__)

MICROVERSION = "2.93"
_clients = {}
_clients_lock = threading.Lock()


def _client(conf):
    with _clients_lock:
        client = _clients.get(id(conf))
        if client is None:
            client = _clients[id(conf)] = compute_client.ComputeClient(conf)
        return client


def post(conf, server_ids, volume_id):
    """Post the events now; whether the compute API accepted them all."""
    if not server_ids:
        return True
    url = "%s/os-server-external-events" % (
        compute_client.compute_endpoint(conf).rstrip("/"))
    events = [{"name": "volume-reimaged", "server_uuid": server_id,
               "tag": volume_id} for server_id in server_ids]
    try:
        resp = _client(conf).session.post(
            url, json={"events": events},
            headers={"OpenStack-API-Version": "compute " + MICROVERSION},
            raise_exc=False)
    except Exception as error:
        LOG.error("volume-reimaged of volume %s could not be posted to %s: "
                  "%s", volume_id, url, error)
        return False
    if resp.status_code not in (200, 207):
        LOG.error("the compute API refused volume-reimaged of volume %s: "
                  "%s %s", volume_id, resp.status_code, resp.text[:200])
        return False
    answered = resp.json().get("events", [])
    failed = [e for e in answered if e.get("code") != 200]
    for event in failed:
        LOG.warning("volume-reimaged of volume %s for server %s: code %s",
                    volume_id, event.get("server_uuid"), event.get("code"))
    if not failed:
        LOG.info("volume-reimaged of volume %s posted for %s", volume_id,
                 ", ".join(server_ids))
    return not failed


def post_in_background(conf, server_ids, volume_id):
    if not server_ids:
        return None
    thread = threading.Thread(target=post, args=(conf, server_ids, volume_id),
                              name="volume-reimaged-%s" % volume_id[:8],
                              daemon=True)
    thread.start()
    return thread
