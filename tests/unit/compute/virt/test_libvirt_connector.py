"""The libvirt driver's volume connector: this host's ``[DEFAULT] my_ip``
and open-iscsi's initiator name, not the fake driver's loopback and
made-up IQN."""
import pytest

from volattach.compute.virt.libvirt import driver
from volattach.conf import CONF


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("my_ip")


def test_connector_ip_is_my_ip_and_initiator_is_open_iscsis(tmp_path):
    name = tmp_path / "initiatorname.iscsi"
    name.write_text("## DO NOT EDIT\n# comment\n"
                    "InitiatorName=iqn.1993-08.org.debian:01:abcdef\n")
    CONF.set_override("my_ip", "10.250.3.4")
    connector = driver.volume_connector("compute1", str(name))
    assert connector["ip"] == "10.250.3.4"
    assert connector["host"] == "compute1"
    assert connector["initiator"] == "iqn.1993-08.org.debian:01:abcdef"
    assert connector["os_type"] == "linux"
    assert connector["multipath"] is False


def test_without_open_iscsi_the_connector_has_no_initiator(tmp_path):
    connector = driver.volume_connector("compute1",
                                        str(tmp_path / "absent"))
    assert "initiator" not in connector
    empty = tmp_path / "empty"
    empty.write_text("# no name yet\nInitiatorName=\n")
    assert "initiator" not in driver.volume_connector("c", str(empty))


def test_my_ip_defaults_to_the_hosts_primary_address():
    from oslo_utils import netutils
    assert CONF.my_ip == netutils.get_my_ipv4()
    assert driver.volume_connector("c", "/nonexistent")["ip"] == CONF.my_ip
