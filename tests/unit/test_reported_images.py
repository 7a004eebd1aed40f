"""The images the computes report (issue 21 item 4): each driver lists what
it can boot, the Service object carries the list (1.1; a 1.0 peer never
sees it), a compute writes it when it registers and again when it changes,
and the compute API checks an imageRef against the union the up computes
report (api/compute/images.py), never a directory of its own host."""
import datetime
import types
import uuid

import pytest

import volattach  # noqa: F401
from volattach.api.compute import images as api_images
from volattach.compute.virt import fake
from volattach.compute.virt.libvirt import images as libvirt_images
from volattach.conf import CONF
from volattach.db.models import utcnow
from volattach import exception
from volattach import objects
from volattach.objects import service as service_obj
from volattach import service as service_mod

objects.register_all()

IMAGE_A = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
IMAGE_B = "2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11"
IMAGE_C = "8a4e00b0-0000-4000-8000-00000000000c"


# -- the drivers ---------------------------------------------------------------------

def _image(base, name, kernel=True):
    (base / name).mkdir()
    if kernel:
        (base / name / "kernel").write_bytes(b"k")


def test_libvirt_lists_the_image_directories_holding_a_kernel(tmp_path):
    _image(tmp_path, IMAGE_B)
    _image(tmp_path, IMAGE_A)
    _image(tmp_path, "no-kernel", kernel=False)
    (tmp_path / "a-file").write_bytes(b"x")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "kernel").write_bytes(b"k")
    assert libvirt_images.list_images(str(tmp_path)) == [IMAGE_A, IMAGE_B]
    # an image copied in later is listed at the next call
    _image(tmp_path, IMAGE_C)
    assert libvirt_images.list_images(str(tmp_path)) == [IMAGE_A, IMAGE_B, IMAGE_C]


def test_libvirt_lists_nothing_without_a_directory(tmp_path):
    assert libvirt_images.list_images(str(tmp_path / "missing")) == []
    (tmp_path / "file").write_bytes(b"x")
    assert libvirt_images.list_images(str(tmp_path / "file")) == []
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("image_dir", None, group="libvirt")
    try:
        assert libvirt_images.list_images() == []
    finally:
        CONF.clear_override("image_dir", group="libvirt")


def test_libvirt_lists_the_configured_image_dir(tmp_path):
    _image(tmp_path, IMAGE_A)
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("image_dir", str(tmp_path), group="libvirt")
    try:
        assert libvirt_images.list_images() == [IMAGE_A]
    finally:
        CONF.clear_override("image_dir", group="libvirt")


def test_fake_driver_lists_fake_images():
    CONF([], project="volattach", default_config_files=[])
    driver = fake.FakeDriver("h1")
    assert driver.list_images() == sorted(CONF.compute.fake_images)
    CONF.set_override("fake_images", [IMAGE_C], group="compute")
    try:
        assert driver.list_images() == [IMAGE_C]
    finally:
        CONF.clear_override("fake_images", group="compute")


# -- the object ----------------------------------------------------------------------

def _service(**kw):
    values = dict(id=1, uuid=str(uuid.uuid4()), host="h1",
                  binary="volattach-compute", topic="compute", report_count=0,
                  disabled=False, disabled_reason=None, forced_down=False,
                  version=service_obj.SERVICE_VERSION, rpc_version="1.9",
                  connector={"host": "h1"}, images=[IMAGE_A],
                  last_seen_up=None)
    values.update(kw)
    return objects.Service(None, **values)


def test_service_1_0_has_no_images():
    service = _service()
    data = service.obj_to_primitive(target_version="1.0")["volattach_object.data"]
    assert "images" not in data and data["host"] == "h1"
    data = service.obj_to_primitive()["volattach_object.data"]
    assert data["images"] == [IMAGE_A]


def test_service_row_holds_images_as_json():
    service = _service(images=[IMAGE_A, IMAGE_B])
    values = service._values(["images", "connector", "host"])
    assert values["images"] == '["%s", "%s"]' % (IMAGE_A, IMAGE_B)
    assert service._values(["images"]) != {"images": None}
    assert _service(images=None)._values(["images"]) == {"images": None}
    row = {"id": 1, "uuid": service.uuid, "host": "h1", "binary": "b",
           "topic": None, "report_count": 0, "disabled": False,
           "disabled_reason": None, "forced_down": False, "version": 11,
           "rpc_version": None, "connector": None, "images": values["images"],
           "last_seen_up": None, "created_at": None, "updated_at": None}
    assert service_obj.Service._from_row(None, row).images == [IMAGE_A, IMAGE_B]
    assert service_obj.Service._from_row(None, dict(row, images="[]")).images == []
    assert service_obj.Service._from_row(None, dict(row, images=None)).images is None


@pytest.mark.parametrize("version,images,reports", [
    (service_obj.IMAGES_REPORT_SERVICE_VERSION, [IMAGE_A], True),
    (service_obj.IMAGES_REPORT_SERVICE_VERSION, [], True),
    (service_obj.IMAGES_REPORT_SERVICE_VERSION, None, False),
    # an older compute's row: whatever a later one wrote there is not its
    (service_obj.IMAGES_REPORT_SERVICE_VERSION - 1, [IMAGE_A], False),
])
def test_a_compute_reports_images_from_service_version_11(version, images, reports):
    assert _service(version=version, images=images).reports_images is reports


# -- the compute's report --------------------------------------------------------------

class _Record:
    def __init__(self, images):
        self.images = images
        self.saves = []
        self.fail = False

    def save(self):
        if self.fail:
            raise ConnectionError("conductor unreachable")
        self.saves.append(self.images)


def _reporting_service(listing, reported=None):
    svc = service_mod.Service("volattach-compute", "h1", None, [], "1.9",
                              list_images=lambda: listing())
    svc.record = _Record(reported)
    svc._reported_images = reported
    return svc


def test_report_images_saves_only_a_change():
    current = [[IMAGE_A]]
    svc = _reporting_service(lambda: list(current[0]), [IMAGE_A])
    svc.report_images()
    assert svc.record.saves == []             # same list: no write
    current[0] = [IMAGE_A, IMAGE_B]
    svc.report_images()
    assert svc.record.saves == [[IMAGE_A, IMAGE_B]]
    svc.report_images()
    assert svc.record.saves == [[IMAGE_A, IMAGE_B]]


def test_a_listing_that_fails_keeps_the_last_report():
    def broken():
        raise PermissionError("image_dir: permission denied")
    svc = _reporting_service(broken, [IMAGE_A])
    svc.report_images()
    assert svc.record.saves == [] and svc.record.images == [IMAGE_A]
    # at registration it is None: the API then accepts any imageRef here
    assert svc._images() is None


def test_a_report_that_could_not_be_written_is_tried_again():
    svc = _reporting_service(lambda: [IMAGE_A, IMAGE_B], [IMAGE_A])
    svc.record.fail = True
    with pytest.raises(ConnectionError):
        svc.report_images()
    svc.record.fail = False
    svc.report_images()
    assert svc.record.saves == [[IMAGE_A, IMAGE_B]]


def test_register_writes_the_images_and_a_state_report_a_change(monkeypatch):
    """Through the Service object, as a compute registers (its row
    exists) and then reports on its heartbeat."""
    current = [[IMAGE_A]]
    written = []
    row = _service(images=None, version=10)
    monkeypatch.setattr(objects.Service, "get_by_host_and_binary",
                        classmethod(lambda cls, ctx, host, binary: row))
    monkeypatch.setattr(objects.Service, "save", lambda self: written.append(
        (sorted(self.obj_what_changed()), self.images)) or self.obj_reset_changes())
    monkeypatch.setattr(objects.Service, "heartbeat", lambda self: None)
    svc = service_mod.Service("volattach-compute", "h1", "compute", [], "1.9",
                              list_images=lambda: list(current[0]))
    svc.register()
    assert row.version == service_obj.SERVICE_VERSION
    assert written[-1][1] == [IMAGE_A] and "images" in written[-1][0]
    svc.report_images()
    assert len(written) == 1
    current[0] = [IMAGE_A, IMAGE_C]
    svc.report_images()
    assert written[-1] == (["images"], [IMAGE_A, IMAGE_C])


def test_a_service_without_images_reports_none():
    svc = service_mod.Service("volattach-conductor", "h1", None, [], "1.0")
    svc.record = _Record(None)
    svc.report_images()
    assert svc._images() is None and svc.record.saves == []


# -- the API's check ------------------------------------------------------------------

class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _row(host, images, version=service_obj.SERVICE_VERSION, up=True):
    seen = utcnow() - datetime.timedelta(seconds=0 if up else 3600)
    return types.SimpleNamespace(
        host=host, images=images, version=version, forced_down=False,
        last_seen_up=seen, updated_at=None, created_at=None,
        reports_images=(images is not None and version
                        >= service_obj.IMAGES_REPORT_SERVICE_VERSION))


@pytest.fixture
def computes(monkeypatch):
    """The compute rows ``ServiceList.get_all`` answers (a list to edit),
    and how many times it was read."""
    CONF([], project="volattach", default_config_files=[])
    rows = []
    reads = []

    def get_all(cls, context, binary=None, host=None):
        assert binary == "volattach-compute"
        reads.append(binary)
        return list(rows)
    monkeypatch.setattr(objects.ServiceList, "get_all", classmethod(get_all))
    return types.SimpleNamespace(rows=rows, reads=reads)


def _refused(check, image):
    with pytest.raises(exception.InvalidInput) as caught:
        check.check(None, image)
    assert caught.value.format_message() == "Image %s could not be found." % image


def test_an_image_of_an_up_compute_is_accepted_and_others_refused(computes):
    computes.rows += [_row("c1", [IMAGE_A]), _row("c2", [IMAGE_B]),
                      _row("c3", [IMAGE_C], up=False)]
    check = api_images.ReportedImages()
    check.check(None, IMAGE_A)
    check.check(None, IMAGE_B)
    _refused(check, IMAGE_C)          # only a down compute has it
    _refused(check, str(uuid.uuid4()))
    check.check(None, "")             # boot from volume: no image
    check.check(None, None)


def test_an_up_compute_that_reports_no_list_lets_any_image_through(computes):
    computes.rows += [_row("new", [IMAGE_A]),
                      _row("old", [IMAGE_B],
                           version=service_obj.IMAGES_REPORT_SERVICE_VERSION - 1)]
    check = api_images.ReportedImages()
    check.check(None, IMAGE_C)
    # once the old compute is down, only what the new one reports passes
    computes.rows[1] = _row("old", None, version=10, up=False)
    check.clear()
    check.check(None, IMAGE_A)
    _refused(check, IMAGE_C)
    _refused(check, IMAGE_B)


def test_no_compute_up_refuses_nothing(computes):
    """An API that answers before its computes registered (separate
    daemons) must not refuse a valid image."""
    check = api_images.ReportedImages()
    check.check(None, IMAGE_C)
    computes.rows.append(_row("c1", [IMAGE_A], up=False))
    check.clear()
    check.check(None, IMAGE_C)


def test_known_images_are_answered_from_a_read_younger_than_ttl(computes):
    computes.rows.append(_row("c1", [IMAGE_A, IMAGE_B]))
    clock = _Clock()
    check = api_images.ReportedImages(ttl=3.0, clock=clock)
    check.check(None, IMAGE_A)
    check.check(None, IMAGE_B)
    clock.now += 2.9
    check.check(None, IMAGE_A)
    assert len(computes.reads) == 1
    clock.now += 0.2
    check.check(None, IMAGE_A)
    assert len(computes.reads) == 2


def test_an_unknown_image_is_read_again_before_the_400(computes):
    """A compute that has just reported an image is never refused from
    the cache."""
    computes.rows.append(_row("c1", [IMAGE_A]))
    clock = _Clock()
    check = api_images.ReportedImages(ttl=3.0, clock=clock)
    check.check(None, IMAGE_A)
    computes.rows[0] = _row("c1", [IMAGE_A, IMAGE_C])
    check.check(None, IMAGE_C)        # within the ttl, yet seen
    assert len(computes.reads) == 2
    _refused(check, IMAGE_B)
    assert len(computes.reads) == 3


def test_only_a_reported_image_is_answered_from_the_cache(computes):
    """An image let through because a compute reported no list is decided
    again at the next question: that compute may have reported since."""
    computes.rows += [_row("new", [IMAGE_A]), _row("old", None, version=10)]
    clock = _Clock()
    check = api_images.ReportedImages(ttl=3.0, clock=clock)
    check.check(None, IMAGE_C)
    computes.rows[1] = _row("old", [IMAGE_B])     # upgraded, reported
    _refused(check, IMAGE_C)
    check.check(None, IMAGE_B)
    assert len(computes.reads) == 2


def test_a_rebuild_checks_the_image_on_the_servers_own_host(computes, monkeypatch):
    rows = {"c1": _row("c1", [IMAGE_A]), "c2": _row("c2", [IMAGE_B]),
            "old": _row("old", None, version=10)}
    computes.rows.extend(rows.values())
    monkeypatch.setattr(objects.Service, "get_by_host_and_binary", classmethod(
        lambda cls, ctx, host, binary: rows.get(host)))
    check = api_images.ReportedImages()
    check.check(None, IMAGE_A, host="c1")
    # c2 has it, but the rebuild stays on c1
    with pytest.raises(exception.InvalidInput) as caught:
        check.check(None, IMAGE_B, host="c1")
    assert caught.value.format_message() == "Image %s could not be found." % IMAGE_B
    # a host that reports no list: as for a create
    check.check(None, IMAGE_B, host="old")
    check.check(None, IMAGE_C, host="old")
