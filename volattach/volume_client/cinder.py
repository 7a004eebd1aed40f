"""Client of the block storage API (Cinder v3, or volattach-volume) for the
compute API and the conductor.

One ``VolumeAPI`` per process: each call is one HTTP request to ``[cinder]
endpoint`` + ``/<project_id>`` with an explicit ``OpenStack-API-Version:
volume X.Y``, sent with urllib3 (``volume_client.http_transport``).  A keystoneauth1
Session built on first use supplies the auth headers.

Authentication (``[cinder] auth_strategy``):

* ``noauth``: ``X-Auth-Token: <user>:<project>`` of the RequestContext,
  plus ``:<role>,<role>`` when ``noauth_include_roles`` (volattach-volume
  reads roles from the token; real Cinder's noauth does not, set it False
  there).  With ``send_service_role``, ``X-Service-Roles: service`` goes with
  attachment deletes (real Cinder needs it to delete a connected attachment,
  bug 2004555).
* ``keystone``: the caller's token is forwarded and, when the keystoneauth
  options of ``[cinder]`` name an auth plugin, a service token is added
  (``X-Service-Token``), as Nova does.  A call without a caller's token (the
  conductor's periodic passes) authenticates with those service credentials
  themselves, in the service user's project.

Errors become ``volattach.exception``: 404 VolumeNotFound or
VolumeAttachmentNotFound (never swallowed), 400 InvalidVolume (message
starts "Invalid volume:") or InvalidInput with Cinder's message kept, 403
Forbidden, connection failures, timeouts and 503 CinderConnectionFailed,
anything else CinderAPIError.  A request that never reached the server
(connection refused, connect timeout) and a 503 are retried with backoff
for at most ``[cinder] retry_seconds``; one that may have reached it and got
no answer (reset, closed, read timeout) is retried only for idempotent
methods and for the two POST actions that only set a state and are
idempotent (os-complete, os-roll_detaching).  Any other POST is never sent
twice once it may have arrived: ``attachment_create`` then lists the
attachments of the server and volume and returns the one the service made,
or sends the create again only when there is none.  Nothing else is
retried, except one quirk of real Cinder (bug 1747985): it refuses to
reserve a multiattach volume while another attachment is reserved or
attaching ("... must be available or in-use or downloading to reserve, but
the current status is reserved"); ``attachment_create`` retries that 400
within the same bound, so concurrent attaches of one multiattach volume
succeed against real Cinder too.
"""
import json
import random
import re
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
from keystoneauth1 import token_endpoint
from oslo_log import log as logging

from volattach import conf as volattach_conf
from volattach import exception
from volattach.volume_client import http_transport

LOG = logging.getLogger(__name__)

# Microversions sent, per family of calls.
VOLUME_MV = "3.48"       # volume view with shared_targets and service_uuid
ATTACHMENT_MV = "3.44"   # attachments, including os-complete
ATTACHMENT_MODE_MV = "3.54"  # attachment create with "mode"
TYPE_MV = "3.0"
REIMAGE_MV = "3.68"     # os-reimage (rebuild of a volume-backed server)
USER_AGENT = "volattach-volume-client"

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


class _MaybeApplied(Exception):
    """A non-idempotent request may have reached the server unanswered."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


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


def _log_exchange(ctx, method, url, outcome):
    """The DEBUG line of one exchange with the volume service."""
    if LOG.isEnabledFor(logging.DEBUG):
        LOG.debug("volume call %s %s: %s", method,
                  urllib.parse.urlsplit(url).path, outcome,
                  extra={"context": ctx} if ctx is not None else {})


class VolumeAPI:
    """Calls of the block storage API, context first."""

    def __init__(self, conf=None):
        self.conf = conf if conf is not None else volattach_conf.CONF
        self._session = None
        self._service_auth = None
        self._transport = None
        self._lock = threading.Lock()

    # -- transport ------------------------------------------------------------

    def _load(self):
        with self._lock:
            if self._session is None:
                conf = self.conf
                if conf.cinder.auth_strategy == "keystone":
                    self._service_auth = (
                        ks_loading.load_auth_from_conf_options(conf, "cinder"))
                self._transport = http_transport.Transport(conf.cinder)
                self._session = ks_loading.load_session_from_conf_options(
                    conf, "cinder", auth=self._service_auth)

    @property
    def session(self):
        """The keystoneauth Session: auth headers of the plugins (the
        caller's token, the service credentials of ``[cinder]``)."""
        if self._session is None:
            self._load()
        return self._session

    @property
    def transport(self):
        if self._transport is None:
            self._load()
        return self._transport

    def _url(self, ctx, path, project_id=None):
        endpoint = volattach_conf.cinder_endpoint(self.conf)
        return "%s/%s%s" % (endpoint.rstrip("/"),
                            project_id or ctx.project_id, path)

    def _noauth_token(self, ctx):
        token = "%s:%s" % (ctx.user_id, ctx.project_id)
        if self.conf.cinder.noauth_include_roles and ctx.roles:
            token += ":" + ",".join(ctx.roles)
        return token

    def _keystone_auth(self, ctx):
        """The auth plugin of a call: the caller's token (with a service
        token when ``[cinder]`` has credentials), or, for a call without a
        caller (periodic tasks), the ``[cinder]`` service credentials."""
        self.session  # loads the service auth plugin
        if not ctx.auth_token:
            if self._service_auth is None:
                raise exception.CinderConnectionFailed(
                    reason="no caller token and no [cinder] service "
                           "credentials (auth_type) to call the volume "
                           "service with")
            return self._service_auth
        user_auth = token_endpoint.Token(
            volattach_conf.cinder_endpoint(self.conf), ctx.auth_token)
        if self._service_auth is None:
            return user_auth
        return service_token.ServiceTokenAuthWrapper(
            user_auth=user_auth, service_auth=self._service_auth)

    def _auth_headers(self, auth):
        try:
            headers = self.session.get_auth_headers(auth)
        except ks_exc.ClientException as exc:
            raise exception.CinderConnectionFailed(
                reason="authentication failed: %s" % exc)
        if not headers:
            raise exception.CinderConnectionFailed(
                reason="no valid authentication is available")
        return headers

    def _send_once(self, method, url, headers, body, auth, may_resend,
                   retry_busy_multiattach, ctx=None):
        """One exchange (and, on a 401 with keystone, one more with a
        fresh token); raises ``_Retry`` for what may be tried again.  At
        DEBUG each exchange is logged (method, path, status), with the
        caller's request id (``ctx``)."""
        if auth is not None:
            headers = dict(headers, **self._auth_headers(auth))
        try:
            response = self.transport.request(method, url, headers, body)
            if (response.status_code == 401 and auth is not None
                    and self.session.invalidate(auth)):
                _log_exchange(ctx, method, url, response.status_code)
                headers.update(self._auth_headers(auth))
                response = self.transport.request(method, url, headers, body)
        except http_transport.NotSent as exc:
            _log_exchange(ctx, method, url, "not sent (%s)" % exc)
            raise _Retry(str(exc))
        except http_transport.MaybeSent as exc:
            _log_exchange(ctx, method, url, "no answer (%s)" % exc)
            if may_resend:
                raise _Retry(str(exc))
            raise _MaybeApplied(str(exc))
        _log_exchange(ctx, method, url, response.status_code)
        if response.status_code == 503:
            raise _Retry(error_message(response), response)
        if (retry_busy_multiattach and response.status_code == 400
                and _MULTIATTACH_BUSY.search(error_message(response))):
            raise _Retry(error_message(response), response)
        return response

    def _request(self, ctx, method, path, version, body=None, params=None,
                 not_found=None, service_role=False,
                 retry_busy_multiattach=False, applied=None, idempotent=False):
        """One call, retried within ``[cinder] retry_seconds`` while it
        cannot have been applied: a connection never made, a 503, or an
        idempotent method (or POST: ``idempotent``).  A POST that may have reached the server is
        never sent again: ``applied()`` (when given) says whether it was,
        returning its result, or None to send it again."""
        headers = {"OpenStack-API-Version": "volume %s" % version,
                   "Accept": "application/json",
                   "User-Agent": USER_AGENT,
                   "X-OpenStack-Request-ID": (
                       getattr(ctx, "global_request_id", None)
                       or ctx.request_id)}
        project_id = None
        auth = None
        if self.conf.cinder.auth_strategy == "keystone":
            auth = self._keystone_auth(ctx)
            if auth is self._service_auth and not ctx.auth_token:
                project_id = self._service_auth.get_project_id(self.session)
        else:
            headers["X-Auth-Token"] = self._noauth_token(ctx)
            if service_role and self.conf.cinder.send_service_role:
                headers["X-Service-Roles"] = "service"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        url = self._url(ctx, path, project_id)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        may_resend = idempotent or method in _IDEMPOTENT
        deadline = time.monotonic() + self.conf.cinder.retry_seconds
        attempt = 0
        while True:
            try:
                response = self._send_once(method, url, headers, data, auth,
                                           may_resend, retry_busy_multiattach,
                                           ctx=ctx)
                break
            except _MaybeApplied as exc:
                if applied is None:
                    raise exception.CinderConnectionFailed(reason=exc.reason)
                LOG.info("%s %s may have been applied (%s): asking the "
                         "volume service", method, url, exc.reason)
                result = applied()
                if result is not None:
                    return result
                last = _Retry(exc.reason)
            except _Retry as exc:
                last = exc
            attempt += 1
            pause = min(2.0, 0.05 * 2 ** attempt) * random.uniform(0.9, 1.1)
            if time.monotonic() + pause > deadline:
                if last.response is None or last.response.status_code == 503:
                    raise exception.CinderConnectionFailed(reason=last.reason)
                response = last.response
                break
            LOG.debug("Retrying %s %s: %s", method, url, last.reason)
            time.sleep(pause)
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

    def _volume_action(self, ctx, volume_id, body, idempotent=False):
        self._request(
            ctx, "POST", "/volumes/%s/action" % volume_id, VOLUME_MV,
            body=body, idempotent=idempotent,
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id))

    def begin_detaching(self, ctx, volume_id):
        self._volume_action(ctx, volume_id, {"os-begin_detaching": {}})

    def roll_detaching(self, ctx, volume_id):
        self._volume_action(ctx, volume_id, {"os-roll_detaching": {}},
                            idempotent=True)

    def migrate_volume_completion(self, ctx, volume_id, new_volume_id,
                                  error=False):
        """os-migrate_volume_completion after a swap the volume service
        asked for: returns the id the server's record must name."""
        return self._request(
            ctx, "POST", "/volumes/%s/action" % volume_id, VOLUME_MV,
            body={"os-migrate_volume_completion": {
                "new_volume": new_volume_id, "error": bool(error)}},
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id)
        ).json()["save_volume_id"]

    def reimage(self, ctx, volume_id, image_id, reimage_reserved=False):
        """os-reimage (3.68): the volume's data becomes ``image_id``'s;
        ``reimage_reserved``: the volume may be reserved (a server's root
        volume between two attachments, rebuild from compute 2.93)."""
        self._request(
            ctx, "POST", "/volumes/%s/action" % volume_id, REIMAGE_MV,
            body={"os-reimage": {"image_id": image_id,
                                 "reimage_reserved": bool(reimage_reserved)}},
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id))

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
        result = self._request(
            ctx, "POST", "/attachments", version,
            body={"attachment": attachment},
            not_found=lambda: exception.VolumeNotFound(volume_id=volume_id),
            retry_busy_multiattach=True,
            applied=lambda: self.find_attachment(ctx, volume_id,
                                                 instance_uuid))
        if isinstance(result, dict):
            return result
        created = result.json()["attachment"]
        if connector:
            # Real Cinder answers a stale status here: read it back.
            return self.attachment_get(ctx, created["id"])
        return created

    def find_attachment(self, ctx, volume_id, instance_uuid):
        """The attachment of this server and volume, if the volume service
        has one (its full view), else None: asked after a create that may
        have been applied without an answer, before sending it again."""
        for found in self.attachment_list(ctx, volume_id=volume_id,
                                          instance_id=instance_uuid):
            if (found.get("volume_id") == volume_id
                    and found.get("instance") == instance_uuid):
                return self.attachment_get(ctx, found["id"])
        return None

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
            ATTACHMENT_MV, body={"os-complete": None}, idempotent=True,
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
