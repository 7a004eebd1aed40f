"""Protocol-level garbage against both APIs: bodies that are not JSON,
deep and huge JSON, wrong content types, bad microversion headers, absurd
query strings, and malformed requests over a raw socket.  Never a 5xx,
and nothing stored from a refused request, including the bad inputs
found before (deep nesting, huge device names, absurd volume sizes,
``limit=abc``)."""
import json
import socket
import urllib.parse

import pytest
from hypothesis import given, strategies as st

from tests.fuzz import harness


@pytest.fixture(scope="module")
def state(deployment):
    return harness.State(deployment)


def _attach_path(state):
    return "/servers/%s/os-volume_attachments" % state.server


def _raw(url, data, timeout=10):
    """Send ``data`` on a fresh connection; the status code answered, or
    None when the server closed the connection without one."""
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port),
                                  timeout=timeout) as sock:
        sock.sendall(data)
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        answer = b""
        try:
            while len(answer) < 65536:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    if not answer.startswith(b"HTTP/"):
        return None
    return int(answer.split(b" ", 2)[1])


def _send_bytes(state, service, path, data, content_type, version=None):
    if service == "compute":
        client = state.api
        headers = {"Content-Type": content_type}
        full = client.base_url + path
        version_headers = client._version_headers(version)
    else:
        client = state.volumes
        headers = {"Content-Type": content_type}
        full = client.base_url + client._path(path)
        version_headers = client._version_headers(version)
    headers.update(version_headers)
    headers["X-Auth-Token"] = client.token
    response = client.session.post(full, data=data, headers=headers,
                                   timeout=60)
    return response.status_code, response.text


TARGETS = [("compute", "/servers/{server}/os-volume_attachments", "2.101"),
           ("compute", "/servers", "2.37"),
           ("compute", "/servers/{server}/action", "2.1"),
           ("volume", "/volumes", "3.54"),
           ("volume", "/attachments", "3.54")]


def _check(state, tally, what, before, status, text):
    tally.record(what, status, text)
    if status is not None and 400 <= status < 500:
        assert state.fingerprint() == before, what


@pytest.mark.timeout(300)
def test_bytes_that_are_not_json(state):
    tally = harness.Tally("not json")

    @harness.fuzz_settings(harness.EXAMPLES * 3)
    @given(data=st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        st.sampled_from([b"{", b"[", b'{"volumeAttachment": ', b"null",
                         b"\xff\xfe", b'{"a": NaN}', b'{"a": 1e99999}',
                         b'{"a": "\\ud800"}', b"{}" * 1000])),
           target=st.sampled_from(TARGETS),
           content_type=st.sampled_from([
               "application/json", "text/plain", "application/xml",
               "application/json; charset=latin-1", "", "*/*",
               "multipart/form-data; boundary=x"]))
    def one(data, target, content_type):
        service, template, version = target
        path = template.format(server=state.server)
        before = state.fingerprint()
        status, text = _send_bytes(state, service, path, data, content_type,
                                   version)
        _check(state, tally, (service, path, data[:80], content_type),
               before, status, text)
        if status < 400:
            state.restore()

    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]


@pytest.mark.timeout(300)
def test_bad_microversion_headers(state):
    tally = harness.Tally("microversion headers")
    body = json.dumps({"volumeAttachment": {"volumeId": state.free}})

    @harness.fuzz_settings(harness.EXAMPLES * 3)
    @given(value=st.one_of(
        st.text(max_size=40),
        st.sampled_from(["compute 2.999", "compute 3.0", "compute 2.",
                         "compute latest", "volume 3.54", "compute -1.5",
                         "compute 2.1000000000000000000000", "compute",
                         "compute 2.1, compute 2.101", "COMPUTE 2.101",
                         "compute 0x2.0x65", "compute 2.101 extra"])),
           service=st.sampled_from(["compute", "volume"]))
    def one(value, service):
        if service == "compute":
            client, path = state.api, _attach_path(state)
            url = client.base_url + path
        else:
            client = state.volumes
            url = client.base_url + client._path("/attachments")
            value = value.replace("compute", "volume")
        headers = {"X-Auth-Token": client.token,
                   "Content-Type": "application/json",
                   "OpenStack-API-Version": value,
                   "X-OpenStack-Nova-API-Version": value.split(" ")[-1]}
        before = state.fingerprint()
        try:
            response = client.session.post(url, data=body.encode(),
                                           headers=headers, timeout=60)
        except ValueError:
            return      # requests refuses to send this header value
        _check(state, tally, (service, value), before, response.status_code,
               response.text)
        if response.status_code < 400:
            state.restore()

    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]


QUERY_PATHS = [("compute", "/servers"), ("compute", "/servers/detail"),
               ("compute", "/servers/{server}/os-volume_attachments"),
               ("compute", "/servers/{server}/os-instance-actions"),
               ("compute", "/flavors"), ("compute", "/os-services"),
               ("volume", "/volumes"), ("volume", "/volumes/detail"),
               ("volume", "/attachments")]


@pytest.mark.timeout(300)
def test_absurd_query_strings(state):
    tally = harness.Tally("query strings")
    keys = st.sampled_from(["limit", "marker", "offset", "sort", "sort_key",
                            "sort_dir", "name", "status", "metadata",
                            "changes-since", "all_tenants", "deleted",
                            "flavor", "ip", "host", "_internal", "x" * 300])
    values = st.one_of(st.text(max_size=30), st.sampled_from([
        "abc", "-1", "99999999999999999999", "2**63", "", "[", "%00",
        "1e9", "null", "desc,asc", "x" * 5000, "((((", "*", "\\"]))

    @harness.fuzz_settings(harness.EXAMPLES * 4)
    @given(target=st.sampled_from(QUERY_PATHS),
           params=st.lists(st.tuples(keys, values), max_size=4),
           version=st.sampled_from([None, "2.1", "2.75", "2.102", "3.54"]))
    def one(target, params, version):
        service, template = target
        path = template.format(server=state.server)
        client = state.admin if service == "compute" else state.volumes
        if service == "volume":
            path = client._path(path)
            version = version if version and version.startswith("3") else None
        elif version and version.startswith("3"):
            version = None
        status, body, _ = client.request("GET", path, params=params,
                                         microversion=version)
        tally.record((service, path, params, version), status, body)

    one()
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]


RAW_REQUESTS = [
    b"GARBAGE\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"POST /v2.1/servers HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"POST /v2.1/servers HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n"
    b"X-Auth-Token: alice:demo\r\nContent-Type: application/json\r\n\r\n{}",
    b"POST /v2.1/servers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    b"X-Auth-Token: alice:demo\r\nContent-Type: application/json\r\n\r\n"
    b"zz\r\n{}\r\n0\r\n\r\n",
    b"POST /v2.1/servers HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
    b"Content-Length: 7\r\nX-Auth-Token: alice:demo\r\n\r\n{}",
    b"GET /v2.1/servers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: \x00\xff\r\n\r\n",
    b"GET /v2.1/servers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: a:b\r\n"
    + b"X-Long: " + b"a" * 100000 + b"\r\n\r\n",
    b"GET /" + b"a/" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v2.1/servers/%ZZ HTTP/1.1\r\nHost: x\r\nX-Auth-Token: a:b\r\n\r\n",
    b"GET /v2.1/servers/..%2F..%2Fetc HTTP/1.1\r\nHost: x\r\n"
    b"X-Auth-Token: a:b\r\n\r\n",
    b"DELETE /v2.1/servers/\xff\xfe HTTP/1.1\r\nHost: x\r\n"
    b"X-Auth-Token: alice:demo\r\n\r\n",
    b"GET /v3/demo/volumes?limit=%FF%FE HTTP/1.1\r\nHost: x\r\n"
    b"X-Auth-Token: alice:demo\r\n\r\n",
    b"PATCH /v3/demo/volumes HTTP/1.1\r\nHost: x\r\nX-Auth-Token: a:b\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40,
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("service", ["compute", "volume"])
def test_raw_socket_malformed_requests(deployment, state, service):
    url = deployment.api_url if service == "compute" else deployment.volume_url
    tally = harness.Tally("raw socket %s" % service)
    for data in RAW_REQUESTS:
        before = state.fingerprint()
        status = _raw(url, data)
        if status == 505 and b"HTTP/9.9" in data:
            status = 400    # HTTP Version Not Supported: the right answer
        _check(state, tally, data[:80], before, status, None)
    # still serving
    code, body, _ = state.admin.show_server(state.server)
    assert code == 200, body
    print(tally.line())
    assert not tally.server_errors, tally.server_errors[:5]


def _nested(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("service", ["compute", "volume"])
def test_deep_nesting_is_refused_without_500(state, service):
    target = ("/servers/{server}/os-volume_attachments" if service ==
              "compute" else "/volumes").format(server=state.server)
    data = '{"volumeAttachment": %s}' % _nested(100000)
    before = state.fingerprint()
    status, text = _send_bytes(state, service, target, data.encode(),
                               "application/json",
                               "2.101" if service == "compute" else "3.54")
    assert status < 500, text[:300]
    assert "RecursionError" not in text
    assert state.fingerprint() == before


@pytest.mark.parametrize("depth", [10, 100, 1000])
@pytest.mark.parametrize("service", ["compute", "volume"])
def test_moderate_nesting_is_refused(state, service, depth):
    target = ("/servers/{server}/os-volume_attachments" if service ==
              "compute" else "/volumes").format(server=state.server)
    data = '{"volumeAttachment": %s}' % _nested(depth)
    before = state.fingerprint()
    status, text = _send_bytes(state, service, target, data.encode(),
                               "application/json",
                               "2.101" if service == "compute" else "3.54")
    assert 400 <= status < 500, text[:300]
    assert state.fingerprint() == before


@pytest.mark.parametrize("length, expected", [
    (100 * 1024, 400),          # under the body cap: the schema's maxLength
    (3 * 1024 * 1024, 413),     # over [oslo_middleware] max_request_body_size
])
def test_huge_device_name_is_refused(state, length, expected):
    before = state.fingerprint()
    status, body, _ = state.api.attach_volume(
        state.server, state.free, microversion="2.1",
        device="/dev/vd" + "b" * length)
    try:
        assert status == expected, str(body)[:300]
        assert state.fingerprint() == before
    finally:
        if status < 400:
            state.restore()


def test_volume_list_limit_abc_is_400(state):
    status, body, _ = state.volumes.list_volumes(limit="abc")
    assert status == 400, body


@pytest.mark.parametrize("size", [2 ** 63, "99999999999999999999", 2 ** 31])
def test_volume_size_overflow_is_400(state, size):
    before = state.fingerprint()
    status, body, _ = state.volumes.create_volume(size=size)
    try:
        assert status == 400, body
        assert state.fingerprint() == before
    finally:
        if status < 400:
            state.restore()
