"""volume_client.cinder: error translation, auth headers and keystone mode
construction (no HTTP here; the client is exercised over HTTP in
tests/functional/volume/test_volume_cinder_client.py)."""
import pytest
from keystoneauth1 import loading
from keystoneauth1 import service_token
from keystoneauth1 import token_endpoint
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import context as volattach_context
from volattach import exception
from volattach.volume_client import cinder


class FakeResponse:
    def __init__(self, status_code, body=None, text=""):
        self.status_code = status_code
        self._body = body
        self.text = text
        self.reason = "reason"

    def json(self):
        if self._body is None:
            raise ValueError("no json")
        return self._body


def fault(code, message, name="badRequest"):
    return FakeResponse(code, {name: {"code": code, "message": message}})


@pytest.mark.parametrize("response, exc_type, message", [
    (fault(400, "Invalid volume: Volume x is busy."), exception.InvalidVolume,
     "Invalid volume: Volume x is busy."),
    (fault(400, "Invalid input for field/attribute connector."),
     exception.InvalidInput, "Invalid input for field/attribute connector."),
    (fault(403, "Policy doesn't allow x", "forbidden"), exception.Forbidden,
     "Policy doesn't allow x"),
    (fault(503, "down", "serviceUnavailable"),
     exception.CinderConnectionFailed,
     "Connection to cinder host failed: down"),
    (fault(409, "conflict", "conflictingRequest"), exception.CinderAPIError,
     "Block storage API error (HTTP 409): conflict"),
    (FakeResponse(502, text="Bad gateway"), exception.CinderAPIError,
     "Block storage API error (HTTP 502): Bad gateway"),
    (fault(404, "gone", "itemNotFound"), exception.CinderAPIError,
     "Block storage API error (HTTP 404): gone"),
])
def test_translate_error(response, exc_type, message):
    with pytest.raises(exc_type) as err:
        cinder.translate_error(response)
    assert type(err.value) is exc_type
    assert err.value.format_message() == message


def test_404_uses_the_callers_not_found():
    with pytest.raises(exception.VolumeAttachmentNotFound) as err:
        cinder.translate_error(
            fault(404, "whatever", "itemNotFound"),
            lambda: exception.VolumeAttachmentNotFound(attachment_id="a1"))
    assert err.value.kwargs == {"attachment_id": "a1"}


def make_conf(**cinder_opts):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    volattach_conf.set_embedded_defaults(conf)  # noauth
    conf([], default_config_files=[])
    for key, value in cinder_opts.items():
        conf.set_override(key, value, group="cinder")
    return conf


CTX = volattach_context.RequestContext(
    user_id="u1", project_id="p1", roles=["member", "reader"],
    auth_token="user-token", overwrite=False)


def test_noauth_token():
    assert cinder.VolumeAPI(make_conf())._noauth_token(CTX) == (
        "u1:p1:member,reader")
    api = cinder.VolumeAPI(make_conf(noauth_include_roles=False))
    assert api._noauth_token(CTX) == "u1:p1"
    assert api._url(CTX, "/volumes") == "http://127.0.0.1:8776/v3/p1/volumes"


def test_keystone_mode_forwards_token_and_adds_service_token():
    conf = make_conf(auth_strategy="keystone", auth_type="password")
    # The password plugin registers its options when first loaded; set
    # them as a deployment's [cinder] section would.
    loading.register_auth_conf_options(conf, "cinder")
    conf.register_opts(
        [o._to_oslo_opt() for o in
         loading.get_plugin_loader("password").get_options()], "cinder")
    for key, value in (("auth_url", "http://keystone:5000/v3"),
                       ("username", "nova"), ("password", "secret"),
                       ("project_name", "service"),
                       ("user_domain_name", "Default"),
                       ("project_domain_name", "Default")):
        conf.set_override(key, value, group="cinder")
    api = cinder.VolumeAPI(conf)
    auth = api._keystone_auth(CTX)
    assert isinstance(auth, service_token.ServiceTokenAuthWrapper)
    assert auth.user_auth.get_token(None) == "user-token"
    assert auth.service_auth.auth_url == "http://keystone:5000/v3"


def test_keystone_mode_without_service_auth_forwards_the_token():
    api = cinder.VolumeAPI(make_conf(auth_strategy="keystone"))
    auth = api._keystone_auth(CTX)
    assert isinstance(auth, token_endpoint.Token)
    assert auth.get_token(None) == "user-token"
