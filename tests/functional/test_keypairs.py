"""os-keypairs as tempest's keypair tests and the server-create key_name
checks use them: generate and import, list, show, delete, per user; 409 on
a taken name, 400 on a bad key, 404 on an unknown one; an unknown key_name
at server create is 400 and the server shows its key_name."""
import uuid

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.integration import client as clients


@pytest.fixture
def user(deployment):
    tag = uuid.uuid4().hex[:8]
    return clients.ComputeClient(deployment.api_url, "u-%s:p-%s" % (tag, tag))


@pytest.fixture
def other(deployment):
    tag = uuid.uuid4().hex[:8]
    return clients.ComputeClient(deployment.api_url, "o-%s:p-%s" % (tag, tag))


def _public_key():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode() + " me@host"


def _create(api, microversion="2.2", **fields):
    return api.request("POST", "/os-keypairs", {"keypair": fields},
                       microversion=microversion)


def test_generate_import_list_show_delete(user, other):
    status, body, _ = _create(user, name="made")
    assert status == 201, body
    made = body["keypair"]
    assert made["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert made["public_key"].startswith("ssh-rsa ")
    assert made["type"] == "ssh" and len(made["fingerprint"]) == 47
    public = _public_key()
    status, body, _ = _create(user, name="imported", public_key=public)
    assert status == 201, body
    assert "private_key" not in body["keypair"]
    assert body["keypair"]["public_key"] == public
    status, body, _ = user.request("GET", "/os-keypairs", microversion="2.2")
    assert status == 200, body
    assert sorted(k["keypair"]["name"] for k in body["keypairs"]) == [
        "imported", "made"]
    # keys are per user
    status, body, _ = other.request("GET", "/os-keypairs")
    assert (status, body["keypairs"]) == (200, [])
    assert other.request("GET", "/os-keypairs/made")[0] == 404
    status, body, _ = user.request("GET", "/os-keypairs/made",
                                   microversion="2.2")
    assert status == 200, body
    assert body["keypair"]["fingerprint"] == made["fingerprint"]
    assert body["keypair"]["user_id"].startswith("u-")
    status, body, _ = user.request("DELETE", "/os-keypairs/made",
                                   microversion="2.2")
    assert status == 204, body
    status, body, _ = user.request("GET", "/os-keypairs/made")
    assert status == 404, body
    assert body["itemNotFound"]["message"].startswith("Keypair made not found")
    assert user.request("DELETE", "/os-keypairs/made")[0] == 404
    status, body, _ = user.request("DELETE", "/os-keypairs/imported",
                                   microversion="2.1")
    assert status == 202, body


def test_bad_requests_store_nothing(user):
    assert _create(user, name="dup")[0] == 201
    status, body, _ = _create(user, name="dup")
    assert status == 409, body
    assert body["conflictingRequest"]["message"] == \
        "Key pair 'dup' already exists."
    status, body, _ = _create(user, name="bad", public_key="ssh-rsa nonsense")
    assert status == 400, body
    assert body["badRequest"]["message"] == \
        "Keypair data is invalid: failed to generate fingerprint"
    for fields in ({"name": ""}, {"name": "a/b"}, {"name": "x" * 256},
                   {"name": "t", "type": "pgp"}, {"name": "n", "bogus": 1}):
        status, body, _ = _create(user, **fields)
        assert status == 400, (fields, body)
    status, body, _ = _create(user, microversion="2.92", name="gen")
    assert status == 400, body          # 2.92: imported keys only
    status, body, _ = user.request("GET", "/os-keypairs")
    assert [k["keypair"]["name"] for k in body["keypairs"]] == ["dup"]


def test_server_create_checks_key_name(user):
    status, body, _ = user.create_server(name="keyless", key_name="missing",
                                         microversion="2.37")
    assert status == 400, body
    assert body["badRequest"]["message"] == "Invalid key_name provided."
    assert user.request("GET", "/servers")[1]["servers"] == []
    assert _create(user, name="mine")[0] == 201
    status, body, _ = user.create_server(name="keyed", key_name="mine",
                                         microversion="2.37")
    assert status == 202, body
    server = user.wait_for_server_status(body["server"]["id"], "ACTIVE")
    assert server["key_name"] == "mine"
