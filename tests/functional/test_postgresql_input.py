"""Input that PostgreSQL treats differently from SQLite, on the all-in-one
deployment pointed at PostgreSQL (both databases, fresh for this module):
NUL characters (PostgreSQL refuses them in any text parameter), lone
surrogates, over-long strings and out-of-range numbers get Nova's or
Cinder's 4xx, never a 500, and leave nothing behind.  The first two tests
are the 500s of issue 25."""
import contextlib
import json
import urllib.parse
import uuid

import sqlalchemy as sa

import pytest

from tests import utils
from tests.integration import client as clients

MISSING = "00000000-0000-4000-8000-000000000000"


@contextlib.contextmanager
def _icu_database(base_url):
    """A fresh database next to ``base_url`` that sorts text as a
    production cluster in an English locale does (ICU ``en-US``: ``a`` <
    ``b`` < ``B``), not by code points as the test cluster's C locale."""
    name = "va_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(sa.make_url(base_url).set(
        database="postgres").render_as_string(hide_password=False),
        isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(
            "CREATE DATABASE \"%s\" TEMPLATE template0 LOCALE_PROVIDER icu "
            "ICU_LOCALE 'en-US' LOCALE 'C'" % name))
    try:
        yield sa.make_url(base_url).set(database=name).render_as_string(
            hide_password=False)
    finally:
        from volattach.db import engine as db_engine
        db_engine.dispose_all()
        with admin.connect() as conn:
            conn.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})
            conn.execute(sa.text('DROP DATABASE IF EXISTS "%s"' % name))
        admin.dispose()


@pytest.fixture(scope="module")
def pg_databases(request):
    """Fresh compute and volume databases on PostgreSQL
    (``VOLATTACH_TEST_PG_URL``, an English collation), the module's
    ``CONF_OVERRIDES``."""
    base = utils.require_env(utils.PG_URL_ENV, "the PostgreSQL input tests")
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(_icu_database(base)) for _ in range(2)]
        request.module.CONF_OVERRIDES = {("database", "connection"): urls[0],
                                         ("volume", "connection"): urls[1]}
        yield urls


@pytest.fixture(scope="module")
def deployment(pg_databases, deployment):
    """The functional tier's deployment on those databases."""
    from volattach.conf import CONF
    assert CONF.database.connection == pg_databases[0]
    assert CONF.volume.connection == pg_databases[1]
    return deployment


@pytest.fixture(scope="module")
def server(deployment):
    from tests.integration import client as clients
    api = clients.ComputeClient(deployment.api_url, "alice:demo")
    status, body, _ = api.create_server(name="pg-input", microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    return server_id


def _raw(client, method, path, body=None, query=None, microversion=None,
         volume=False):
    """``path`` sent as written (percent escapes kept); a dict or a JSON
    text as the body."""
    headers = {"X-Auth-Token": client.token, "Accept": "application/json"}
    headers.update(client._version_headers(microversion))
    if body is not None:
        headers["Content-Type"] = "application/json"
        if not isinstance(body, str):
            body = json.dumps(body)
    url = client.base_url + (client._path(path) if volume else path)
    if query:
        url += "?" + query
    response = client.session.request(method, url, data=body,
                                      headers=headers, timeout=60)
    try:
        answer = response.json()
    except ValueError:
        answer = response.text
    return response.status_code, answer


def test_nul_in_the_server_id_of_an_attach_is_404(api, server, volumes):
    status, body, _ = volumes.create_volume(size=1, name="pg-free")
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available")
    for server_id in (server[:8] + "%00", server + "%00", "%00"):
        status, answer = _raw(
            api, "POST", "/servers/%s/os-volume_attachments" % server_id,
            {"volumeAttachment": {"volumeId": volume_id}})
        assert status == 404, (server_id, answer)
        assert "could not be found" in answer["itemNotFound"]["message"]
    # nothing reserved: the volume is still available, the server bare
    assert volumes.show_volume(volume_id)[1]["volume"]["status"] == \
        "available"
    assert api.list_volume_attachments(server)[1]["volumeAttachments"] == []


def test_nul_in_a_volume_name_is_400(volumes):
    before = volumes.list_volumes()[1]["volumes"]
    for field in ("name", "description"):
        status, answer = _raw(volumes, "POST", "/volumes",
                              {"volume": {"size": 1, field: "a\x00b"}},
                              volume=True)
        assert status == 400, answer
        assert "Invalid input for field/attribute %s" % field in \
            answer["badRequest"]["message"]
    assert volumes.list_volumes()[1]["volumes"] == before


@pytest.mark.parametrize("path", [
    "/servers/%00", "/servers/{server}%00/action", "/servers/%00/ips",
    "/servers/{server}/os-volume_attachments/%00",
    "/servers/{server}/os-instance-actions/%00",
    "/servers/{server}/migrations/%00", "/flavors/%00",
    "/os-keypairs/%00", "/os-volumes/%00"])
def test_nul_in_a_compute_path_id_is_404(api, server, path):
    method = "POST" if path.endswith("action") else "GET"
    body = {"pause": None} if method == "POST" else None
    status, answer = _raw(api, method, path.format(server=server), body,
                          microversion="2.89")
    assert status == 404, answer
    assert "itemNotFound" in answer


@pytest.mark.parametrize("path", [
    "/volumes/%00", "/volumes/%00/action", "/attachments/%00",
    "/types/%00", "/types/%00/extra_specs"])
def test_nul_in_a_volume_path_id_is_404(volumes, path):
    method = "POST" if path.endswith("action") else "GET"
    body = {"os-reserve": None} if method == "POST" else None
    status, answer = _raw(volumes, method, path, body, volume=True,
                          microversion="3.54")
    assert status == 404, answer
    assert "itemNotFound" in answer


@pytest.mark.parametrize("path,query", [
    ("/servers", "name=%00"), ("/servers/detail", "marker=%00"),
    ("/servers", "image=a%00"), ("/servers/detail", "host=%00"),
    ("/flavors", "marker=%00"), ("/os-keypairs", "marker=%00"),
    ("/os-migrations", "host=%00"), ("/os-services", "binary=%00"),
    ("/servers/{server}/os-instance-actions", "marker=%00"),
    ("/servers", "sort_key=%00")])
def test_nul_in_a_compute_query_is_400(admin_api, server, path, query):
    status, answer = _raw(admin_api, "GET", path.format(server=server),
                          query=query, microversion="2.80")
    assert status == 400, answer
    assert "Invalid input for query parameters" in \
        answer["badRequest"]["message"]


@pytest.mark.parametrize("query", [
    "name=%00", "marker=%00", "sort=name%00:asc", "status=%00",
    "metadata=%7B%27a%00%27%3A%27b%27%7D"])
def test_nul_in_a_volume_query_is_400(volumes_admin, query):
    for path in ("/volumes", "/volumes/detail", "/attachments"):
        status, answer = _raw(volumes_admin, "GET", path, query=query,
                              volume=True, microversion="3.54")
        assert status == 400, (path, answer)
        assert "badRequest" in answer


def test_a_lone_surrogate_in_a_body_is_400(api, server, volumes):
    before = volumes.list_volumes()[1]["volumes"]
    status, answer = _raw(volumes, "POST", "/volumes",
                          '{"volume": {"size": 1, "name": "a\\ud800"}}',
                          volume=True)
    assert status == 400, answer
    assert volumes.list_volumes()[1]["volumes"] == before
    status, answer = _raw(api, "PUT", "/servers/%s" % server,
                          '{"server": {"name": "a\\udfff"}}')
    assert status == 400, answer
    assert api.show_server(server)[1]["server"]["name"] == "pg-input"


def test_nul_in_a_compute_body_is_400(api, server):
    for path, body in (
            ("/servers/%s" % server, {"server": {"name": "a\x00b"}}),
            ("/os-keypairs", {"keypair": {"name": "k\x00"}}),
            ("/servers/%s/action" % server,
             {"createBackup": {"name": "b\x00", "backup_type": "daily",
                               "rotation": 1}}),
            ("/servers/%s/os-volume_attachments" % server,
             {"volumeAttachment": {"volumeId": MISSING, "tag": "t\x00"}})):
        method = "PUT" if path == "/servers/%s" % server else "POST"
        status, answer = _raw(api, method, path, body, microversion="2.89")
        assert status == 400, (path, answer)
    assert api.show_server(server)[1]["server"]["name"] == "pg-input"


def test_over_long_strings_are_400_and_store_nothing(
        api, admin_api, server, volumes_admin):
    before = volumes_admin.list_volumes()[1]["volumes"]
    long = "x" * 256
    for body in ({"volume": {"size": 1, "name": long}},
                 {"volume": {"size": 1, "description": long}},
                 {"volume": {"size": 1, "metadata": {"k": long}}}):
        status, answer = _raw(volumes_admin, "POST", "/volumes", body,
                              volume=True)
        assert status == 400, (body, answer)
    status, answer = _raw(api, "POST", "/os-volumes",
                          {"volume": {"size": 1, "display_name": long}})
    assert status == 400, answer
    assert volumes_admin.list_volumes()[1]["volumes"] == before
    # a connector's host and keys live in columns of 255 characters
    status, body, _ = volumes_admin.create_volume(size=1, name="pg-conn")
    volume_id = body["volume"]["id"]
    volumes_admin.wait_for_volume_status(volume_id, "available")
    status, answer = _raw(volumes_admin, "POST", "/attachments",
                          {"attachment": {"volume_uuid": volume_id,
                                          "instance_uuid": MISSING}},
                          volume=True, microversion="3.54")
    assert status == 200, answer
    attachment = answer["attachment"]["id"]
    for connector in ({"host": long}, {"host": "h", "mountpoint": long},
                      {"host": "h", long: "v"}):
        status, answer = _raw(volumes_admin, "PUT",
                              "/attachments/%s" % attachment,
                              {"attachment": {"connector": connector}},
                              volume=True, microversion="3.54")
        assert status == 400, (connector, answer)
    status, answer = _raw(volumes_admin, "POST",
                          "/volumes/%s/action" % volume_id,
                          {"os-reset_status": {"migration_status": long}},
                          volume=True)
    assert status == 400, answer
    status, answer = _raw(volumes_admin, "GET",
                          "/attachments/%s" % attachment, volume=True,
                          microversion="3.54")
    assert answer["attachment"]["status"] == "reserved", answer
    # an IPv6 address spelled longer than its column (39) is stored in
    # its compressed form, which fits
    status, answer = _raw(
        api, "PUT", "/servers/%s" % server,
        {"server": {"accessIPv6": "1111:2222:3333:4444:5555:6666:"
                                  "255.255.255.255"}})
    assert status == 200, answer
    assert answer["server"]["accessIPv6"] == (
        "1111:2222:3333:4444:5555:6666:ffff:ffff")
    # longer than any spelling: refused
    status, answer = _raw(
        api, "PUT", "/servers/%s" % server,
        {"server": {"accessIPv6": "0" * 46}})
    assert status == 400, answer


def test_numbers_beyond_an_integer_column_are_400(api, server,
                                                  volumes_admin):
    huge = ["2147483648", 2 ** 31, 2 ** 64, "99999999999999999999"]
    before = volumes_admin.list_volumes()[1]["volumes"]
    for size in huge:
        status, answer = _raw(volumes_admin, "POST", "/volumes",
                              {"volume": {"size": size}}, volume=True)
        assert status == 400, (size, answer)
        status, answer = _raw(api, "POST", "/os-volumes",
                              {"volume": {"size": size}})
        assert status == 400, (size, answer)
    assert volumes_admin.list_volumes()[1]["volumes"] == before
    servers_before = api.list_servers()[1]["servers"]
    for count in huge:
        status, answer = _raw(api, "POST", "/servers", {"server": {
            "name": "pg-many", "imageRef": "", "flavorRef": "1",
            "min_count": count}}, microversion="2.37")
        assert status == 400, (count, answer)
        assert "maximum of 2147483647" in answer["badRequest"]["message"]
    assert api.list_servers()[1]["servers"] == servers_before
    # a live-migration id beyond the id column is no migration
    status, answer = _raw(
        api, "GET", "/servers/%s/migrations/99999999999999999999" % server,
        microversion="2.23")
    assert status == 404, answer


def test_multi_create_with_a_full_length_name_fits_the_column(api):
    """``<name>-<N>`` of a multi-create: the name is cut so that the
    display name fits its 255 characters (PostgreSQL refused 258)."""
    name = "n" * 255
    status, answer = _raw(api, "POST", "/servers", {"server": {
        "name": name, "imageRef": clients.DEFAULT_IMAGE, "flavorRef": "1",
        "networks": "none", "min_count": 2, "max_count": 2,
        "return_reservation_id": True}}, microversion="2.37")
    assert status == 202, answer
    status, body, _ = api.list_servers(
        reservation_id=answer["reservation_id"])
    names = sorted(s["name"] for s in body["servers"])
    assert names == [name[:253] + "-1", name[:253] + "-2"]
    for row in body["servers"]:
        api.wait_for_server_status(row["id"], "ACTIVE")
        api.delete_server(row["id"])
        api.wait_for_server_deleted(row["id"])


def test_text_orders_and_filters_as_on_sqlite(api, server):
    """Keypairs list by code points (``B`` before ``a``), whatever the
    database's collation; the name filter is Python's regular expression
    (PostgreSQL's ``~`` refused a named group: 500)."""
    for name in ("pg-b", "pg-B", "pg-a"):
        status, answer = _raw(api, "POST", "/os-keypairs",
                              {"keypair": {"name": name}})
        assert status == 200, answer
    status, answer = _raw(api, "GET", "/os-keypairs")
    names = [k["keypair"]["name"] for k in answer["keypairs"]]
    assert names == ["pg-B", "pg-a", "pg-b"], names
    for pattern, found in (("(?P<x>pg-input)", True), ("^pg-in", True),
                           ("PG-INPUT", False), ("pg.input$", True),
                           ("(?i)PG-INPUT", True)):
        status, answer = _raw(api, "GET", "/servers",
                              query="name=" + urllib.parse.quote(pattern))
        assert status == 200, (pattern, answer)
        assert (server in [s["id"] for s in answer["servers"]]) == found, \
            pattern


def test_a_noauth_identity_longer_than_its_column_is_401(deployment):
    """The user and project of a noauth token go into columns of 255
    characters: a longer one is no identity (PostgreSQL refused it: 500)."""
    from tests.integration import client as clients
    for token in ("u:" + "p" * 256, "u" * 256 + ":p"):
        volumes = clients.VolumeClient(deployment.volume_url, token)
        status, answer, _ = volumes.create_volume(size=1, name="pg-long-id")
        assert status == 401, answer
        api = clients.ComputeClient(deployment.api_url, token)
        status, answer = _raw(api, "POST", "/os-keypairs",
                              {"keypair": {"name": "pg-long-id"}})
        assert status == 401, answer
