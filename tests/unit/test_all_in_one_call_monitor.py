"""volattach-all's call monitor default (``volattach.cmd.all``): off on its
in-process bus, where no broker can lose a message; kept on RabbitMQ; a
value from the configuration file wins either way."""
import pytest

from volattach import conf as volattach_conf
from volattach.cmd import all as all_cmd


@pytest.fixture
def conf(tmp_path):
    conf = volattach_conf.CONF

    def parse(**options):
        path = tmp_path / "volattach.conf"
        path.write_text("[DEFAULT]\n" + "".join(
            "%s = %s\n" % item for item in options.items()))
        conf(["--config-file", str(path)], project="volattach",
             default_config_files=[])
        all_cmd._no_call_monitor_on_the_inproc_bus(conf)
        return conf
    yield parse
    conf.set_default("rpc_call_monitor_timeout", 10)
    conf([], project="volattach", default_config_files=[])


def test_off_on_the_inproc_bus(conf):
    assert conf().rpc_call_monitor_timeout == 0
    assert conf(transport_url="volattach-inproc://").rpc_call_monitor_timeout == 0


def test_kept_on_rabbitmq(conf):
    parsed = conf(transport_url="rabbit://guest:guest@127.0.0.1:5672/")
    assert parsed.rpc_call_monitor_timeout == 10


def test_the_configuration_file_wins(conf):
    assert conf(rpc_call_monitor_timeout=4).rpc_call_monitor_timeout == 4
