"""The rbd backend against a real single-node Ceph (tools/start-ceph.sh):
images in the pool, multiattach features, Cinder's RBD connection keys,
and the read-only identity whose writes the cluster refuses.

Without a running cluster the tests skip, except under CI (``CI=true``),
where they fail.  Each test's images and the test's read-only user are
removed at the end; keyrings go to a copy of the configuration's
directory, not /etc/ceph."""
import json
import os
import shutil
import stat
import subprocess
import uuid

import pytest

from volattach import exception
from volattach.volume.backends import rbd as rbd_backend

CEPH_CONF = os.environ.get("VOLATTACH_TEST_CEPH_CONF", "/etc/ceph/ceph.conf")
POOL = os.environ.get("VOLATTACH_TEST_CEPH_POOL", "volumes")
CONNECTOR = {"host": "compute1", "initiator": "iqn.x"}


def _unavailable(reason):
    if os.environ.get("CI") == "true":
        pytest.fail("the rbd backend tests cannot run under CI: %s" % reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def bindings():
    try:
        return rbd_backend.load_bindings()
    except exception.ServiceUnavailable as e:
        _unavailable(str(e))


@pytest.fixture(scope="module")
def admin(bindings):
    rados, _ = bindings
    if not os.path.exists(CEPH_CONF):
        _unavailable("no %s (tools/start-ceph.sh)" % CEPH_CONF)
    client = rados.Rados(conffile=CEPH_CONF,
                         conf={"client_mount_timeout": "5"})
    try:
        client.connect(timeout=5)
    except rados.Error as e:
        _unavailable("Ceph is not running (tools/start-ceph.sh): %s" % e)
    yield client
    client.shutdown()


@pytest.fixture
def conf_dir(tmp_path, admin):
    """A copy of the cluster's configuration directory: the backend
    writes its keyrings beside the configuration."""
    for name in os.listdir(os.path.dirname(CEPH_CONF)):
        path = os.path.join(os.path.dirname(CEPH_CONF), name)
        if os.path.isfile(path):
            shutil.copy(path, tmp_path / name)
    return tmp_path


@pytest.fixture
def backend(bindings, conf_dir, admin):
    ro_user = "volattach-test-ro-%s" % uuid.uuid4().hex[:8]
    be = rbd_backend.RBDBackend(
        "rbd", "svc", POOL, str(conf_dir / "ceph.conf"), "ceph",
        readonly_user=ro_user, connect_timeout=5, bindings=bindings)
    made = []
    original = be.create_volume

    def create(volume):
        made.append(volume)
        return original(volume)
    be.create_volume = create
    yield be
    for volume in made:
        be.delete_volume(volume)
    _mon(admin, {"prefix": "auth del", "entity": "client." + ro_user})
    be._reset()


def _mon(client, cmd):
    return client.mon_command(json.dumps(cmd), b"")


def _volume(**fields):
    return dict({"id": str(uuid.uuid4()), "size": 1, "multiattach": False},
                **fields)


def _image(admin, bindings, volume):
    _, rbd = bindings
    io = admin.open_ioctx(POOL)
    return io, rbd.Image(io, rbd_backend.image_name(volume))


def test_volumes_are_images_in_the_pool(backend, admin, bindings):
    _, rbd = bindings
    volume = _volume(size=2)
    assert backend.create_volume(volume) == "svc@rbd#rbd"
    io, image = _image(admin, bindings, volume)
    try:
        assert image.size() == 2 * 1024 ** 3
        assert image.features() & rbd.RBD_FEATURE_EXCLUSIVE_LOCK
    finally:
        image.close()
    backend.delete_volume(volume)
    with pytest.raises(rbd.ImageNotFound):
        rbd.Image(io, rbd_backend.image_name(volume))
    backend.delete_volume(volume)       # gone already: nothing to do
    io.close()


def test_multiattach_images_drop_the_single_writer_features(
        backend, admin, bindings):
    _, rbd = bindings
    volume = _volume(multiattach=True)
    backend.create_volume(volume)
    io, image = _image(admin, bindings, volume)
    try:
        features = image.features()
    finally:
        image.close()
        io.close()
    for feature in ("EXCLUSIVE_LOCK", "OBJECT_MAP", "FAST_DIFF",
                    "JOURNALING"):
        assert not features & getattr(rbd, "RBD_FEATURE_" + feature), feature
    assert features & rbd.RBD_FEATURE_LAYERING


def test_read_write_connection_is_cinders(backend, admin):
    volume = _volume()
    backend.create_volume(volume)
    info = backend.initialize_connection(volume, "att-1", CONNECTOR, "rw")
    assert info == {
        "driver_volume_type": "rbd",
        "name": "%s/volume-%s" % (POOL, volume["id"]),
        "hosts": ["127.0.0.1"], "ports": ["6789"], "cluster_name": "ceph",
        "auth_enabled": False, "auth_username": None,
        "secret_type": "ceph", "secret_uuid": admin.get_fsid(),
        "volume_id": volume["id"], "discard": True, "access_mode": "rw",
        "attachment_id": "att-1", "encrypted": False, "qos_specs": None,
        "cacheable": False}
    backend.user, backend.secret_uuid = "admin", "a-secret"
    info = backend.initialize_connection(volume, "att-1", CONNECTOR, "rw")
    assert (info["auth_enabled"], info["auth_username"],
            info["secret_uuid"]) == (True, "admin", "a-secret")


def test_connector_without_host_is_invalid(backend):
    with pytest.raises(exception.InvalidInput, match="host"):
        backend.initialize_connection(_volume(), "a", {"initiator": "x"},
                                      "rw")


def test_read_only_connection_names_an_identity_the_cluster_holds_to_reads(
        backend, admin, bindings, conf_dir):
    rados, rbd = bindings
    volume = _volume(multiattach=True)
    backend.create_volume(volume)
    io, image = _image(admin, bindings, volume)
    image.write(b"written by the owner".ljust(512, b"\0"), 0)
    image.close()

    info = backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    user = backend.readonly_user
    assert (info["access_mode"], info["auth_enabled"],
            info["auth_username"]) == ("ro", True, user)
    assert info["secret_uuid"] == backend.readonly_secret_uuid(
        admin.get_fsid()) != admin.get_fsid()
    keyring = conf_dir / ("ceph.client.%s.keyring" % user)
    assert stat.S_IMODE(keyring.stat().st_mode) == 0o600
    assert "[client.%s]" % user in keyring.read_text()

    # that identity opens the image read-write (as QEMU does) and reads,
    # and the cluster refuses its write
    client = rados.Rados(conffile=str(conf_dir / "ceph.conf"), rados_id=user,
                         conf={"keyring": str(keyring),
                               "client_mount_timeout": "5"})
    client.connect(timeout=5)
    try:
        ro_io = client.open_ioctx(POOL)
        with rbd.Image(ro_io, rbd_backend.image_name(volume)) as image:
            assert image.read(0, 20) == b"written by the owner"
            with pytest.raises(rbd.PermissionError):
                image.write(b"x" * 512, 0)
                image.flush()
            # nor may it change the image's metadata (a resize)
            with pytest.raises((rbd.PermissionError, rbd.ReadOnlyImage)):
                image.resize(2 * 1024 ** 3)
        ro_io.close()
    finally:
        client.shutdown()
    with rbd.Image(io, rbd_backend.image_name(volume)) as image:
        assert image.read(0, 20) == b"written by the owner"
        assert image.size() == 1024 ** 3
    io.close()


def test_read_only_identity_with_other_caps_is_corrected(backend, admin):
    entity = "client.%s" % backend.readonly_user
    ret, _, err = _mon(admin, {"prefix": "auth get-or-create",
                               "entity": entity,
                               "caps": ["mon", "profile rbd",
                                        "osd", "profile rbd pool=%s" % POOL]})
    assert ret == 0, err
    volume = _volume()
    backend.create_volume(volume)
    backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    ret, out, err = _mon(admin, {"prefix": "auth get", "entity": entity,
                                 "format": "json"})
    assert ret == 0, err
    caps = json.loads(out)[0]["caps"]
    assert caps["osd"].startswith("profile rbd-read-only pool=%s" % POOL)


def test_qemu_cannot_write_with_the_read_only_identity(backend, conf_dir):
    """QEMU's own rbd client (as the guest's disk uses it): reads, and
    the cluster refuses its write."""
    if shutil.which("qemu-io") is None:
        _unavailable("qemu-io is not installed (tools/start-libvirt.sh)")
    volume = _volume()
    backend.create_volume(volume)
    backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    spec = "rbd:%s/%s:id=%s:conf=%s:keyring=%s" % (
        POOL, rbd_backend.image_name(volume), backend.readonly_user,
        conf_dir / "ceph.conf",
        conf_dir / ("ceph.client.%s.keyring" % backend.readonly_user))
    read = subprocess.run(["qemu-io", "-f", "raw", "-r", "-c", "read 0 4k",
                           spec], capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stdout + read.stderr
    write = subprocess.run(["qemu-io", "-f", "raw", "-c",
                            "write -P 0x55 0 4k", spec],
                           capture_output=True, text=True, timeout=60)
    assert "Operation not permitted" in write.stdout + write.stderr, \
        write.stdout + write.stderr


def test_cluster_down_is_service_unavailable(bindings, tmp_path):
    (tmp_path / "ceph.conf").write_text(
        "[global]\nmon host = 127.0.0.1:9\nauth client required = none\n")
    be = rbd_backend.RBDBackend("rbd", "svc", POOL,
                                str(tmp_path / "ceph.conf"), "ceph",
                                connect_timeout=1, bindings=bindings)
    with pytest.raises(exception.ServiceUnavailable, match="Ceph"):
        be.initialize_connection(_volume(), "a", CONNECTOR, "rw")
    with pytest.raises(exception.ServiceUnavailable):
        be.create_volume(_volume())


def test_missing_bindings_name_the_packages(tmp_path, monkeypatch):
    with pytest.raises(ImportError):
        rbd_backend._load_extension("rados", [str(tmp_path)])
    monkeypatch.setitem(__import__("sys").modules, "rados", None)
    monkeypatch.setitem(__import__("sys").modules, "rbd", None)
    with pytest.raises(exception.ServiceUnavailable,
                       match="python3-rados python3-rbd"):
        rbd_backend.load_bindings(dirs=[str(tmp_path)])


def test_keyring_written_only_when_changed(tmp_path):
    path = tmp_path / "k"
    rbd_backend.RBDBackend._write_keyring(str(path), b"one")
    mtime = path.stat().st_mtime_ns
    rbd_backend.RBDBackend._write_keyring(str(path), b"one")
    assert path.stat().st_mtime_ns == mtime
    rbd_backend.RBDBackend._write_keyring(str(path), b"two")
    assert path.read_bytes() == b"two"


@pytest.mark.parametrize("mon_host,addresses", [
    ("[v2:127.0.0.1:3300,v1:127.0.0.1:6789]",
     [("127.0.0.1", 3300), ("127.0.0.1", 6789)]),
    ("10.0.0.1:6789, 10.0.0.2:6789",
     [("10.0.0.1", 6789), ("10.0.0.2", 6789)]),
    ("[v2:[::1]:3300,v1:[::1]:6789]", [("::1", 3300), ("::1", 6789)]),
    ("mon-a.example:6789", [("mon-a.example", 6789)]),
    ("10.0.0.1,10.0.0.2", []),          # default ports: not probed
])
def test_monitor_addresses_of_mon_host(mon_host, addresses):
    assert rbd_backend.mon_addresses(mon_host) == addresses


def test_extend_resizes_the_image_even_while_it_is_open(backend, admin,
                                                        bindings):
    volume = _volume(size=1)
    backend.create_volume(volume)
    io, image = _image(admin, bindings, volume)     # another client's open
    try:
        assert backend.online_extend is True
        backend.extend_volume(volume, 3, attached=True)
        assert image.size() == 3 * 1024 ** 3       # the open image learns it
        backend.extend_volume(volume, 2)            # never shrinks
        assert image.size() == 3 * 1024 ** 3
    finally:
        image.close()
        io.close()


def test_extend_of_a_missing_image_is_service_unavailable(backend):
    with pytest.raises(exception.ServiceUnavailable, match="resize"):
        backend.extend_volume(_volume(), 2)
