"""The volume service's one call to the compute API: Nova's swap of an
attached volume, made during a retype or migration that moves the data.

``PUT {[volume] compute_endpoint}/servers/{server}/os-volume_attachments/
{old}`` with ``{"volumeAttachment": {"volumeId": new}}``, answered 202; the
compute side then calls ``os-migrate_volume_completion`` back.  It
authenticates with the ``[cinder]`` service credentials when ``[volume]
auth_strategy`` is keystone, else with a noauth admin token.
"""
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from volattach import exception

# <user>:<project>:<roles> of the noauth middleware.
NOAUTH_TOKEN = "cinder:service:admin,service"


def compute_endpoint(conf):
    """``[volume] compute_endpoint``, or the compute API of this
    configuration's ``[api]`` (volattach-all's own)."""
    if conf.volume.compute_endpoint:
        return conf.volume.compute_endpoint
    host = conf.api.listen
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = "[%s]" % host
    return "http://%s:%s/v2.1" % (host, conf.api.port)


class ComputeClient:
    def __init__(self, conf):
        self.conf = conf
        self._session = None

    @property
    def session(self):
        if self._session is None:
            endpoint = compute_endpoint(self.conf)
            if self.conf.volume.auth_strategy == "keystone":
                auth = ks_loading.load_auth_from_conf_options(self.conf,
                                                              "cinder")
            else:
                auth = token_endpoint.Token(endpoint, NOAUTH_TOKEN)
            self._session = ks_session.Session(
                auth=auth, timeout=self.conf.volume.compute_timeout)
        return self._session

    def swap_volume(self, server_id, old_volume_id, new_volume_id):
        """Ask the compute API to move the server from the old volume to
        the new one; InvalidVolume when it refuses or cannot be reached."""
        url = "%s/servers/%s/os-volume_attachments/%s" % (
            compute_endpoint(self.conf).rstrip("/"), server_id,
            old_volume_id)
        try:
            resp = self.session.put(
                url, json={"volumeAttachment": {"volumeId": new_volume_id}},
                headers={"X-OpenStack-Nova-API-Version": "2.1"},
                raise_exc=False)
        except ks_exc.ClientException as exc:
            raise exception.InvalidVolume(
                reason="the compute API at %s could not be reached: %s"
                % (compute_endpoint(self.conf), exc))
        if resp.status_code != 202:
            raise exception.InvalidVolume(
                reason="the compute API refused to swap volume %s of "
                "server %s: "
                "%s %s" % (old_volume_id, server_id, resp.status_code,
                           resp.text[:200]))
