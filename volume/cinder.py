"""Client of the block storage API (Cinder v3, or volattach-volume) for the
compute API and the conductor.

One ``VolumeAPI`` per process: it holds one keystoneauth1 Session (one
connection pool, kept-alive connections shared by the threads) built on
first use, and each call is one HTTP request to ``[cinder] endpoint`` +
``/<project_id>`` with an explicit ``OpenStack-API-Version: volume X.Y``.
The Session's requests.Session reads the environment (proxies, CA bundle)
once per host instead of on every request (``EnvCachingSession``).

Authentication (``[cinder] auth_strategy``):

* ``noauth``: ``X-Auth-Token: <user>:<project>`` of the RequestContext,
  plus ``:<role>,<role>`` when ``noauth_include_roles`` (volattach-volume
  reads roles from the token; real Cinder's noauth does not, set it False
  there).  With ``send_service_role``, ``X-Service-Roles: service`` goes with
  attachment deletes (real Cinder needs it to delete a connected attachment,
  bug 2004555).
* ``keystone``: the caller's token is forwarded and, when the keystoneauth
  options of ``[cinder]`` name an auth plugin, a service token is added
  (``X-Service-Token``), as Nova does.

Errors become ``volattach.exception``: 404 VolumeNotFound or
VolumeAttachmentNotFound (never swallowed), 400 InvalidVolume (message
starts "Invalid volume:") or InvalidInput with Cinder's message kept, 403
Forbidden, connection failures, timeouts and 503 CinderConnectionFailed,
anything else CinderAPIError.  Connection failures and 503 are retried with
backoff for at most ``[cinder] retry_seconds``; a read timeout is retried
only for idempotent methods (a POST may have been applied).  Nothing else is
retried, except one quirk of real Cinder (bug 1747985): it refuses to
reserve a multiattach volume while another attachment is reserved or
attaching ("... must be available or in-use or downloading to reserve, but
the current status is reserved"); ``attachment_create`` retries that 400
within the same bound, so concurrent attaches of one multiattach volume
succeed against real Cinder too.
"""
import re
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_log import log as logging
import requests
import tenacity

from volattach import conf as volattach_conf
from volattach import exception

LOG = logging.getLogger(__name__)

# Microversions sent, per family of calls.
VOLUME_MV = "3.48"       # volume view with shared_targets and service_uuid
ATTACHMENT_MV = "3.44"   # attachments, including os-complete
ATTACHMENT_MODE_MV = "3.54"  # attachment create with "mode"
TYPE_MV = "3.0"

_IDEMPOTENT = ("GET", "HEAD", "PUT", "DELETE")
_MULTIATTACH_BUSY = re.compile(
    r"status must be available or in-use or downloading to reserve, but "
    r"the current status is (reserved|attaching)")


class _Retry(Exception):
    """An outcome worth another try (connection failure, 503, quirk)."""

    def __init__(self, reason, response=None):
        super().__init__(reason)
        self.reason = reason
        self.response = response


def error_message(response):
    """Cinder's message from ``{"<fault>": {"code", "message"}}``."""
    try:
        body = response.json()
    except ValueError:
        return (response.text or response.reason or "").strip()
    if isinstance(body, dict) and len(body) == 1:
        fault = next(iter(body.values()))
        if isinstance(fault, dict) and "message" in fault:
            return str(fault["message"])
    return str(body)


def translate_error(response, not_found=None):
    """Raise the volattach exception for an error response."""
    code = response.status_code
    message = error_message(response)
    if code == 404 and not_found is not None:
        raise not_found()
    if code == 400:
        if message.startswith("Invalid volume:"):
            raise exception.InvalidVolume(message)
        raise exception.InvalidInput(message)
    if code == 403:
        raise exception.Forbidden(message)
    if code == 503:
        raise exception.CinderConnectionFailed(reason=message)
    raise exception.CinderAPIError(code=code, reason=message)


class EnvCachingSession(requests.Session):
    """A requests.Session that reads the environment once per host.

    With ``trust_env`` (the default, kept: ``HTTP_PROXY``, ``NO_PROXY``,
    ``REQUESTS_CA_BUNDLE``... are honoured), requests scans the whole of
    ``os.environ`` twice on every request to find proxies: 150-180 us of
    the client's 700 us per call on a 2-core machine with 35 environment
    variables (more variables, more time).  A daemon's environment does not
    change while it runs, and the result only depends on the URL's scheme
    and host, so it is computed once per (scheme, host, settings) and
    reused.
    """

    _MAX_CACHED = 64   # hosts: a handful in practice

    def __init__(self):
        super().__init__()
        self._env_settings = {}

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        if not self.trust_env or proxies:   # explicit proxies: no cache
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        key = (urllib.parse.urlsplit(url)[:2], stream, verify, cert)
        try:
            settings = self._env_settings.get(key)
        except TypeError:   # an unhashable setting
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        if settings is None:
            settings = super().merge_environment_settings(url, {}, stream,
                                                          verify, cert)
            if len(self._env_settings) >= self._MAX_CACHED:
                self._env_settings.clear()
            self._env_settings[key] = settings
        # Copies: requests may add to the proxies of one request.
        return dict(settings, proxies=dict(settings["proxies"]))


def requests_session(conf, group="cinder"):
    """The requests.Session under the keystoneauth1 Session: what
    keystoneauth builds itself (TCP keep-alive adapter, TLS options of
    ``[cinder]``), with the environment read once per host."""
    session = EnvCachingSession()
    adapter = ks_session.TCPKeepAliveAdapter(
        tls_ciphers=conf[group].tls_ciphers,
        tls_min_version=conf[group].tls_min_version)
    for scheme in list(session.adapters):
        session.mount(scheme, adapter)
    return session


class VolumeAPI:
    """Calls of the block storage API, context first."""

    def __init__(self, conf=None):
        self.conf = conf if conf is not None else volattach_conf.CONF
        self._session = None
        self._service_auth = None
        self._lock = threading.Lock()

    # -- transport ------------------------------------------------------------

    @property
    def session(self):
        if self._session is None:
            with self._lock:
                if self._session is None:
                    if self.conf.cinder.auth_strategy == "keystone":
                        self._service_auth = (
                            ks_loading.load_auth_from_conf_options(
                                self.conf, "cinder"))
                    self._session = ks_loading.load_session_from_conf_options(
                        self.conf, "cinder",
                        session=requests_session(self.conf))
        return self._session

    def _url(self, ctx, path):
        return "%s/%s%s" % (self.conf.cinder.endpoint.rstrip("/"),
                            ctx.project_id, path)

    def _noauth_token(self, ctx):
        token = "%s:%s" % (ctx.user_id, ctx.project_id)
        if self.conf.cinder.noauth_include_roles and ctx.roles:
            token += ":" + ",".join(ctx.roles)
        return token

    def _keystone_auth(self, ctx):
        self.session  # loads the service auth plugin
        user_auth = token_endpoint.Token(self.conf.cinder.endpoint,
                                         ctx.auth_token)
        if self._service_auth is None:
            return user_auth
        return service_token.ServiceTokenAuthWrapper(
            user_auth=user_auth, service_auth=self._service_auth)

    def _send_once(self, method, url, kwargs, retry_busy_multiattach):
        try:
            response = self.session.request(url, method, **kwargs)
        except ks_exc.ConnectFailure as exc:
            raise _Retry(str(exc))
        except ks_exc.ConnectTimeout as exc:
            if method in _IDEMPOTENT:
                raise _Retry(str(exc))
            raise exception.CinderConnectionFailed(reason=str(exc))
        except ks_exc.ConnectionError as exc:
            raise exception.CinderConnectionFailed(reason=str(exc))
        if response.status_code == 503:
            raise _Retry(error_message(response), response)
        if (retry_busy_multiattach and response.status_code == 400
                and _MULTIATTACH_BUSY.search(error_message(response))):
            raise _Retry(error_message(response), response)
        return response

    def _request(self, ctx, method, path, version, body=None, params=None,
                 not_found=None, service_role=False,
                 retry_busy_multiattach=False):
        headers = {"OpenStack-API-Version": "volume %s" % version,
                   "Accept": "application/json"}
        kwargs = {"headers": headers, "raise_exc": False,
                  "connect_retries": 0,
                  "global_request_id": (getattr(ctx, "global_request_id",
                                                None) or ctx.request_id)}
        if body is not None:
            kwargs["json"] = body
        if params:
            kwargs["params"] = params
        if self.conf.cinder.auth_strategy == "keystone":
            kwargs["auth"] = self._keystone_auth(ctx)
        else:
            kwargs["authenticated"] = False
            headers["X-Auth-Token"] = self._noauth_token(ctx)
            if service_role and self.conf.cinder.send_service_role:
                headers["X-Service-Roles"] = "service"
        url = self._url(ctx, path)
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Retry),
            stop=tenacity.stop_before_delay(self.conf.cinder.retry_seconds),
            wait=tenacity.wait_exponential_jitter(multiplier=0.05, max=2.0,
                                                  jitter=0.1),
            before_sleep=lambda state: LOG.debug(
                "Retrying %s %s: %s", method, url,
                state.outcome.exception()),
            reraise=True)
        try:
            response = retrying(self._send_once, method, url, kwargs,
                                retry_busy_multiattach)
        except _Retry as exc:
            if exc.response is None or exc.response.status_code == 503:
                raise exception.CinderConnectionFailed(reason=exc.reason)
            response = exc.response
        if response.status_code >= 400:
            translate_error(response, not_found)
        return response

    # -- volumes --------------------------------------------------------------

    def get(self, ctx, volume_id):
        """The volume view (3.48: with shared_targets and service_uuid)."""
        return self._request(
            ctx, "GET", "/volumes/%s" % volume_id, VOLUME_MV,
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id)
        ).json()["volume"]

    def create_volume(self, ctx, size, name=None, volume_type=None,
                      multiattach=None, description=None,
                      availability_zone=None, metadata=None):
        """Create a volume (202: answered while ``creating``).

        ``multiattach=True`` without a type uses a type whose extra spec is
        ``multiattach: "<is> True"``, creating one named ``multiattach`` if
        none exists (that needs an admin context), since Cinder only makes
        multiattach volumes from such a type.
        """
        if multiattach and volume_type is None:
            volume_type = self._multiattach_type(ctx)["id"]
        volume = {"size": size}
        for key, value in (("name", name), ("description", description),
                           ("volume_type", volume_type),
                           ("availability_zone", availability_zone),
                           ("metadata", metadata)):
            if value is not None:
                volume[key] = value
        return self._request(ctx, "POST", "/volumes", VOLUME_MV,
                             body={"volume": volume}).json()["volume"]

    def _multiattach_type(self, ctx):
        for vtype in self.list_types(ctx):
            spec = (vtype.get("extra_specs") or {}).get("multiattach", "")
            if spec.strip().lower() == "<is> true":
                return vtype
        return self.create_type(ctx, "multiattach",
                                {"multiattach": "<is> True"})

    def wait_for_volume_status(self, ctx, volume_id, statuses, timeout=30.0,
                               interval=0.1):
        """Poll until the volume's status is one of ``statuses``."""
        statuses = (statuses,) if isinstance(statuses, str) else statuses
        deadline = time.monotonic() + timeout
        while True:
            volume = self.get(ctx, volume_id)
            if volume["status"] in statuses:
                return volume
            if time.monotonic() >= deadline:
                raise exception.InvalidVolume(
                    reason="Volume %s is %s, not %s after %ss" % (
                        volume_id, volume["status"], "/".join(statuses),
                        timeout))
            time.sleep(interval)

    def delete_volume(self, ctx, volume_id):
        self._request(
            ctx, "DELETE", "/volumes/%s" % volume_id, VOLUME_MV,
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id))

    def list_volumes(self, ctx, detail=True, all_tenants=False):
        path = "/volumes/detail" if detail else "/volumes"
        params = {"all_tenants": 1} if all_tenants else None
        return self._request(ctx, "GET", path, VOLUME_MV,
                             params=params).json()["volumes"]

    def _volume_action(self, ctx, volume_id, body):
        self._request(
            ctx, "POST", "/volumes/%s/action" % volume_id, VOLUME_MV,
            body=body,
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id))

    def begin_detaching(self, ctx, volume_id):
        self._volume_action(ctx, volume_id, {"os-begin_detaching": {}})

    def roll_detaching(self, ctx, volume_id):
        self._volume_action(ctx, volume_id, {"os-roll_detaching": {}})

    def update_readonly_flag(self, ctx, volume_id, readonly):
        self._volume_action(ctx, volume_id, {
            "os-update_readonly_flag": {"readonly": bool(readonly)}})

    def reset_volume_status(self, ctx, volume_id, status=None,
                            attach_status=None, migration_status=None):
        """os-reset_status (admin)."""
        args = {key: value for key, value in (
            ("status", status), ("attach_status", attach_status),
            ("migration_status", migration_status)) if value is not None}
        self._volume_action(ctx, volume_id, {"os-reset_status": args})

    # -- volume types ---------------------------------------------------------

    def create_type(self, ctx, name, extra_specs=None, description=None,
                    is_public=True):
        vtype = {"name": name, "extra_specs": dict(extra_specs or {}),
                 "os-volume-type-access:is_public": is_public}
        if description is not None:
            vtype["description"] = description
        return self._request(ctx, "POST", "/types", TYPE_MV,
                             body={"volume_type": vtype}).json()["volume_type"]

    def list_types(self, ctx):
        return self._request(ctx, "GET", "/types",
                             TYPE_MV).json()["volume_types"]

    # -- attachments ----------------------------------------------------------

    def attachment_create(self, ctx, volume_id, instance_uuid, connector=None,
                          mountpoint=None, mode=None):
        """Reserve ``volume_id`` for ``instance_uuid`` (and connect it when
        a connector is given); returns the attachment view (``id``,
        ``connection_info``...)."""
        attachment = {"volume_uuid": volume_id,
                      "instance_uuid": instance_uuid}
        if connector:
            connector = dict(connector)
            if mountpoint:
                connector["mountpoint"] = mountpoint
            attachment["connector"] = connector
        version = ATTACHMENT_MV
        if mode:
            attachment["mode"] = mode
            version = ATTACHMENT_MODE_MV
        created = self._request(
            ctx, "POST", "/attachments", version,
            body={"attachment": attachment},
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id),
            retry_busy_multiattach=True).json()["attachment"]
        if connector:
            # Real Cinder answers a stale status here: read it back.
            return self.attachment_get(ctx, created["id"])
        return created

    def attachment_update(self, ctx, attachment_id, connector,
                          mountpoint=None):
        """Connect the attachment to the host of ``connector``; returns the
        connected attachment.  Real Cinder's PUT body is stale (still
        ``reserved``): then the attachment is re-read with GET; a service
        that answers with the connected attachment saves that round trip."""
        connector = dict(connector)
        if mountpoint:
            connector["mountpoint"] = mountpoint
        response = self._request(
            ctx, "PUT", "/attachments/%s" % attachment_id, ATTACHMENT_MV,
            body={"attachment": {"connector": connector}},
            not_found=self._attachment_not_found(attachment_id))
        try:
            attachment = response.json()["attachment"]
        except (ValueError, KeyError, TypeError):
            attachment = None
        if (attachment and attachment.get("status") in ("attaching", "attached")
                and attachment.get("connection_info")
                and "shared_connections_by_attachment" in attachment):
            return attachment
        return self.attachment_get(ctx, attachment_id)

    @staticmethod
    def _attachment_not_found(attachment_id):
        return lambda: exception.VolumeAttachmentNotFound(
            attachment_id=attachment_id)

    def attachment_get(self, ctx, attachment_id):
        return self._request(
            ctx, "GET", "/attachments/%s" % attachment_id, ATTACHMENT_MV,
            not_found=self._attachment_not_found(attachment_id)
        ).json()["attachment"]

    def attachment_complete(self, ctx, attachment_id):
        self._request(
            ctx, "POST", "/attachments/%s/action" % attachment_id,
            ATTACHMENT_MV, body={"os-complete": None},
            not_found=self._attachment_not_found(attachment_id))

    def attachment_delete(self, ctx, attachment_id):
        """Delete the attachment; returns the volume's remaining ones.
        A 404 raises VolumeAttachmentNotFound: the caller decides."""
        response = self._request(
            ctx, "DELETE", "/attachments/%s" % attachment_id, ATTACHMENT_MV,
            not_found=self._attachment_not_found(attachment_id),
            service_role=True)
        try:
            return response.json().get("attachments", [])
        except ValueError:
            return []

    def attachment_list(self, ctx, volume_id=None, instance_id=None,
                        detail=False, all_tenants=False):
        """Attachments (``all_tenants``: of every project; admin)."""
        params = {key: value for key, value in (
            ("volume_id", volume_id), ("instance_id", instance_id)) if value}
        if all_tenants:
            params["all_tenants"] = 1
        path = "/attachments/detail" if detail else "/attachments"
        return self._request(ctx, "GET", path, ATTACHMENT_MV,
                             params=params).json()["attachments"]
