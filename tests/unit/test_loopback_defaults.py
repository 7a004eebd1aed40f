"""The all-in-one's loopback defaults in a daemon whose peers are elsewhere
log a warning naming the option (``volattach.loopback_defaults``)."""
import logging

import pytest
from oslo_config import cfg
from oslo_messaging import transport as messaging_transport

from volattach import conf as volattach_conf
from volattach import loopback_defaults


@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf.register_opts(messaging_transport._transport_opts)
    conf([], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    return conf


def _options(found):
    return [option for option, _text in found]


def test_all_in_one_shape_warns_nothing(conf):
    for binary in ("volattach-api", "volattach-conductor", "volattach-volume"):
        assert loopback_defaults.findings(conf, binary) == []
    # a broker on this machine: everything may well be here too
    conf.set_override("transport_url", "rabbit://guest:guest@127.0.0.1:5672/")
    assert loopback_defaults.findings(conf, "volattach-conductor") == []


def test_broker_elsewhere_with_loopback_cinder_endpoint(conf, caplog):
    conf.set_override("transport_url",
                      "rabbit://guest:guest@broker.example:5672/")
    with caplog.at_level(logging.WARNING):
        found = loopback_defaults.check(conf, "volattach-conductor")
    assert _options(found) == ["[cinder] endpoint", "[database] connection"]
    assert "http://127.0.0.1:8776/v3" in found[0][1]
    assert "broker.example" in found[0][1]
    assert any("[cinder] endpoint" in r.getMessage()
               and r.levelno == logging.WARNING for r in caplog.records)
    assert _options(loopback_defaults.findings(conf, "volattach-api")) == [
        "[cinder] endpoint"]
    # set explicitly, or on PostgreSQL: nothing to say
    conf.set_override("endpoint", "http://volumes.example:8776/v3",
                      group="cinder")
    conf.set_override("connection", "postgresql+psycopg2://db.example/v",
                      group="database")
    assert loopback_defaults.findings(conf, "volattach-conductor") == []


def test_volume_service_listening_for_others_without_compute_endpoint(conf):
    conf.set_override("listen", "0.0.0.0", group="volume")
    found = loopback_defaults.findings(conf, "volattach-volume")
    assert _options(found) == ["[volume] compute_endpoint"]
    assert "http://127.0.0.1:8774/v2.1" in found[0][1]
    conf.set_override("compute_endpoint", "http://api.example:8774/v2.1",
                      group="volume")
    assert loopback_defaults.findings(conf, "volattach-volume") == []


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("10.0.0.5", False),
    ("broker.example", False)])
def test_is_loopback(host, loopback):
    assert loopback_defaults.is_loopback(host) is loopback
