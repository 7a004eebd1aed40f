"""The rbd backend against a real single-node Ceph (tools/start-ceph.sh):
images in the pool, multiattach features, Cinder's RBD connection keys,
and the read-only identity whose writes the cluster refuses.

Without a running cluster the tests skip, except under CI (``CI=true``),
where they fail.  Each test's images and the test's read-only user are
removed at the end; keyrings go to a copy of the configuration's
directory, not /etc/ceph."""
import errno
import json
import os
import shutil
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
    for volume in made:
        _mon(admin, {"prefix": "auth del",
                     "entity": "client.%s-%s" % (ro_user, volume["id"])})
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
    # read-write connections name the attach user (rbd_attach_user), not
    # the service's own
    backend.attach_user, backend.secret_uuid = "volattach", "a-secret"
    info = backend.initialize_connection(volume, "att-1", CONNECTOR, "rw")
    assert (info["auth_enabled"], info["auth_username"],
            info["secret_uuid"]) == (True, "volattach", "a-secret")
    assert "keyring" not in info


def test_connector_without_host_is_invalid(backend):
    with pytest.raises(exception.InvalidInput, match="host"):
        backend.initialize_connection(_volume(), "a", {"initiator": "x"},
                                      "rw")


def _identity(admin, user):
    """The cephx user's caps, or None when the cluster has no such user."""
    ret, out, _ = _mon(admin, {"prefix": "auth get",
                               "entity": "client.%s" % user,
                               "format": "json"})
    return json.loads(out)[0]["caps"] if ret == 0 else None


@pytest.fixture
def as_identity(bindings, tmp_path):
    """Connect to the cluster as a cephx user with its own key (a temporary
    keyring, removed with the test's directory)."""
    rados, _ = bindings
    clients = []

    def connect(user, keyring_text):
        path = tmp_path / ("identity-%d.keyring" % len(clients))
        path.write_text(keyring_text)
        path.chmod(0o600)
        client = rados.Rados(conffile=CEPH_CONF, rados_id=user,
                             conf={"keyring": str(path),
                                   "client_mount_timeout": "5"})
        client.connect(timeout=5)
        clients.append(client)
        path.unlink()
        return client
    yield connect
    for client in clients:
        client.shutdown()


def _written(admin, bindings, volume, data):
    io, image = _image(admin, bindings, volume)
    image.write(data.ljust(4096, b"\0"), 0)
    image.close()
    io.close()


def test_read_only_connection_carries_the_volumes_own_identity(
        backend, admin, conf_dir):
    volume = _volume(multiattach=True)
    backend.create_volume(volume)
    before = sorted(os.listdir(conf_dir))
    info = backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    user = "%s-%s" % (backend.readonly_user, volume["id"])
    assert (info["access_mode"], info["auth_enabled"],
            info["auth_username"]) == ("ro", True, user)
    assert info["secret_uuid"] == backend.readonly_secret_uuid(
        admin.get_fsid(), user) != admin.get_fsid()
    assert "[client.%s]" % user in info["keyring"]
    # the key is in the connection only: no keyring file anywhere here
    assert sorted(os.listdir(conf_dir)) == before
    assert not os.path.exists("/etc/ceph/ceph.client.%s.keyring" % user)
    caps = _identity(admin, user)
    assert caps["mon"] == "allow service mon r, allow service osd r"
    assert "profile" not in caps["osd"]
    # a second connection of the volume gets the same identity and key
    again = backend.initialize_connection(volume, "att-ro2", CONNECTOR, "ro")
    assert again["keyring"] == info["keyring"]
    # each volume has its own
    other = _volume(multiattach=True)
    backend.create_volume(other)
    theirs = backend.initialize_connection(other, "att-x", CONNECTOR, "ro")
    assert theirs["auth_username"] != user
    assert theirs["secret_uuid"] != info["secret_uuid"]


def test_read_only_identity_reads_its_image_and_the_cluster_refuses_the_rest(
        backend, admin, bindings, as_identity):
    """With the identity's own key: QEMU's way of opening the image (a
    read-write open in librbd) and reading works; the cluster refuses its
    writes, resizes and snapshots, and any access to another image."""
    rados, rbd = bindings
    volume, other = _volume(multiattach=True), _volume()
    backend.create_volume(volume)
    backend.create_volume(other)
    _written(admin, bindings, volume, b"written by the owner")
    _written(admin, bindings, other, b"someone else's data")
    info = backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    client = as_identity(info["auth_username"], info["keyring"])
    io = client.open_ioctx(POOL)
    admin_io = admin.open_ioctx(POOL)
    try:
        with rbd.Image(admin_io, rbd_backend.image_name(other)) as image:
            other_id = image.id()
        with rbd.Image(io, rbd_backend.image_name(volume)) as image:
            own_id = image.id()
            assert image.read(0, 20) == b"written by the owner"
            with pytest.raises(rbd.PermissionError):
                image.write(b"x" * 512, 0)
                image.flush()
            with pytest.raises((rbd.PermissionError, rbd.ReadOnlyImage)):
                image.resize(2 * 1024 ** 3)
            with pytest.raises((rbd.PermissionError, rbd.ReadOnlyImage)):
                image.create_snap("snap")
        # its data and object map, raw
        with pytest.raises(rados.PermissionError):
            io.write_full("rbd_data.%s.0000000000000000" % own_id, b"x")
        with pytest.raises(rados.PermissionError):
            io.remove_object("rbd_data.%s.0000000000000000" % own_id)
        with pytest.raises(rados.PermissionError):
            io.remove_object("rbd_id.%s" % rbd_backend.image_name(volume))
        # another image: neither opened nor touched, header or data
        with pytest.raises(rbd.PermissionError):
            rbd.Image(io, rbd_backend.image_name(other))
        for obj in ("rbd_header.%s" % other_id,
                    "rbd_data.%s.0000000000000000" % other_id):
            with pytest.raises(rados.PermissionError):
                io.read(obj, 16)
            with pytest.raises(rados.PermissionError):
                io.write_full(obj, b"overwritten")
            with pytest.raises(rados.PermissionError):
                io.remove_object(obj)
        with pytest.raises(rados.PermissionError):
            with rados.WriteOpCtx() as op:
                io.set_omap(op, ("evil",), (b"x",))
                io.operate_write_op(op, "rbd_header.%s" % other_id)
        # nor listed: the pool's objects and images
        assert list(io.list_objects()) == []    # (the binding hides EPERM)
        with pytest.raises((rbd.PermissionError, rados.PermissionError)):
            rbd.RBD().list(io)
        # the monitors: no blocklisting (profile rbd's), no keys
        ret, _, _ = client.mon_command(json.dumps(
            {"prefix": "osd blocklist", "blocklistop": "add",
             "addr": "127.0.0.1:0/1", "expire": 1.0}), b"")
        assert ret == -errno.EACCES
        ret, _, _ = client.mon_command(json.dumps(
            {"prefix": "auth get", "entity": "client.admin"}), b"")
        assert ret == -errno.EACCES
    finally:
        io.close()
        admin_io.close()
    admin_io = admin.open_ioctx(POOL)
    try:
        with rbd.Image(admin_io, rbd_backend.image_name(volume)) as image:
            assert image.read(0, 20) == b"written by the owner"
            assert image.size() == 1024 ** 3
            assert list(image.list_snaps()) == []
        with rbd.Image(admin_io, rbd_backend.image_name(other)) as image:
            assert image.read(0, 19) == b"someone else's data"
    finally:
        admin_io.close()


def test_the_header_watch_is_the_identitys_only_write(backend):
    """The write cap is on the image's own header alone (QEMU's watch);
    every other grant is a read (checked against the cluster above)."""
    caps = dict(zip(*[iter(backend.readonly_caps("volume-x", "abc123"))] * 2))
    grants = [g.strip() for g in caps["osd"].split(",")]
    writable = [g for g in grants if g.split()[1] != "r"]
    assert writable == ["allow rw class-read pool=%s object_prefix "
                        "rbd_header.abc123" % POOL]
    assert "allow r class-read pool=%s object_prefix rbd_data.abc123." \
        % POOL in grants


def test_identity_removed_after_the_last_read_only_disconnect(
        backend, admin):
    volume = _volume(multiattach=True)
    backend.create_volume(volume)
    user = backend.readonly_identity(volume)
    backend.initialize_connection(volume, "ro-1", CONNECTOR, "ro")
    backend.initialize_connection(volume, "ro-2", CONNECTOR, "ro")
    ro1 = {"id": "ro-1", "attach_mode": "ro"}
    ro2 = {"id": "ro-2", "attach_mode": "ro"}
    rw = {"id": "rw-1", "attach_mode": "rw"}
    backend.terminate_connection(volume, ro1, CONNECTOR, remaining=[ro2, rw])
    assert _identity(admin, user) is not None       # ro-2 still reads
    backend.terminate_connection(volume, rw, CONNECTOR, remaining=[ro2])
    assert _identity(admin, user) is not None
    backend.terminate_connection(volume, ro2, CONNECTOR, remaining=[])
    assert _identity(admin, user) is None
    # the legacy os-terminate_connection knows no remaining: it stays
    backend.initialize_connection(volume, "ro-3", CONNECTOR, "ro")
    backend.terminate_connection(volume, {"id": None, "attach_mode": "ro"},
                                 CONNECTOR)
    assert _identity(admin, user) is not None
    # and goes with the volume
    backend.delete_volume(volume)
    assert _identity(admin, user) is None


def test_removed_identity_key_stops_working(backend, bindings,
                                            as_identity):
    """After the last disconnect the key a compute was given opens
    nothing."""
    rados, _ = bindings
    volume = _volume(multiattach=True)
    backend.create_volume(volume)
    info = backend.initialize_connection(volume, "ro-1", CONNECTOR, "ro")
    backend.terminate_connection(volume, {"id": "ro-1", "attach_mode": "ro"},
                                 CONNECTOR, remaining=[])
    with pytest.raises(rados.Error):
        as_identity(info["auth_username"], info["keyring"])


def test_read_only_identity_with_other_caps_is_corrected(backend, admin):
    volume = _volume()
    backend.create_volume(volume)
    user = backend.readonly_identity(volume)
    ret, _, err = _mon(admin, {"prefix": "auth get-or-create",
                               "entity": "client.%s" % user,
                               "caps": ["mon", "profile rbd",
                                        "osd", "profile rbd pool=%s" % POOL]})
    assert ret == 0, err
    backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    caps = _identity(admin, user)
    assert "profile" not in caps["osd"] and "profile" not in caps["mon"]


def test_qemu_reads_with_the_read_only_identity_and_cannot_write(
        backend, tmp_path):
    """QEMU's own rbd client (as the guest's disk uses it): reads, and
    the cluster refuses its write."""
    if shutil.which("qemu-io") is None:
        _unavailable("qemu-io is not installed (tools/start-libvirt.sh)")
    volume = _volume()
    backend.create_volume(volume)
    info = backend.initialize_connection(volume, "att-ro", CONNECTOR, "ro")
    keyring = tmp_path / "ro.keyring"
    keyring.write_text(info["keyring"])
    spec = "rbd:%s:id=%s:conf=%s:keyring=%s" % (
        info["name"], info["auth_username"], CEPH_CONF, keyring)
    try:
        read = subprocess.run(["qemu-io", "-f", "raw", "-r", "-c",
                               "read 0 4k", spec],
                              capture_output=True, text=True, timeout=60)
        assert read.returncode == 0, read.stdout + read.stderr
        write = subprocess.run(["qemu-io", "-f", "raw", "-c",
                                "write -P 0x55 0 4k", spec],
                               capture_output=True, text=True, timeout=60)
    finally:
        keyring.unlink()
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

class _FakeImage:
    def __init__(self, ids, name):
        self.image_id = ids[name]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def id(self):
        return self.image_id


@pytest.mark.parametrize("other_name,other_id,refused", [
    ("volume-b", "10ab", False),
    ("volume-b", "10abc9", True),       # its id extends ours: rbd_header.10abc*
    ("volume-a-copy", "77", True),      # its name extends ours: rbd_id.volume-a*
])
def test_an_image_the_prefixes_would_also_reach_is_refused(
        other_name, other_id, refused):
    """The caps' object prefixes (``rbd_header.<id>``, ``rbd_id.<name>``)
    would match another image whose id or name extends this one's: such
    a read-only attach is refused rather than given that image too."""
    ids = {"volume-a": "10abc", other_name: other_id}
    fake_rbd = type("rbd", (), {
        "Image": staticmethod(lambda io, name, read_only=False:
                              _FakeImage(ids, name)),
        "RBD": lambda: type("R", (), {"list2": staticmethod(
            lambda io: [{"name": n, "id": i} for n, i in ids.items()])})(),
    })
    be = rbd_backend.RBDBackend("rbd", "svc", POOL, CEPH_CONF, "ceph",
                                bindings=(object(), fake_rbd))
    if refused:
        with pytest.raises(exception.InvalidInput, match=other_name):
            be._image_id(None, "volume-a")
    else:
        assert be._image_id(None, "volume-a") == "10abc"
