"""Microversion list, Version, negotiation and the version headers."""
import os
import re

import pytest

from volattach.api import microversions
from volattach.api.microversions import Version
from volattach.wsgi import microversion as shared_microversion
from tests.unit.api.conftest import USER

HISTORY = os.path.join(os.path.dirname(microversions.__file__),
                       "rest_api_version_history.rst")


# -- the list and its history file --------------------------------------------------

def test_versions_are_contiguous_from_2_1_to_the_max():
    numbers = [v for v, _note in microversions.VERSIONS]
    assert numbers[0] == "2.1"
    assert numbers == ["2.%d" % minor for minor in range(1, len(numbers) + 1)]
    assert str(microversions.MAX_VERSION) == numbers[-1] == "2.105"
    assert all(note.strip() for _v, note in microversions.VERSIONS)


def test_history_file_has_one_section_per_version_in_order():
    with open(HISTORY) as f:
        text = f.read()
    sections = re.findall(r"^(2\.\d+)\n-+\n", text, re.MULTILINE)
    assert sections == [v for v, _note in microversions.VERSIONS]


def test_volume_relevant_notes_say_what_changed():
    notes = dict(microversions.VERSIONS)
    assert "202" in notes["2.101"]
    assert "attachment_id" in notes["2.89"]
    assert "delete_on_termination" in notes["2.79"]
    assert "no change that this API serves" in notes["2.103"]


# -- Version ------------------------------------------------------------------------

def test_version_compares_numerically_with_versions_and_strings():
    assert Version.parse("2.10") > Version.parse("2.9")
    assert Version.parse("2.60") == "2.60"
    assert Version.parse("2.60") >= "2.60"
    assert Version.parse("2.59") < "2.60"
    assert sorted([Version.parse("2.100"), Version.parse("2.2")]) == \
        [Version.parse("2.2"), Version.parse("2.100")]


def test_matches_is_an_inclusive_range():
    v = Version.parse("2.60")
    assert v.matches("2.60")
    assert not v.matches("2.61")
    assert v.matches("2.1", "2.60")
    assert not v.matches("2.1", "2.59")


@pytest.mark.parametrize("text", ["2", "2.", "02.1", "2.01", "v2.1", "2.1.1",
                                  "", "latest2"])
def test_parse_rejects_malformed_versions(text):
    with pytest.raises(microversions.InvalidMicroversion):
        Version.parse(text)


# -- negotiation over HTTP ----------------------------------------------------------

def _versions(result):
    return (result.headers.get("openstack-api-version"),
            result.headers.get("x-openstack-nova-api-version"))


def test_no_header_is_2_1(api):
    result = api.get("/v2.1/flavors")
    assert result.status_code == 200
    assert _versions(result) == ("compute 2.1", "2.1")
    assert result.headers["vary"] == \
        "OpenStack-API-Version, X-OpenStack-Nova-API-Version"


def test_legacy_header_is_echoed_exactly(api):
    result = api.get("/v2.1/flavors", version="2.60")
    assert _versions(result) == ("compute 2.60", "2.60")


def test_standard_header_wins_over_legacy(api):
    result = api.get("/v2.1/flavors", headers={
        "OpenStack-API-Version": "compute 2.79",
        "X-OpenStack-Nova-API-Version": "2.10"})
    assert _versions(result) == ("compute 2.79", "2.79")


def test_standard_header_for_another_service_is_ignored(api):
    result = api.get("/v2.1/flavors", headers={
        "OpenStack-API-Version": "volume 3.70",
        "X-OpenStack-Nova-API-Version": "2.10"})
    assert _versions(result) == ("compute 2.10", "2.10")


def test_latest_is_the_maximum(api):
    result = api.get("/v2.1/flavors", version="latest", legacy=False)
    assert _versions(result) == ("compute 2.105", "2.105")


def test_malformed_version_is_400(api):
    result = api.get("/v2.1/flavors", version="2.x")
    assert result.status_code == 400
    assert result.json == {"badRequest": {
        "code": 400,
        "message": "API Version String 2.x is of invalid format. Must be of "
                   "format MajorNum.MinorNum."}}


@pytest.mark.parametrize("version", ["2.106", "3.0", "2.0"])
def test_out_of_range_is_406_with_nova_message(api, version):
    result = api.get("/v2.1/flavors", version=version)
    assert result.status_code == 406
    assert result.json == {"computeFault": {
        "code": 406,
        "message": "Version %s is not supported by the API. Minimum is 2.1 "
                   "and maximum is 2.105." % version}}
    assert result.headers["content-type"] == "application/json"


def test_error_responses_carry_the_version_headers(api, facade):
    result = api.get("/v2.1/servers/%s" % ("0" * 32), version="2.60")
    assert result.status_code == 404
    assert _versions(result) == ("compute 2.60", "2.60")
    assert "Vary" in result.headers
    result = api.get("/v2.1/no-such-thing", version="2.89")
    assert result.status_code == 404
    assert _versions(result) == ("compute 2.89", "2.89")


def test_handlers_see_the_negotiated_version(api, facade):
    instance = facade.add_instance()
    facade.add_bdm(instance)
    old = api.get("/v2.1/servers/%s/os-volume_attachments" % instance.uuid,
                  version="2.88").json["volumeAttachments"][0]
    new = api.get("/v2.1/servers/%s/os-volume_attachments" % instance.uuid,
                  version="2.89").json["volumeAttachments"][0]
    assert "id" in old and "attachment_id" not in old
    assert "id" not in new and "attachment_id" in new


def test_root_document_is_not_versioned(api):
    result = api.get("/", token=None, version="2.60")
    assert result.status_code == 200
    assert _versions(result) == (None, None)


def test_v21_document_is_versioned_and_public(api):
    for path in ("/v2.1", "/v2.1/"):
        result = api.get(path, token=None, version="2.50")
        assert result.status_code == 200, path
        assert _versions(result) == ("compute 2.50", "2.50")
        assert result.json["version"]["version"] == "2.105"


def test_negotiate_accepts_plain_headers_too():
    assert microversions.negotiate({}) == "2.1"
    assert microversions.negotiate(
        {"X-OpenStack-Nova-API-Version": "2.33"}) == "2.33"
    assert microversions.negotiate(
        {"OpenStack-API-Version": "compute latest"}) == \
        microversions.MAX_VERSION


def test_unauthenticated_request_is_refused_before_versioning(api):
    result = api.get("/v2.1/flavors", token=None, version="2.60")
    assert result.status_code == 401
    assert _versions(result) == (None, None)


def test_user_token_fixture_is_valid(api):
    assert api.get("/v2.1/flavors", token=USER).status_code == 200


def test_negotiate_reads_the_two_version_headers_of_a_wsgi_environ():
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v2.1/servers",
               "HTTP_X_AUTH_TOKEN": "a:b", "HTTP_ACCEPT": "application/json"}
    assert microversions.negotiate(environ) == "2.1"
    environ["HTTP_X_OPENSTACK_NOVA_API_VERSION"] = "2.33"
    assert microversions.negotiate(environ) == "2.33"
    # the standard header wins, and may name several services
    environ["HTTP_OPENSTACK_API_VERSION"] = "volume 3.50, compute 2.79"
    assert microversions.negotiate(environ) == "2.79"
    environ["HTTP_OPENSTACK_API_VERSION"] = "volume 3.50"
    assert microversions.negotiate(environ) == "2.33"
    environ["HTTP_X_OPENSTACK_NOVA_API_VERSION"] = "2.x"
    with pytest.raises(microversions.InvalidMicroversion):
        microversions.negotiate(environ)


def test_version_comparisons_with_strings_parse_each_string_once():
    version = microversions.Version(2, 90)
    assert version.matches("2.89") and not version.matches("2.91")
    assert microversions._PARSED["2.89"] == microversions.Version(2, 89)
    with pytest.raises(microversions.InvalidMicroversion):
        version.matches("2.x")
    assert "2.x" not in microversions._PARSED
    assert len(microversions._PARSED) <= microversions._PARSED_MAX


def _environ(**headers):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v2.1/flavors"}
    environ.update(headers)
    return environ


def test_negotiate_environ_remembers_accepted_header_values(monkeypatch):
    monkeypatch.setattr(microversions.NEGOTIATOR, "_cache", {})
    environ = _environ(HTTP_OPENSTACK_API_VERSION="compute 2.77")
    assert microversions.negotiate(environ) == "2.77"
    assert list(microversions.NEGOTIATOR._cache.values()) == ["2.77"]
    # the remembered answer depends on both headers
    assert microversions.negotiate(_environ(
        HTTP_OPENSTACK_API_VERSION="compute 2.77",
        HTTP_X_OPENSTACK_NOVA_API_VERSION="2.3")) == "2.77"
    assert microversions.negotiate(_environ(
        HTTP_X_OPENSTACK_NOVA_API_VERSION="2.3")) == "2.3"
    assert microversions.negotiate(_environ()) == "2.1"
    assert microversions.negotiate(environ) == "2.77"
    assert len(microversions.NEGOTIATOR._cache) == 4


def test_negotiate_environ_refuses_bad_versions_every_time(monkeypatch):
    monkeypatch.setattr(microversions.NEGOTIATOR, "_cache", {})
    for _ in range(2):
        with pytest.raises(microversions.MicroversionNotAcceptable):
            microversions.negotiate(
                _environ(HTTP_OPENSTACK_API_VERSION="compute 9.0"))
        with pytest.raises(microversions.InvalidMicroversion):
            microversions.negotiate(
                _environ(HTTP_OPENSTACK_API_VERSION="compute 2.x"))
    assert microversions.NEGOTIATOR._cache == {}


def test_negotiate_environ_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(microversions.NEGOTIATOR, "_cache", {})
    monkeypatch.setattr(shared_microversion, "_CACHE_MAX", 2)
    for minor in (10, 11, 12, 13):
        assert microversions.negotiate(_environ(
            HTTP_X_OPENSTACK_NOVA_API_VERSION="2.%d" % minor)) == "2.%d" % minor
    assert len(microversions.NEGOTIATOR._cache) == 2
