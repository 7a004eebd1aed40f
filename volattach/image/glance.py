"""A small client of Glance's v2 API: what the compute API checks an
imageRef against, and what a compute downloads a guest's image from.

Glance is used when ``[glance] endpoint`` or ``[glance] auth_type`` is set
(``configured``).  Under Keystone the calls carry a token of the
``[glance]`` credentials (keystoneauth's options, as ``[cinder]``'s), and
without an endpoint Glance is found in the catalog (service type
``image``); with an endpoint and no auth_type they carry no token (a
Glance on its noauth pipeline).  The ``[glance]`` identity sees every
image, so the API applies Glance's visibility rules for the caller itself
(``visible_to``).
"""
import logging

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

LOG = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024
TIMEOUT = 60


class ImageServiceError(Exception):
    """Glance could not be reached or answered an error."""


class ImageNotFound(ImageServiceError):
    """Glance has no such image (404)."""


def configured(conf):
    """Whether this configuration names an image service."""
    return bool(conf.glance.endpoint or conf.glance.auth_type)


def visible_to(image, project_id, is_admin, member_status=None):
    """Whether the caller may see ``image`` as Glance would show it to
    them: public and community images to everyone, a private image to its
    owner, a shared one to its owner and to a project it was shared with
    and that accepted it (``member_status``), everything to an admin."""
    if is_admin:
        return True
    visibility = image.get("visibility")
    if visibility in ("public", "community"):
        return True
    if image.get("owner") == project_id:
        return True
    return visibility == "shared" and member_status == "accepted"


class GlanceClient:
    def __init__(self, conf):
        self.conf = conf
        self._session = None

    @property
    def session(self):
        if self._session is None:
            auth = None
            if self.conf.glance.auth_type:
                auth = ks_loading.load_auth_from_conf_options(self.conf,
                                                              "glance")
            self._session = (
                ks_loading.load_session_from_conf_options(self.conf, "glance",
                                                          auth=auth)
                if auth is not None else ks_session.Session())
        return self._session

    def _url(self, path):
        if self.conf.glance.endpoint:
            return self.conf.glance.endpoint.rstrip("/") + path
        try:
            endpoint = self.session.get_endpoint(
                service_type="image",
                interface=self.conf.glance.valid_interfaces,
                region_name=self.conf.glance.region_name)
        except ks_exc.ClientException as exc:
            raise ImageServiceError("no image service in the catalog: %s"
                                    % exc)
        if not endpoint:
            raise ImageServiceError("no image service in the catalog")
        return endpoint.rstrip("/") + path

    def _get(self, path, **kwargs):
        url = self._url(path)
        try:
            resp = self.session.get(url, raise_exc=False, timeout=TIMEOUT,
                                    **kwargs)
        except ks_exc.ClientException as exc:
            raise ImageServiceError("Glance at %s could not be reached: %s"
                                    % (url, exc))
        if resp.status_code == 404:
            raise ImageNotFound(path)
        if resp.status_code != 200:
            raise ImageServiceError("Glance answered %s to GET %s: %s" % (
                resp.status_code, path, resp.text[:200]))
        return resp

    def show(self, image_id):
        """The image's record (``GET /v2/images/{id}``)."""
        return self._get("/v2/images/%s" % image_id).json()

    def member_status(self, image_id, project_id):
        """The status of ``project_id``'s membership of a shared image, or
        None when it is no member."""
        try:
            return self._get("/v2/images/%s/members/%s" % (
                image_id, project_id)).json().get("status")
        except ImageNotFound:
            return None

    def download(self, image_id):
        """The image's data, an iterator of chunks (``GET
        /v2/images/{id}/file``); the caller verifies size and hash."""
        resp = self._get("/v2/images/%s/file" % image_id, stream=True)
        try:
            yield from resp.iter_content(CHUNK_BYTES)
        except Exception as exc:   # requests' ChunkedEncodingError and kin
            raise ImageServiceError("the download of image %s stopped: %s"
                                    % (image_id, exc))
        finally:
            resp.close()
