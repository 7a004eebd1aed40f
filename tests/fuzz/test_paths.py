"""Hostile ids in the URL and hostile values in query strings (NUL and
other control characters, percent-encoded lone surrogates and bytes that
are not UTF-8, strings longer than any column, integers beyond a column),
against every route with an id and the lists of both APIs: never a 5xx;
an id holding a NUL is the 404 of its resource, a NUL in a query string
a 400, and nothing is stored."""
import urllib.parse

import pytest
from hypothesis import given, strategies as st

from tests.fuzz import harness

# (service, method, template, body): {id} is the hostile id; {server} and
# {free} the fixture objects
ID_ROUTES = [
    ("compute", "GET", "/servers/{id}", None),
    ("compute", "POST", "/servers/{id}/action", {"pause": None}),
    ("compute", "POST", "/servers/{id}/os-volume_attachments",
     {"volumeAttachment": {"volumeId": "{free}"}}),
    ("compute", "GET", "/servers/{id}/os-volume_attachments", None),
    ("compute", "GET", "/servers/{server}/os-volume_attachments/{id}", None),
    ("compute", "DELETE", "/servers/{server}/os-volume_attachments/{id}",
     None),
    ("compute", "GET", "/servers/{id}/ips", None),
    ("compute", "GET", "/servers/{server}/ips/{id}", None),
    ("compute", "GET", "/servers/{server}/os-instance-actions/{id}", None),
    ("compute", "GET", "/servers/{server}/migrations/{id}", None),
    ("compute", "GET", "/flavors/{id}", None),
    ("compute", "GET", "/os-keypairs/{id}", None),
    ("compute", "GET", "/os-volumes/{id}", None),
    ("compute", "GET", "/os-server-groups/{id}", None),
    ("compute", "DELETE", "/os-server-groups/{id}", None),
    ("compute", "GET", "/os-aggregates/{id}", None),
    ("compute", "PUT", "/os-aggregates/{id}", {"aggregate": {"name": "a"}}),
    ("compute", "POST", "/os-aggregates/{id}/action",
     {"add_host": {"host": "compute1"}}),
    ("compute", "PUT", "/os-services/{id}", {"status": "enabled"}),
    ("compute", "DELETE", "/os-services/{id}", None),
    ("compute", "GET", "/os-simple-tenant-usage/{id}", None),
    ("compute", "GET", "/servers/{id}/metadata", None),
    ("compute", "POST", "/servers/{id}/metadata", {"metadata": {"a": "b"}}),
    ("compute", "GET", "/servers/{server}/metadata/{id}", None),
    ("compute", "PUT", "/servers/{server}/metadata/{id}",
     {"meta": {"a": "b"}}),
    ("compute", "DELETE", "/servers/{server}/metadata/{id}", None),
    ("compute", "GET", "/servers/{id}/tags", None),
    ("compute", "GET", "/servers/{server}/tags/{id}", None),
    ("compute", "PUT", "/servers/{server}/tags/{id}", None),
    ("compute", "DELETE", "/servers/{server}/tags/{id}", None),
    ("compute", "GET", "/os-quota-sets/{id}", None),
    ("compute", "GET", "/os-quota-sets/{id}/detail", None),
    ("compute", "PUT", "/os-quota-sets/{id}",
     {"quota_set": {"instances": 10}}),
    ("volume", "GET", "/volumes/{id}", None),
    ("volume", "PUT", "/volumes/{id}", {"volume": {"name": "x"}}),
    ("volume", "POST", "/volumes/{id}/action", {"os-reserve": None}),
    ("volume", "GET", "/attachments/{id}", None),
    ("volume", "DELETE", "/attachments/{id}", None),
    ("volume", "GET", "/types/{id}", None),
    ("volume", "GET", "/types/{id}/extra_specs", None),
]

ids = st.one_of(
    harness.hostile_text.filter(lambda s: s not in ("", ".", "..")),
    harness.boundary_integers.map(str),
    st.uuids().map(lambda u: str(u) + "\x00"),
    st.sampled_from(["%", "%25", "_", "*", "..%2F..", "00000000-0000-4000-"
                     "8000-000000000000\x00"]))


def _quote(text):
    """``text`` percent-encoded as UTF-8, lone surrogates as the bytes
    Python would give them (the server sees bytes that are not UTF-8)."""
    return urllib.parse.quote(text.encode("utf-8", "surrogatepass"),
                              safe="")


@pytest.fixture(scope="module")
def state(deployment):
    return harness.State(deployment)


def _client(state, service):
    return state.admin if service == "compute" else state.volumes


def _send(state, service, method, path, body=None, query=None,
          version=None):
    client = _client(state, service)
    url = client.base_url + (client._path(path) if service == "volume"
                             else path)
    if query is not None:
        url += "?" + query
    headers = {"X-Auth-Token": client.token, "Accept": "application/json"}
    headers.update(client._version_headers(version))
    response = client.session.request(method, url, json=body,
                                      headers=headers, timeout=60)
    return response.status_code, response.text


def _fill(value, state):
    if isinstance(value, dict):
        return {k: _fill(v, state) for k, v in value.items()}
    if isinstance(value, str):
        return value.format(free=state.free, server=state.server)
    return value


@pytest.mark.timeout(600)
def test_hostile_ids_in_the_url(state):
    tally = harness.Tally("path ids")
    refused_changed = []

    @harness.fuzz_settings(harness.EXAMPLES * 6)
    @given(route=st.sampled_from(ID_ROUTES), value=ids)
    def one(route, value):
        service, method, template, body = route
        path = template.format(id=_quote(value), server=state.server)
        before = state.fingerprint()
        status, text = _send(state, service, method, path,
                             _fill(body, state),
                             version="2.89" if service == "compute"
                             else "3.54")
        tally.record((service, method, path[:120]), status, text)
        if "\x00" in value and status < 500:
            assert status == 404, (method, path, status, text)
        if 400 <= status < 500 and state.fingerprint() != before:
            refused_changed.append((method, path, status))
        elif status < 400:
            state.restore()

    for route in ID_ROUTES:         # each route with a NUL, at least
        one.hypothesis.inner_test(route, state.free + "\x00")
    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]
    assert not refused_changed, refused_changed[:3]


LISTS = [("compute", "/servers"), ("compute", "/servers/detail"),
         ("compute", "/servers/{server}/os-volume_attachments"),
         ("compute", "/servers/{server}/os-instance-actions"),
         ("compute", "/flavors/detail"), ("compute", "/os-keypairs"),
         ("compute", "/os-migrations"), ("compute", "/os-services"),
         ("compute", "/os-server-groups"), ("compute", "/os-aggregates"),
         ("compute", "/os-availability-zone"),
         ("compute", "/os-availability-zone/detail"),
         ("compute", "/os-simple-tenant-usage"),
         ("compute", "/os-simple-tenant-usage/demo"),
         ("compute", "/limits"), ("compute", "/os-quota-sets/{server}"),
         ("volume", "/volumes/detail"), ("volume", "/attachments"),
         ("volume", "/types")]
QUERY_KEYS = ["name", "marker", "limit", "sort", "sort_key", "sort_dir",
              "status", "host", "binary", "flavor", "image", "minDisk",
              "minRam", "changes-since", "metadata", "reservation_id",
              "instance_uuid", "migration_type", "all_tenants", "offset",
              "start", "end", "all_projects",
              "tags", "tags-any", "not-tags", "not-tags-any", "locked",
              "tenant_id", "user_id"]


@pytest.mark.timeout(600)
def test_hostile_query_values(state):
    tally = harness.Tally("query values")

    @harness.fuzz_settings(harness.EXAMPLES * 6)
    @given(target=st.sampled_from(LISTS),
           params=st.lists(st.tuples(st.sampled_from(QUERY_KEYS),
                                     st.one_of(harness.hostile_text,
                                               harness.boundary_integers
                                               .map(str))),
                           min_size=1, max_size=3))
    def one(target, params):
        service, template = target
        query = "&".join("%s=%s" % (_quote(k), _quote(v)) for k, v in params)
        status, text = _send(state, service, "GET",
                             template.format(server=state.server),
                             query=query,
                             version="2.80" if service == "compute"
                             else "3.54")
        tally.record((service, template, params), status, text)
        if any("\x00" in v for _, v in params) and status < 500:
            assert status == 400, (template, params, status, text)

    for target in LISTS:            # each list with a NUL, at least
        one.hypothesis.inner_test(target, [("name", "a\x00"),
                                           ("marker", "\x00")])
    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]


# (service, method, path, body, version): every "{value}" is replaced by
# the hostile string; "{server}" and "{free}" by the fixture objects
BODY_FIELDS = [
    ("volume", "POST", "/volumes", {"volume": {"size": 1,
                                               "name": "{value}"}}, "3.54"),
    ("volume", "POST", "/volumes", {"volume": {
        "size": 1, "description": "{value}"}}, "3.54"),
    ("volume", "POST", "/volumes", {"volume": {
        "size": 1, "metadata": {"{value}": "v"}}}, "3.54"),
    ("volume", "PUT", "/volumes/{free}", {"volume": {"name": "{value}"}},
     "3.54"),
    ("volume", "POST", "/attachments", {"attachment": {
        "volume_uuid": "{free}", "instance_uuid": "{server}",
        "connector": {"host": "{value}"}}}, "3.54"),
    ("compute", "PUT", "/servers/{server}", {"server": {"name": "{value}"}},
     "2.19"),
    ("compute", "POST", "/os-keypairs", {"keypair": {"name": "{value}"}},
     "2.1"),
    ("compute", "POST", "/servers/{server}/os-volume_attachments",
     {"volumeAttachment": {"volumeId": "{free}", "tag": "{value}"}},
     "2.49"),
    ("compute", "POST", "/servers/{server}/action",
     {"lock": {"locked_reason": "{value}"}}, "2.73"),
    ("compute", "POST", "/os-server-groups", {"server_group": {
        "name": "{value}", "policy": "anti-affinity"}}, "2.64"),
    ("compute", "POST", "/os-aggregates", {"aggregate": {
        "name": "fuzz", "availability_zone": "{value}"}}, "2.41"),
    ("compute", "POST", "/servers/{server}/metadata",
     {"metadata": {"{value}": "v"}}, "2.1"),
    ("compute", "POST", "/servers/{server}/metadata",
     {"metadata": {"k": "{value}"}}, "2.1"),
    ("compute", "PUT", "/servers/{server}/tags", {"tags": ["{value}"]},
     "2.26"),
    ("compute", "PUT", "/os-quota-sets/{server}",
     {"quota_set": {"cores": "{value}"}}, "2.57"),
]


def _put(value, state, hostile):
    if isinstance(value, dict):
        return {_put(k, state, hostile): _put(v, state, hostile)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_put(v, state, hostile) for v in value]
    if value == "{value}":
        return hostile
    if isinstance(value, str):
        return value.format(free=state.free, server=state.server)
    return value


@pytest.mark.timeout(600)
def test_hostile_strings_in_bodies(state):
    tally = harness.Tally("body strings")
    refused_changed = []

    @harness.fuzz_settings(harness.EXAMPLES * 3)
    @given(field=st.sampled_from(BODY_FIELDS), hostile=harness.hostile_text)
    def one(field, hostile):
        service, method, path, body, version = field
        body = _put(body, state, hostile)
        path = path.format(free=state.free, server=state.server)
        before = state.fingerprint()
        status, text = _send(state, service, method, path, body,
                             version=version)
        tally.record((service, method, path, repr(hostile)[:60]), status,
                     text)
        if status < 500 and harness.unstorable(hostile):
            assert status == 400, (method, path, hostile, status, text)
        if 400 <= status < 500 and state.fingerprint() != before:
            refused_changed.append((method, path, status))
        elif status < 400:
            state.restore()

    for field in BODY_FIELDS:       # each field with a NUL, at least
        one.hypothesis.inner_test(field, "a\x00b")
    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]
    assert not refused_changed, refused_changed[:3]
