"""volume.backend: [volume] enabled_backends parsing, and the routing of
volume types and per-volume calls to the backends."""
import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import exception
from volattach.volume import backend
from volattach.volume.backends import file as file_backend


def make_conf(tmp_path, text):
    path = tmp_path / "volattach.conf"
    path.write_text(text)
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf(["--config-file", str(path)], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    return conf


TWO = """
[volume]
enabled_backends = fake-1, file-1

[fake-1]
volume_backend = fake
volume_backend_name = gold
shared_targets = true

[file-1]
volume_backend = file
volumes_dir = %s
export_port = 10999
"""


def test_two_sections_make_two_backends(tmp_path):
    conf = make_conf(tmp_path, TWO % (tmp_path / "files"))
    backends = backend.load_backends(conf, "svc")
    assert backends.names == ["gold", "file-1"]     # name: section default
    assert backends.kinds == {"gold": "fake", "file-1": "file"}
    fake, files = backends.by_name["gold"], backends.by_name["file-1"]
    assert isinstance(fake, backend.FakeISCSIBackend) and fake.shared_targets
    assert isinstance(files, file_backend.FileBackend)
    assert files.volumes_dir == str(tmp_path / "files")
    assert files.export_port == 10999
    assert files.create_volume({"id": "v1", "size": 1}) == \
        "svc@file-1#file-1"
    assert (tmp_path / "files" / "volume-v1").stat().st_size == 1 << 30


def test_without_enabled_backends_the_single_backend_stays(tmp_path):
    conf = make_conf(tmp_path, "[volume]\nbackend_name = lvm\n")
    backends = backend.load_backends(conf, "svc")
    assert backends.names == ["lvm"] and backends.kinds == {"lvm": "fake"}
    router = backend.BackendRouter(backends)
    # a volume of another backend name still goes to the one backend
    assert router.create_volume({"id": "v", "host": "old@other#other"}) == \
        "svc@lvm#lvm"
    # the one backend's own connector check (fake: initiator needed)
    with pytest.raises(exception.InvalidInput, match="initiator"):
        router.check_connector({"host": "c1"})


@pytest.mark.parametrize("text, message", [
    ("[volume]\nenabled_backends = nope\n",
     "enabled_backends names 'nope', but the configuration has no [nope] "
     "section"),
    ("[volume]\nenabled_backends = b1\n[b1]\nvolume_backend_name = x\n",
     "[b1] has no volume_backend"),
    ("[volume]\nenabled_backends = b1\n[b1]\nvolume_backend = lvm\n",
     "[b1] volume_backend:"),
    ("[volume]\nenabled_backends = b1, b1\n[b1]\nvolume_backend = fake\n",
     "names a backend twice"),
    ("[volume]\nenabled_backends = b1, b2\n[b1]\nvolume_backend = fake\n"
     "volume_backend_name = x\n[b2]\nvolume_backend = fake\n"
     "volume_backend_name = x\n",
     "[b1] and [b2] have the same volume_backend_name 'x'"),
])
def test_bad_sections_are_refused_naming_them(tmp_path, text, message):
    conf = make_conf(tmp_path, text)
    with pytest.raises(backend.BackendConfigError) as err:
        backend.load_backends(conf, "svc")
    assert message in str(err.value)


def test_a_file_section_exporting_off_loopback_without_tls_is_refused(
        tmp_path):
    conf = make_conf(tmp_path, "[volume]\nenabled_backends = f\n[f]\n"
                     "volume_backend = file\nexport_host = 10.250.0.1\n"
                     "volumes_dir = %s\n" % (tmp_path / "f"))
    with pytest.raises(file_backend.InsecureNBD, match=r"\[f\]"):
        backend.load_backends(conf, "svc")


class Recording:
    """A backend recording the calls it gets."""

    def __init__(self, name, needs_remaining=False):
        self.name, self.calls = name, []
        self.needs_remaining = needs_remaining

    def create_volume(self, volume):
        self.calls.append(("create", volume["id"]))
        return "svc@%s#%s" % (self.name, self.name)

    def delete_volume(self, volume):
        self.calls.append(("delete", volume["id"]))

    def check_connector(self, connector):
        if "initiator" not in connector and self.name == "a":
            raise exception.InvalidInput(reason="initiator")

    def initialize_connection(self, volume, attachment_id, connector, mode):
        self.calls.append(("connect", volume["id"], mode))
        return {"driver_volume_type": self.name}

    def terminate_connection(self, volume, attachment, connector, **extra):
        self.calls.append(("disconnect", volume["id"], sorted(extra)))

    def restore(self, attachments):
        self.calls.append(("restore", [a["id"] for a in attachments]))


@pytest.fixture
def two():
    a, b = Recording("a"), Recording("b", needs_remaining=True)
    return a, b, backend.Backends([("a", "fake", a), ("b", "file", b)])


def test_types_choose_by_volume_backend_name(two):
    _, _, backends = two
    assert backends.name_for_type({}) == "a"       # default: the first
    assert backends.name_for_type({"volume_backend_name": "b"}) == "b"
    with pytest.raises(backend.NoValidBackend, match="'c'"):
        backends.name_for_type({"volume_backend_name": "c"})


def test_per_volume_calls_go_to_the_volume_backend(two):
    a, b, backends = two
    router = backend.BackendRouter(backends)
    on_b = {"id": "vb", "host": "svc@b#b"}
    on_a = {"id": "va", "host": "svc@a#a"}
    router.delete_volume(on_b)
    assert router.initialize_connection(on_a, "att", {"initiator": "i",
                                                      "host": "c"},
                                        "rw") == {"driver_volume_type": "a"}
    router.terminate_connection(on_b, {}, {}, remaining=[])
    router.terminate_connection(on_a, {}, {}, remaining=[])
    router.restore([dict(on_a, id="att-a"), dict(on_b, id="att-b")])
    assert a.calls == [("connect", "va", "rw"), ("disconnect", "va", []),
                       ("restore", ["att-a"])]
    assert b.calls == [("delete", "vb"), ("disconnect", "vb", ["remaining"]),
                       ("restore", ["att-b"])]
    assert router.needs_remaining
    # the volume's own backend checks the connector it needs
    with pytest.raises(exception.InvalidInput):
        router.initialize_connection(on_a, "att", {"host": "c"}, "rw")
    with pytest.raises(exception.InvalidInput, match="host"):
        router.check_connector({"initiator": "i"})


@pytest.mark.parametrize("host, name", [
    ("svc@b#b", "b"), ("svc@a#a", "a"), (None, "a"), ("svc", "a"),
    ("svc@gone#gone", "a")])
def test_volume_backend_from_its_host(two, host, name):
    assert two[2].name_of_volume({"host": host}) == name
