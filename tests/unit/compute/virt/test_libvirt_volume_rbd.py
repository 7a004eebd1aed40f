"""The libvirt driver's rbd volumes: the <disk> XML from Cinder's RBD
connection keys (and Nova's [libvirt] fallbacks), read-only from either the
record's mode or access_mode, and the libvirt secret the compute defines
from Ceph's keyring (libvirt replaced by an in-memory stand-in)."""
import base64
import socket
import types
import xml.etree.ElementTree as ET

import pytest

from volattach.compute.virt.libvirt import volume
from volattach.compute.virt.libvirt.volume import rbd
from volattach.conf import CONF
from volattach import exception

SECRET = "5b6d8a4c-1f2e-4a3b-9c8d-7e6f5a4b3c2d"
KEY = base64.b64encode(b"0123456789abcdef").decode()


def _info(**data):
    base = {"name": "volumes/volume-v1", "hosts": ["127.0.0.1", "[::1]"],
            "ports": ["6789", "6790"], "cluster_name": "ceph",
            "auth_enabled": True, "auth_username": "cinder",
            "secret_type": "ceph", "secret_uuid": SECRET, "volume_id": "v1",
            "discard": True, "access_mode": "rw"}
    base.update(data)
    return {"driver_volume_type": "rbd", "data": base}


def _disk(info, readonly=False):
    return ET.fromstring(volume.volume_driver(info).disk_xml(
        info, "vdb", "v1", readonly))


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    for name in ("rbd_user", "rbd_secret_uuid"):
        CONF.clear_override(name, group="libvirt")


def test_rbd_disk_is_a_network_disk_with_hosts_auth_and_discard():
    disk = _disk(_info())
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) == \
        ("network", "rbd", "volumes/volume-v1")
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] \
        == [("127.0.0.1", "6789"), ("::1", "6790")]
    auth = source.find("auth")
    assert auth.get("username") == "cinder"
    assert (auth.find("secret").get("type"),
            auth.find("secret").get("uuid")) == ("ceph", SECRET)
    driver = disk.find("driver")
    assert (driver.get("discard"), driver.get("cache")) == ("unmap", "none")
    assert source.find("config") is None          # the default cluster
    assert disk.find("readonly") is None and disk.find("shareable") is None
    assert disk.find("serial").text == "v1"


def test_no_discard_when_the_connection_does_not_ask():
    assert _disk(_info(discard=False)).find("driver").get("discard") is None


@pytest.mark.parametrize("mode_ro,access_mode", [
    (True, "rw"),      # real Cinder: rw in the connection of an ro attach
    (False, "ro"),
    (True, "ro")])
def test_read_only_when_the_record_or_the_connection_says_so(mode_ro,
                                                             access_mode):
    assert _disk(_info(access_mode=access_mode),
                 readonly=mode_ro).find("readonly") is not None


def test_nbd_disk_is_read_only_on_access_mode_too():
    info = {"driver_volume_type": "nbd", "host": "127.0.0.1", "port": 1,
            "name": "e", "access_mode": "ro"}
    assert _disk(info).find("readonly") is not None


def test_multiattach_disk_is_shareable():
    info = _info()
    info["multiattach"] = True          # Nova's key, set by the compute side
    assert _disk(info).find("shareable") is not None


def test_other_cluster_names_its_configuration_file():
    source = _disk(_info(cluster_name="backup")).find("source")
    assert source.find("config").get("file") == "/etc/ceph/backup.conf"


def test_nova_fallbacks_apply_when_the_connection_lacks_user_and_secret():
    CONF.set_override("rbd_user", "nova", group="libvirt")
    CONF.set_override("rbd_secret_uuid", SECRET, group="libvirt")
    auth = _disk(_info(auth_enabled=False, auth_username=None,
                       secret_uuid=None)).find("source/auth")
    assert auth.get("username") == "nova"
    assert auth.find("secret").get("uuid") == SECRET


def test_a_user_without_any_secret_uuid_gets_a_stable_derived_one():
    a = _disk(_info(secret_uuid=None)).find("source/auth/secret").get("uuid")
    b = _disk(_info(secret_uuid=None)).find("source/auth/secret").get("uuid")
    other = _disk(_info(secret_uuid=None, auth_username="glance")).find(
        "source/auth/secret").get("uuid")
    assert a == b == rbd.derived_secret_uuid("ceph", "cinder") != other


def test_no_auth_without_a_user_anywhere():
    disk = _disk(_info(auth_enabled=False, auth_username=None))
    assert disk.find("source/auth") is None


def test_unknown_secret_type_is_refused():
    with pytest.raises(exception.VirtDriverError, match="secret_type"):
        volume.volume_driver(_info()).auth(_info(secret_type="x")["data"])


def test_unknown_volume_type_names_the_type():
    with pytest.raises(exception.VirtDriverError, match="'fibre_channel'"):
        volume.volume_driver({"driver_volume_type": "fibre_channel"})


# -- the secret ---------------------------------------------------------------

class LibvirtError(Exception):
    def __init__(self, code):
        super().__init__("libvirt error %d" % code)
        self.code = code

    def get_error_code(self):
        return self.code


class Secret:
    def __init__(self, xml):
        self.xml = xml
        self._value = None

    def value(self):
        if self._value is None:
            raise LibvirtError(66)
        return self._value

    def setValue(self, value):
        assert isinstance(value, bytes)
        self._value = value


class Conn:
    """libvirt's secrets: by uuid, each usage name once."""

    def __init__(self, unsupported=False):
        self.secrets = {}
        self.unsupported = unsupported
        self.defined = 0

    def secretLookupByUUIDString(self, uuid):
        if self.unsupported:
            raise LibvirtError(3)          # VIR_ERR_NO_SUPPORT
        if uuid not in self.secrets:
            raise LibvirtError(66)         # VIR_ERR_NO_SECRET
        return self.secrets[uuid]

    def secretDefineXML(self, xml):
        root = ET.fromstring(xml)
        usage = root.findtext("usage/name")
        uuid = root.findtext("uuid")
        assert root.find("usage").get("type") == "ceph"
        assert all(s.xml.find("usage/name").text != usage
                   for u, s in self.secrets.items() if u != uuid)
        self.secrets[uuid] = Secret(root)
        self.defined += 1
        return self.secrets[uuid]


@pytest.fixture
def host(tmp_path, monkeypatch):
    monkeypatch.setattr(rbd, "KEYRING_DIR", str(tmp_path))
    conn = Conn()
    lv = types.SimpleNamespace(libvirtError=LibvirtError,
                               VIR_ERR_NO_SECRET=66)
    return types.SimpleNamespace(libvirt=lv, conn=conn,
                                 get_connection=lambda: conn, dir=tmp_path)


def _keyring(host, user="cinder", key=KEY, cluster="ceph"):
    path = host.dir / ("%s.client.%s.keyring" % (cluster, user))
    path.write_text("[client.admin]\n\tkey = %s\n[client.%s]\n\tkey = %s\n"
                    "\tcaps mon = \"profile rbd\"\n"
                    % (base64.b64encode(b"not this one").decode(), user, key))
    return path


@pytest.fixture
def monitor():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield str(s.getsockname()[1])


def _connect(host, monitor, **data):
    info = _info(hosts=["127.0.0.1"], ports=[monitor], **data)
    volume.volume_driver(info, host).connect_volume(info)


def test_connect_defines_the_secret_with_the_decoded_key(host, monitor):
    _keyring(host)
    _connect(host, monitor)
    secret = host.conn.secrets[SECRET]
    assert secret.value() == b"0123456789abcdef"
    assert secret.xml.findtext("usage/name") == \
        "ceph.client.cinder secret %s" % SECRET
    # again: nothing new
    _connect(host, monitor)
    assert host.conn.defined == 1


def test_a_changed_key_updates_the_secret(host, monitor):
    _keyring(host)
    _connect(host, monitor)
    _keyring(host, key=base64.b64encode(b"rebuilt cluster").decode())
    _connect(host, monitor)
    assert host.conn.secrets[SECRET].value() == b"rebuilt cluster"
    assert host.conn.defined == 1


def test_a_missing_keyring_names_the_file_and_defines_nothing(host, monitor):
    with pytest.raises(exception.VirtDriverError) as e:
        _connect(host, monitor)
    assert str(host.dir / "ceph.client.cinder.keyring") in str(e.value)
    assert host.conn.secrets == {}


def test_a_keyring_without_the_user_is_an_error(host, monitor):
    _keyring(host, user="other")
    (host.dir / "ceph.client.other.keyring").rename(
        host.dir / "ceph.client.cinder.keyring")
    with pytest.raises(exception.VirtDriverError, match="no valid key"):
        _connect(host, monitor)
    assert host.conn.secrets == {}


def test_an_operators_secret_is_used_without_a_keyring(host, monitor):
    host.conn.secretDefineXML(
        "<secret><uuid>%s</uuid><usage type='ceph'><name>client.cinder "
        "secret</name></usage></secret>" % SECRET).setValue(b"operator's")
    _connect(host, monitor)
    assert host.conn.secrets[SECRET].value() == b"operator's"


def test_the_secret_of_another_cluster_reads_its_keyring(host, monitor):
    _keyring(host, cluster="backup",
             key=base64.b64encode(b"backup key").decode())
    _connect(host, monitor, cluster_name="backup")
    assert host.conn.secrets[SECRET].value() == b"backup key"


def test_no_secret_driver_is_an_error_naming_the_package(host, monitor):
    _keyring(host)
    host.conn.unsupported = True
    with pytest.raises(exception.VirtDriverError,
                       match="libvirt-daemon-driver-secret"):
        _connect(host, monitor)


def test_disconnect_keeps_the_secret(host, monitor):
    _keyring(host)
    _connect(host, monitor)
    info = _info()
    volume.volume_driver(info, host).disconnect_volume(info)
    assert SECRET in host.conn.secrets


def test_connect_without_a_reachable_monitor_fails_at_once(host):
    _keyring(host)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))          # bound, not listening: refused
        port = str(s.getsockname()[1])
        with pytest.raises(exception.VirtDriverError,
                           match="no Ceph monitor"):
            _connect(host, port)
    assert host.conn.secrets == {}


def test_connect_without_a_user_defines_no_secret(host, monitor):
    _connect(host, monitor, auth_enabled=False, auth_username=None)
    assert host.conn.secrets == {}


# -- a key in the connection (a volume's read-only user) ----------------------

RO_USER = "volattach-readonly-v1"


def _ro_keyring(user=RO_USER, key=KEY):
    return "[client.%s]\n\tkey = %s\n" % (user, key)


def test_the_connections_keyring_goes_into_a_private_ephemeral_secret_only(
        host, monitor):
    _connect(host, monitor, auth_username=RO_USER, keyring=_ro_keyring())
    secret = host.conn.secrets[SECRET]
    assert secret.value() == b"0123456789abcdef"
    # libvirt keeps it in memory only and never shows its value
    assert (secret.xml.get("ephemeral"), secret.xml.get("private")) == \
        ("yes", "yes")
    # and nothing was written beside the keyrings (or anywhere here)
    assert list(host.dir.iterdir()) == []


def test_the_connections_keyring_wins_over_a_keyring_file(host, monitor):
    _keyring(host, user=RO_USER,
             key=base64.b64encode(b"a stale file").decode())
    _connect(host, monitor, auth_username=RO_USER, keyring=_ro_keyring())
    assert host.conn.secrets[SECRET].value() == b"0123456789abcdef"


def test_a_new_key_of_a_user_made_again_updates_the_secret(host, monitor):
    _connect(host, monitor, auth_username=RO_USER, keyring=_ro_keyring())
    _connect(host, monitor, auth_username=RO_USER, keyring=_ro_keyring(
        key=base64.b64encode(b"made again").decode()))
    assert host.conn.secrets[SECRET].value() == b"made again"
    assert host.conn.defined == 1


def test_a_compute_without_the_volumes_key_fails_naming_the_identity(
        host, monitor):
    """No keyring in the connection (an older volume service, a key
    removed) and none on the host: the attach fails, the error names the
    volume's identity, and no secret is defined."""
    with pytest.raises(exception.VirtDriverError) as e:
        _connect(host, monitor, auth_username=RO_USER)
    assert "client.%s" % RO_USER in str(e.value)
    assert host.conn.secrets == {}
    # a keyring of another user only: refused, naming the user wanted
    with pytest.raises(exception.VirtDriverError) as e:
        _connect(host, monitor, auth_username=RO_USER,
                 keyring=_ro_keyring(user="volattach-readonly-v2"))
    assert "client.%s" % RO_USER in str(e.value)
    assert host.conn.secrets == {}


def test_a_failed_attach_names_the_image_and_the_user():
    """QEMU refused by the cluster (a revoked key): the reason names the
    identity the disk opened the image as."""
    info = _info(auth_username=RO_USER)
    reason = volume.volume_driver(info).attach_failure(
        info, Exception("error connecting: Permission denied"))
    assert reason == ("error connecting: Permission denied (rbd image "
                      "volumes/volume-v1 as client.%s)" % RO_USER)
