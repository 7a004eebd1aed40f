"""The compute's Glance image cache and boot source (imagecache.py,
boot.py, cache_manager.py) against a Glance stand-in over real HTTP
(tests/glance_standin.py): what is downloaded, verified, kept and removed,
and what a guest's root disk is made of."""
import hashlib
import json
import os
import subprocess
import threading
import types

import pytest

from volattach.compute.virt.libvirt import boot
from volattach.compute.virt.libvirt import cache_manager
from volattach.compute.virt.libvirt import imagecache
from volattach.conf import CONF
from volattach import exception
from volattach.image import glance

from tests.glance_standin import GlanceStandin

IMG = "0b9b7d4e-6a57-4b59-8c34-5d2f0a1e0001"
KERNEL = "0b9b7d4e-6a57-4b59-8c34-5d2f0a1e0002"
RAMDISK = "0b9b7d4e-6a57-4b59-8c34-5d2f0a1e0003"
DATA = os.urandom(300 * 1024)


@pytest.fixture
def standin():
    with GlanceStandin() as s:
        s.add(IMG, DATA, disk_format="raw")
        yield s


@pytest.fixture
def conf(standin):
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("endpoint", standin.url, group="glance")
    yield CONF
    CONF.clear_override("endpoint", group="glance")


@pytest.fixture
def cache(tmp_path, conf):
    return imagecache.ImageCache(str(tmp_path / "_base"),
                                 glance.GlanceClient(conf))


def _files(cache):
    try:
        return sorted(os.listdir(cache.base_dir))
    except FileNotFoundError:
        return []


def test_a_download_is_verified_kept_and_not_repeated(standin, cache):
    path = cache.fetch(standin.record(IMG))
    with open(path, "rb") as f:
        assert f.read() == DATA
    assert cache.fetch(standin.record(IMG)) == path
    assert standin.downloads[IMG] == 1
    assert _files(cache) == [IMG]


@pytest.mark.parametrize("fault, words", [
    ("hash", "hash"),
    ("truncated", "stopped"),
    ("empty", "0 bytes"),
    ("inactive", "queued"),
])
def test_a_bad_download_fails_and_leaves_nothing(standin, cache, fault,
                                                 words):
    if fault == "hash":
        standin.add(IMG, DATA, os_hash_value=hashlib.sha512(b"x").hexdigest())
    elif fault == "truncated":
        standin.truncate_at[IMG] = len(DATA) // 2
    elif fault == "empty":
        standin.add(IMG, b"")
    else:
        standin.add(IMG, DATA, status="queued")
    with pytest.raises(exception.VirtDriverError) as err:
        cache.fetch(standin.record(IMG))
    assert IMG in str(err.value) and words in str(err.value)
    assert _files(cache) == []


def test_a_full_disk_fails_the_download_and_leaves_nothing(standin, cache,
                                                           monkeypatch):
    real_open = open

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, chunk):
            raise OSError(28, "No space left on device")

    def full_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return Full(f) if imagecache.PART in str(path) else f

    monkeypatch.setattr("builtins.open", full_open)
    with pytest.raises(exception.VirtDriverError) as err:
        cache.fetch(standin.record(IMG))
    assert "No space left" in str(err.value)
    monkeypatch.undo()
    assert _files(cache) == []
    # and the next build can still download it
    assert cache.fetch(standin.record(IMG))


def test_two_builds_of_one_image_download_it_once(standin, cache):
    standin.hold[IMG] = threading.Event()
    results = []

    def build():
        results.append(cache.fetch(standin.record(IMG)))

    first = threading.Thread(target=build)
    first.start()
    # the first download is under way (the stand-in holds its answer)
    for _ in range(500):
        if standin.downloads.get(IMG):
            break
        threading.Event().wait(0.01)
    second = threading.Thread(target=build)
    second.start()
    # without the lock the second build would reach the stand-in too
    for _ in range(50):
        if standin.downloads.get(IMG, 0) > 1:
            break
        threading.Event().wait(0.01)
    standin.hold[IMG].set()
    first.join(10)
    second.join(10)
    assert standin.downloads[IMG] == 1
    assert len(results) == 2 and results[0] == results[1]


def test_unused_images_are_removed_once_old_enough(standin, cache):
    standin.add(KERNEL, b"k" * 1000, disk_format="aki")
    for image_id in (IMG, KERNEL):
        cache.fetch(standin.record(image_id))
    stale_part = os.path.join(cache.base_dir, KERNEL + imagecache.PART + "dead")
    open(stale_part, "w").close()
    now = os.stat(cache.path(IMG)).st_mtime
    cache._clock = lambda: now + 100
    # younger than the minimum age: kept
    assert cache.remove_unused(in_use=set(), max_age=1000) == []
    # old enough: the unused one goes, with the dead download; the used stays
    assert cache.remove_unused(in_use={IMG}, max_age=50) == [KERNEL]
    assert _files(cache) == [IMG]


def test_the_cache_manager_spares_the_images_guests_boot_from(standin, conf,
                                                             tmp_path):
    instances = tmp_path / "instances"
    cache = imagecache.ImageCache(str(instances / "_base"),
                                  glance.GlanceClient(conf))
    standin.add(KERNEL, b"k" * 1000, disk_format="aki")
    cache.fetch(standin.record(IMG))
    cache.fetch(standin.record(KERNEL))
    guest = instances / "guest1"
    guest.mkdir()
    (guest / boot.BASE_IMAGES_FILE).write_text(json.dumps([IMG]))
    conf.set_override("remove_unused_original_minimum_age_seconds", 0,
                      group="image_cache")
    try:
        assert cache_manager.run_once(cache) == [KERNEL]
    finally:
        conf.clear_override("remove_unused_original_minimum_age_seconds",
                            group="image_cache")
    assert _files(cache) == [IMG]


def _instance(image_ref):
    return types.SimpleNamespace(uuid="u1", image_ref=image_ref)


def test_a_glance_image_boots_from_an_overlay_on_the_cached_image(
        standin, cache, conf, tmp_path):
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                    str(tmp_path / "src.qcow2"), "8M"], check=True)
    data = (tmp_path / "src.qcow2").read_bytes()
    standin.add(KERNEL, b"k" * 1000, disk_format="aki")
    standin.add(RAMDISK, b"r" * 1000, disk_format="ari")
    standin.add(IMG, data, disk_format="qcow2", kernel_id=KERNEL,
                ramdisk_id=RAMDISK, os_command_line="console=ttyS0 quiet")
    idir = tmp_path / "guest"
    idir.mkdir()
    source = boot.prepare(_instance(IMG), str(idir), cache.client, cache)
    assert source.kernel == cache.path(KERNEL)
    assert source.initrd == cache.path(RAMDISK)
    assert source.cmdline == "console=ttyS0 quiet"
    assert source.root_format == "qcow2"
    info = json.loads(subprocess.run(
        ["qemu-img", "info", "--output=json", source.root],
        check=True, capture_output=True, text=True).stdout)
    assert info["format"] == "qcow2"
    assert info["backing-filename"] == cache.path(IMG)
    assert json.loads((idir / boot.BASE_IMAGES_FILE).read_text()) == [
        IMG, KERNEL, RAMDISK]


@pytest.mark.parametrize("fields, words", [
    ({"disk_format": "vmdk"}, "'vmdk'"),
    ({"disk_format": "qcow2", "kernel_id": KERNEL}, "aki"),
])
def test_an_image_that_cannot_boot_is_refused_by_name(standin, cache,
                                                      tmp_path, fields, words):
    standin.add(KERNEL, b"k" * 1000, disk_format="raw")
    standin.add(IMG, DATA, **fields)
    with pytest.raises(exception.VirtDriverError) as err:
        boot.prepare(_instance(IMG), str(tmp_path), cache.client, cache)
    assert words in str(err.value) and IMG in str(err.value)
    assert not os.path.exists(tmp_path / "disk")


def test_an_image_glance_does_not_have_is_named(cache, tmp_path):
    missing = "0b9b7d4e-6a57-4b59-8c34-5d2f0a1e0fff"
    with pytest.raises(exception.VirtDriverError) as err:
        boot.prepare(_instance(missing), str(tmp_path), cache.client, cache)
    assert "not found in Glance" in str(err.value)


def test_glance_unreachable_is_named(tmp_path, conf):
    conf.set_override("endpoint", "http://127.0.0.1:9", group="glance")
    cache = imagecache.ImageCache(str(tmp_path / "_base"),
                                  glance.GlanceClient(conf))
    with pytest.raises(exception.VirtDriverError) as err:
        boot.prepare(_instance(IMG), str(tmp_path), cache.client, cache)
    assert "could not be reached" in str(err.value)


def test_a_guest_boots_again_without_glance(standin, cache, conf, tmp_path):
    """A hard reboot or power on defines the domain again: it boots the
    files it booted before, without asking Glance (down, or the image
    deleted since)."""
    standin.add(KERNEL, b"k" * 1000, disk_format="aki")
    standin.add(IMG, DATA, disk_format="raw", kernel_id=KERNEL)
    idir = tmp_path / "guest"
    idir.mkdir()
    first = boot.prepare(_instance(IMG), str(idir), cache.client, cache)
    conf.set_override("endpoint", "http://127.0.0.1:9", group="glance")
    again = boot.prepare(_instance(IMG), str(idir), cache.client, cache)
    assert again == first
    # once a file it booted from is gone, Glance is asked again
    os.unlink(cache.path(KERNEL))
    with pytest.raises(exception.VirtDriverError) as err:
        boot.prepare(_instance(IMG), str(idir), cache.client, cache)
    assert "could not be reached" in str(err.value)
