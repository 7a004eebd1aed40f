"""volume.compute_client: which credentials the swap request carries."""
from unittest import mock

import pytest
from keystoneauth1 import token_endpoint

from tests.functional.volume.volume_testlib import make_conf
from volattach import exception
from volattach.volume import compute_client


def _client(tmp_path, strategy):
    conf = make_conf(tmp_path, auth_strategy=strategy,
                     compute_endpoint="http://compute:8774/v2.1/")
    return compute_client.ComputeClient(conf)


def test_noauth_uses_the_admin_service_token(tmp_path):
    client = _client(tmp_path, "noauth")
    assert client.session.auth.get_headers(client.session) == {
        "X-Auth-Token": compute_client.NOAUTH_TOKEN}


def test_keystone_uses_the_cinder_service_credentials(tmp_path):
    client = _client(tmp_path, "keystone")
    service_auth = token_endpoint.Token("http://compute", "svc-token")
    with mock.patch.object(compute_client.ks_loading,
                           "load_auth_from_conf_options",
                           return_value=service_auth) as load:
        assert client.session.auth is service_auth
    load.assert_called_once_with(client.conf, "cinder")


def test_swap_request_and_refusal(tmp_path):
    client = _client(tmp_path, "noauth")
    answer = mock.Mock(status_code=202, text="")
    with mock.patch.object(type(client.session), "put",
                           return_value=answer) as put:
        client.swap_volume("srv", "old", "new")
    args, kwargs = put.call_args
    assert args[0] == ("http://compute:8774/v2.1/servers/srv/"
                       "os-volume_attachments/old")
    assert kwargs["json"] == {"volumeAttachment": {"volumeId": "new"}}
    answer.status_code, answer.text = 409, "conflict"
    with mock.patch.object(type(client.session), "put",
                           return_value=answer):
        with pytest.raises(exception.InvalidVolume,
                           match="refused to swap volume old of server srv"):
            client.swap_volume("srv", "old", "new")


@pytest.mark.parametrize("listen,port,expected", [
    ("127.0.0.1", 60243, "http://127.0.0.1:60243/v2.1"),
    ("0.0.0.0", 8774, "http://127.0.0.1:8774/v2.1"),
    ("::1", 8774, "http://[::1]:8774/v2.1"),
])
def test_unset_endpoint_is_the_own_compute_api(tmp_path, listen, port, expected):
    """volattach-all on other ports: the volume service asks its own
    compute API to swap (not whatever answers on 8774)."""
    conf = make_conf(tmp_path)
    conf.set_override("listen", listen, group="api")
    conf.set_override("port", port, group="api")
    assert compute_client.compute_endpoint(conf) == expected
    conf.set_override("compute_endpoint", "http://nova:8774/v2.1", group="volume")
    assert compute_client.compute_endpoint(conf) == "http://nova:8774/v2.1"
