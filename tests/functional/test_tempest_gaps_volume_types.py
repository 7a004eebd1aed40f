"""tempest's volume type tests beyond the attach selections (issue 22, item
7): the encryption specs of a volume type (``/types/{id}/encryption``, Cinder's
bodies and codes, checked with tempest's response schemas) and a private
type that a project without access cannot use (404).  Refusals leave
nothing behind.
"""
import uuid

import pytest
import sqlalchemy as sa
from tempest.lib.api_schema.response.volume import encryption_types as schema
from tempest.lib.common import rest_client

from volattach.conf import CONF

SPECS = {"provider": "LuksEncryptor", "key_size": 256,
         "cipher": "aes-xts-plain64", "control_location": "front-end"}


class _Resp(dict):
    def __init__(self, status, headers):
        super().__init__(headers)
        self.status = status


def _tempest_check(name, answer):
    status, body, headers = answer
    rest_client.RestClient.validate_response(getattr(schema, name),
                                             _Resp(status, headers), body)


def _new_type(volumes_admin, is_public=True):
    status, body, _ = volumes_admin.create_volume_type(
        "gap-%s" % uuid.uuid4().hex[:8], is_public=is_public)
    assert status == 200, body
    return body["volume_type"]["id"]


def _enc(client, type_id, method="GET", key=None, body=None):
    path = client._path("/types/%s/encryption" % type_id)
    if key is not None:
        path += "/" + key
    return client.request(method, path, body)


def _encryption_rows(type_id):
    engine = sa.create_engine(CONF.volume.connection)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(
                "SELECT encryption_id FROM encryption WHERE volume_type_id = "
                ":t"), {"t": type_id}).all()
    finally:
        engine.dispose()


def test_encryption_create_get_update_delete(volumes_admin):
    type_id = _new_type(volumes_admin)
    assert _enc(volumes_admin, type_id)[:2] == (200, {})

    answer = _enc(volumes_admin, type_id, "POST", body={"encryption": SPECS})
    assert answer[0] == 200, answer[1]
    _tempest_check("create_encryption_type", answer)
    created = answer[1]["encryption"]
    assert {k: created[k] for k in SPECS} == SPECS
    assert created["volume_type_id"] == type_id
    encryption_id = created["encryption_id"]

    answer = _enc(volumes_admin, type_id)
    _tempest_check("show_encryption_type", answer)
    shown = answer[1]
    assert {k: shown[k] for k in SPECS} == SPECS
    assert (shown["encryption_id"], shown["volume_type_id"],
            shown["deleted"]) == (encryption_id, type_id, False)

    update = {"key_size": "128", "provider": "SomeProvider",
              "control_location": "back-end"}
    answer = _enc(volumes_admin, type_id, "PUT", encryption_id,
                  {"encryption": update})
    assert answer[0] == 200, answer[1]
    _tempest_check("update_encryption_type", answer)
    assert answer[1]["encryption"]["key_size"] == 128   # an integer back
    shown = _enc(volumes_admin, type_id)[1]
    assert (shown["key_size"], shown["provider"], shown["control_location"],
            shown["cipher"]) == (128, "SomeProvider", "back-end",
                                 "aes-xts-plain64")
    assert shown["updated_at"] is not None

    answer = _enc(volumes_admin, type_id, key="cipher")
    _tempest_check("show_encryption_specs_item", answer)
    assert answer[1] == {"cipher": "aes-xts-plain64"}
    status, body, _ = _enc(volumes_admin, type_id, key="no_such_key")
    assert status == 404 and body["itemNotFound"]["code"] == 404

    answer = _enc(volumes_admin, type_id, "DELETE", encryption_id)
    assert answer[0] == 202, answer[1]
    _tempest_check("delete_encryption_type", answer)
    assert _enc(volumes_admin, type_id)[:2] == (200, {})
    assert _encryption_rows(type_id) == []


@pytest.mark.parametrize("bad", [
    {"key_size": 256, "control_location": "front-end"},     # no provider
    {"provider": "LuksEncryptor"},                       # no control_location
    dict(SPECS, control_location="middle"),
    dict(SPECS, key_size="big"),
    dict(SPECS, key_size=-1),
    dict(SPECS, provider=5),
    dict(SPECS, cipher="c" * 256),
    "not-an-object",
])
def test_bad_encryption_bodies_are_400_and_create_nothing(volumes_admin, bad):
    type_id = _new_type(volumes_admin)
    status, body, _ = _enc(volumes_admin, type_id, "POST",
                           body={"encryption": bad})
    assert status == 400, body
    assert body["badRequest"]["code"] == 400
    assert _enc(volumes_admin, type_id)[:2] == (200, {})
    assert _encryption_rows(type_id) == []


def test_bad_encryption_updates_are_400_and_change_nothing(volumes_admin):
    type_id = _new_type(volumes_admin)
    created = _enc(volumes_admin, type_id, "POST",
                   body={"encryption": SPECS})[1]["encryption"]
    for bad in ({"control_location": "middle"}, {"key_size": "x"},
                {"provider": None}):
        status, body, _ = _enc(volumes_admin, type_id, "PUT",
                               created["encryption_id"], {"encryption": bad})
        assert status == 400, body
    shown = _enc(volumes_admin, type_id)[1]
    assert {k: shown[k] for k in SPECS} == SPECS


def test_encryption_refusals(volumes_admin, volumes):
    missing = str(uuid.uuid4())
    for method, key, body in (("GET", None, None),
                              ("POST", None, {"encryption": SPECS}),
                              ("PUT", missing, {"encryption": SPECS}),
                              ("DELETE", missing, None)):
        status, answer, _ = _enc(volumes_admin, missing, method, key, body)
        assert status == 404, (method, answer)
        assert answer["itemNotFound"]["code"] == 404

    type_id = _new_type(volumes_admin)
    # nothing to update or delete yet
    assert _enc(volumes_admin, type_id, "PUT", missing,
                {"encryption": SPECS})[0] == 404
    status, body, _ = _enc(volumes_admin, type_id, "DELETE", missing)
    assert status == 404
    assert body["itemNotFound"]["message"] == (
        "Volume type encryption for type %s does not exist." % type_id)
    # a project that is no admin: 403, nothing made
    status, body, _ = _enc(volumes, type_id, "POST",
                           body={"encryption": SPECS})
    assert status == 403, body
    assert _encryption_rows(type_id) == []
    # one set of specs per type (Cinder: 400)
    assert _enc(volumes_admin, type_id, "POST",
                body={"encryption": SPECS})[0] == 200
    status, body, _ = _enc(volumes_admin, type_id, "POST",
                           body={"encryption": SPECS})
    assert status == 400
    assert "already exists" in body["badRequest"]["message"]
    assert len(_encryption_rows(type_id)) == 1


def test_no_volume_of_an_encrypted_type(volumes_admin):
    """No key manager here: a volume of a type with encryption specs is
    refused (400) rather than made unencrypted, and none is left."""
    type_id = _new_type(volumes_admin)
    assert _enc(volumes_admin, type_id, "POST",
                body={"encryption": SPECS})[0] == 200
    before = volumes_admin.list_volumes()[1]["volumes"]
    status, body, _ = volumes_admin.create_volume(volume_type=type_id)
    assert status == 400, body
    assert "key manager" in body["badRequest"]["message"]
    assert volumes_admin.list_volumes()[1]["volumes"] == before


def test_specs_of_a_type_in_use_stay(volumes_admin):
    type_id = _new_type(volumes_admin)
    status, body, _ = volumes_admin.create_volume(volume_type=type_id)
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes_admin.wait_for_volume_status(volume_id, "available")
    status, body, _ = _enc(volumes_admin, type_id, "POST",
                           body={"encryption": SPECS})
    assert status == 400, body
    assert ("Cannot create encryption specs. Volume type in use."
            == body["badRequest"]["message"])
    assert _encryption_rows(type_id) == []
    # specs given to a type in use by another way (a retype into it, an
    # older release): they stay as they are
    encryption_id = str(uuid.uuid4())
    engine = sa.create_engine(CONF.volume.connection)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO encryption (encryption_id, volume_type_id, "
            "key_size, provider, control_location, created_at) VALUES "
            "(:e, :t, 256, 'LuksEncryptor', 'front-end', '2026-11-26')"),
            {"e": encryption_id, "t": type_id})
    engine.dispose()
    for method, body in (("PUT", {"encryption": {"key_size": 128}}),
                         ("DELETE", None)):
        status, answer, _ = _enc(volumes_admin, type_id, method,
                                 encryption_id, body)
        assert status == 400, answer
        assert "Volume type in use" in answer["badRequest"]["message"]
    assert _enc(volumes_admin, type_id)[1]["key_size"] == 256
    assert volumes_admin.delete_volume(volume_id)[0] == 202
    volumes_admin.wait_for_volume_deleted(volume_id)
    # deleting the type takes its specs with it
    assert volumes_admin.request(
        "DELETE", volumes_admin._path("/types/%s" % type_id))[0] == 202
    assert _encryption_rows(type_id) == []


# -- private types --------------------------------------------------------------

def test_a_private_type_is_not_found_by_other_projects(volumes_admin,
                                                      volumes):
    type_id = _new_type(volumes_admin, is_public=False)
    before = volumes.list_volumes()[1]["volumes"]
    status, body, _ = volumes.create_volume(volume_type=type_id)
    assert status == 404, body
    assert body["itemNotFound"]["code"] == 404
    assert volumes.list_volumes()[1]["volumes"] == before
    status, body, _ = volumes.request("GET",
                                      volumes._path("/types/%s" % type_id))
    assert status == 404, body
    assert volumes.request("GET", volumes._path(
        "/types/%s/extra_specs" % type_id))[0] == 404
    listed = volumes.request("GET", volumes._path("/types"))[1]
    assert type_id not in [t["id"] for t in listed["volume_types"]]
    # the admins may use it
    status, body, _ = volumes_admin.create_volume(volume_type=type_id)
    assert status == 202, body
    volumes_admin.wait_for_volume_status(body["volume"]["id"], "available")


def test_no_retype_into_an_encrypted_type(volumes_admin):
    type_id = _new_type(volumes_admin)
    assert _enc(volumes_admin, type_id, "POST",
                body={"encryption": SPECS})[0] == 200
    status, body, _ = volumes_admin.create_volume()
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes_admin.wait_for_volume_status(volume_id, "available")
    before = volumes_admin.show_volume(volume_id)[1]["volume"]["volume_type"]
    status, body, _ = volumes_admin.request(
        "POST", volumes_admin._path("/volumes/%s/action" % volume_id),
        {"os-retype": {"new_type": type_id}})
    assert status == 400, body
    assert "encryption requirements" in body["badRequest"]["message"]
    volume = volumes_admin.show_volume(volume_id)[1]["volume"]
    assert (volume["volume_type"], volume["status"]) == (before, "available")
