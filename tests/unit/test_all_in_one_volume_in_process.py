"""volattach-all's choice to call its volume service in-process
(``volattach.cmd.all``): only when ``[cinder] endpoint`` is that very
server's socket, plain HTTP, and ``[all] volume_in_process`` is on."""
import types

import pytest

from volattach import conf as volattach_conf
from volattach.cmd import all as all_cmd
from volattach.volume_client import http_transport


@pytest.mark.parametrize("endpoint,listen,port,same", [
    ("http://127.0.0.1:8776/v3", "127.0.0.1", 8776, True),
    ("http://127.0.0.1:8776/v3", "0.0.0.0", 8776, True),
    ("http://localhost:8776/v3", "0.0.0.0", 8776, True),
    ("http://[::1]:8776/v3", "::", 8776, True),
    ("http://[::1]:8776/v3", "::1", 8776, True),
    ("http://127.0.0.1:8777/v3", "127.0.0.1", 8776, False),   # another port
    ("https://127.0.0.1:8776/v3", "127.0.0.1", 8776, False),  # TLS in front
    ("http://192.0.2.7:8776/v3", "0.0.0.0", 8776, False),     # another host
    ("http://127.0.0.2:8776/v3", "127.0.0.1", 8776, False),
    ("http://127.0.0.1/v3", "127.0.0.1", 80, True),
    ("http://127.0.0.1:bad/v3", "127.0.0.1", 8776, False),
])
def test_same_socket(endpoint, listen, port, same):
    assert all_cmd._same_socket(endpoint, listen, port) is same


@pytest.fixture
def conf():
    conf = volattach_conf.CONF
    conf([], project="volattach", default_config_files=[])
    yield conf
    for name, group in (("endpoint", "cinder"), ("listen", "volume")):
        conf.clear_override(name, group=group)


def _server(port):
    return types.SimpleNamespace(
        application=object(), server_name="h", effective_port=port,
        port=port, adj=types.SimpleNamespace(ident="volattach"))


def test_registers_its_own_endpoint_and_stop_forgets_it(conf):
    conf.set_override("endpoint", "http://127.0.0.1:18776/v3", "cinder")
    conf.set_override("listen", "127.0.0.1", "volume")
    deployment = all_cmd.AllInOne(conf)
    server = _server(18776)
    deployment._volume_in_process(server)
    try:
        assert deployment.volume_origin == "http://127.0.0.1:18776"
        app = http_transport._IN_PROCESS["http://127.0.0.1:18776"]
        assert app.application is server.application
    finally:
        deployment.stop()
    assert "http://127.0.0.1:18776" not in http_transport._IN_PROCESS


def test_another_volume_service_goes_over_http(conf):
    conf.set_override("endpoint", "http://127.0.0.1:18777/v3", "cinder")
    deployment = all_cmd.AllInOne(conf)
    deployment._volume_in_process(_server(18776))
    assert deployment.volume_origin is None
    assert not any(":1877" in origin for origin in http_transport._IN_PROCESS)


def test_the_option_defaults_on(conf):
    assert conf.all.volume_in_process is True
