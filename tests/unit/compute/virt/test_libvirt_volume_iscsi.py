"""The libvirt driver's iscsi volumes: the <disk> XML from the connection
keys of Cinder's LVM/tgt driver (multipath lists: the first path),
read-only from either the record's mode or access_mode, CHAP through a
libvirt secret of usage type iscsi that the compute defines (libvirt
replaced by an in-memory stand-in), and connect's checks."""
import logging
import socket
import types
import xml.etree.ElementTree as ET

import pytest

from volattach.compute.virt.libvirt import driver as libvirt_driver
from volattach.compute.virt.libvirt import volume
from volattach.compute.virt.libvirt.volume import iscsi
from volattach import exception

IQN = "iqn.2010-10.org.openstack:volume-v1"
INITIATOR = "iqn.1993-08.org.debian:01:abcdef"
PASSWORD = "s3cr3t-CHAP-pw"


def _info(flat=False, **data):
    base = {"target_portal": "127.0.0.1:3260", "target_iqn": IQN,
            "target_lun": 1, "target_discovered": False,
            "auth_method": "CHAP", "auth_username": "u-v1",
            "auth_password": PASSWORD, "access_mode": "rw",
            "encrypted": False, "discard": False, "volume_id": "v1"}
    base.update(data)
    base = {k: v for k, v in base.items() if v is not None}
    if flat:
        return dict(base, driver_volume_type="iscsi")
    return {"driver_volume_type": "iscsi", "data": base}


@pytest.fixture(autouse=True)
def initiator(tmp_path, monkeypatch):
    path = tmp_path / "initiatorname.iscsi"
    path.write_text("## comment\nInitiatorName=%s\n" % INITIATOR)
    monkeypatch.setattr(libvirt_driver, "INITIATOR_FILE", str(path))
    return path


def _disk(info, readonly=False):
    return ET.fromstring(volume.volume_driver(info).disk_xml(
        info, "vdb", "v1", readonly))


def test_iscsi_is_registered():
    assert isinstance(volume.volume_driver(_info()),
                      iscsi.ISCSIVolumeDriver)


@pytest.mark.parametrize("flat", [False, True])
def test_disk_is_a_network_iscsi_disk_of_iqn_and_lun(flat):
    disk = _disk(_info(flat=flat))
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) \
        == ("network", "iscsi", IQN + "/1")
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] \
        == [("127.0.0.1", "3260")]
    assert disk.find("target").get("dev") == "vdb"
    assert disk.find("serial").text == "v1"
    assert disk.find("driver").get("cache") == "none"
    assert disk.find("readonly") is None and disk.find("shareable") is None


def test_chap_is_an_auth_with_an_iscsi_secret_by_usage():
    source = _disk(_info()).find("source")
    auth = source.find("auth")
    assert auth.get("username") == "u-v1"
    secret = auth.find("secret")
    assert secret.get("type") == "iscsi"
    assert secret.get("usage") == iscsi.usage_name("u-v1", IQN)
    assert secret.get("uuid") is None


def test_the_password_is_never_in_the_disk_xml():
    xml = volume.volume_driver(_info()).disk_xml(_info(), "vdb", "v1", False)
    assert PASSWORD not in xml


@pytest.mark.parametrize("method", [None, "", "None"])
def test_no_auth_without_chap(method):
    assert _disk(_info(auth_method=method)).find("source/auth") is None


def test_an_unknown_auth_method_fails():
    with pytest.raises(exception.VirtDriverError, match="'kerberos'"):
        _disk(_info(auth_method="kerberos"))


def test_chap_without_a_password_fails():
    with pytest.raises(exception.VirtDriverError, match="auth_password"):
        _disk(_info(auth_password=None))


def test_the_initiator_is_the_computes_own():
    source = _disk(_info()).find("source")
    assert source.find("initiator/iqn").get("name") == INITIATOR


def test_no_initiator_element_without_an_initiator_name(initiator):
    initiator.write_text("")
    assert _disk(_info()).find("source/initiator") is None


@pytest.mark.parametrize("portal,host,port", [
    ("192.0.2.5:3261", "192.0.2.5", "3261"),
    ("[fd00::5]:3262", "fd00::5", "3262"),
    ("target.example", "target.example", "3260"),
    ("fd00::6", "fd00::6", "3260")])
def test_portal_forms(portal, host, port):
    h = _disk(_info(target_portal=portal)).find("source/host")
    assert (h.get("name"), h.get("port")) == (host, port)


def test_lun_zero_when_the_connection_names_none():
    assert _disk(_info(target_lun=None)).find("source").get("name") \
        == IQN + "/0"


def test_multipath_lists_give_the_first_path():
    info = _info(target_portal=None, target_iqn=None, target_lun=None,
                 target_portals=["127.0.0.2:3260", "127.0.0.3:3260"],
                 target_iqns=[IQN + "-a", IQN + "-b"], target_luns=[4, 5])
    source = _disk(info).find("source")
    assert source.get("name") == IQN + "-a/4"
    assert source.find("host").get("name") == "127.0.0.2"


def test_the_singular_keys_win_over_the_lists():
    info = _info(target_portals=["127.0.0.2:3260"], target_iqns=["other"],
                 target_luns=[9])
    assert _disk(info).find("source").get("name") == IQN + "/1"


def test_no_target_fails():
    with pytest.raises(exception.VirtDriverError, match="target_iqn"):
        _disk(_info(target_iqn=None))


@pytest.mark.parametrize("mode_ro,access_mode", [
    (True, "rw"), (False, "ro"), (True, "ro")])
def test_read_only_when_the_record_or_the_connection_says_so(mode_ro,
                                                             access_mode):
    assert _disk(_info(access_mode=access_mode),
                 readonly=mode_ro).find("readonly") is not None


def test_shareable_for_multiattach():
    info = _info()
    info["multiattach"] = True
    assert _disk(info).find("shareable") is not None


def test_discard_when_the_connection_asks():
    assert _disk(_info(discard=True)).find("driver").get("discard") \
        == "unmap"
    assert _disk(_info()).find("driver").get("discard") is None


# -- connect: the portal and the secret --------------------------------------

class LibvirtError(Exception):
    def __init__(self, code):
        super().__init__("libvirt error %d" % code)
        self.code = code

    def get_error_code(self):
        return self.code


class Secret:
    def __init__(self, root):
        self.root = root
        self.values = []

    def value(self):
        raise LibvirtError(55)       # private: libvirt never returns it

    def setValue(self, value):
        assert isinstance(value, bytes)
        self.values.append(value)


class Conn:
    """libvirt's secrets, looked up by (usage type, usage)."""

    def __init__(self, unsupported=False):
        self.secrets = {}
        self.unsupported = unsupported

    def secretLookupByUsage(self, usage_type, usage):
        if self.unsupported:
            raise LibvirtError(3)
        assert usage_type == 3       # VIR_SECRET_USAGE_TYPE_ISCSI
        if usage not in self.secrets:
            raise LibvirtError(66)
        return self.secrets[usage]

    def secretDefineXML(self, xml):
        root = ET.fromstring(xml)
        assert root.find("usage").get("type") == "iscsi"
        assert root.get("private") == "yes"
        usage = root.findtext("usage/target")
        assert usage not in self.secrets
        self.secrets[usage] = Secret(root)
        return self.secrets[usage]


@pytest.fixture
def host():
    conn = Conn()
    lv = types.SimpleNamespace(libvirtError=LibvirtError,
                               VIR_ERR_NO_SECRET=66)
    return types.SimpleNamespace(libvirt=lv, conn=conn,
                                 get_connection=lambda: conn)


@pytest.fixture
def portal():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield "127.0.0.1:%d" % s.getsockname()[1]


def test_connect_defines_the_secret_with_the_password(host, portal, caplog):
    caplog.set_level(logging.DEBUG)
    info = _info(target_portal=portal)
    volume.volume_driver(info, host).connect_volume(info)
    usage = iscsi.usage_name("u-v1", IQN)
    secret = host.conn.secrets[usage]
    assert secret.values == [PASSWORD.encode()]
    assert secret.root.findtext("uuid") == iscsi.secret_uuid(usage)
    assert PASSWORD not in caplog.text


def test_connect_again_reuses_the_secret_with_the_new_password(host, portal):
    info = _info(target_portal=portal)
    volume.volume_driver(info, host).connect_volume(info)
    info = _info(target_portal=portal, auth_password="changed")
    volume.volume_driver(info, host).connect_volume(info)
    secret = host.conn.secrets[iscsi.usage_name("u-v1", IQN)]
    assert secret.values[-1] == b"changed"
    assert len(host.conn.secrets) == 1


def test_connect_without_chap_defines_no_secret(host, portal):
    info = _info(target_portal=portal, auth_method=None)
    volume.volume_driver(info, host).connect_volume(info)
    assert host.conn.secrets == {}


def test_connect_to_a_portal_nobody_listens_on_fails(host):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]           # bound, not listening
    info = _info(target_portal="127.0.0.1:%d" % port)
    with pytest.raises(exception.VirtDriverError, match="unreachable"):
        volume.volume_driver(info, host).connect_volume(info)
    assert host.conn.secrets == {}


def test_connect_without_the_secret_driver_says_so(portal):
    conn = Conn(unsupported=True)
    lv = types.SimpleNamespace(libvirtError=LibvirtError,
                               VIR_ERR_NO_SECRET=66)
    host = types.SimpleNamespace(libvirt=lv, get_connection=lambda: conn)
    info = _info(target_portal=portal)
    with pytest.raises(exception.VirtDriverError,
                       match="libvirt-daemon-driver-secret") as e:
        volume.volume_driver(info, host).connect_volume(info)
    assert PASSWORD not in str(e.value)


def test_connect_refuses_an_encrypted_volume(host, portal):
    info = _info(target_portal=portal, encrypted=True)
    with pytest.raises(exception.VirtDriverError, match="encrypted"):
        volume.volume_driver(info, host).connect_volume(info)
