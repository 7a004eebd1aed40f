"""The transport URL choice: oslo.messaging's own default (rabbit://) must not
count as configured, or volattach-all would reach for a broker."""
import volattach  # noqa: F401
from volattach import rpc
from volattach.conf import CONF


def test_unset_transport_url_is_none(tmp_path):
    CONF([], project="volattach", default_config_files=[])
    assert rpc._configured_url(CONF) is None


def test_transport_url_from_file_and_override(tmp_path):
    conf_file = tmp_path / "v.conf"
    conf_file.write_text("[DEFAULT]\ntransport_url = rabbit://a:b@broker:5672/\n")
    CONF(["--config-file", str(conf_file)], project="volattach")
    try:
        assert rpc._configured_url(CONF) == "rabbit://a:b@broker:5672/"
        CONF.set_override("transport_url", "kombu+memory:////")
        assert rpc._configured_url(CONF) == "kombu+memory:////"
    finally:
        CONF.clear_override("transport_url")
        CONF([], project="volattach", default_config_files=[])
