"""imageRefs are checked against the images the computes report (issue 21
item 4): each compute writes its driver's list (the fake driver's
[compute] fake_images) into its services row when it registers, before
volattach-all serves the API, and again on its state report when it
changed.  An imageRef no up compute reports is 400 (Nova's message) and
stores nothing; boot from volume needs no image; while an up compute
reports no list (one older than service version 11) any imageRef is
accepted and the build decides."""
import time
import uuid

import pytest

from tests.integration import client as clients
from volattach import context
from volattach import objects
from volattach import servicegroup
from volattach.conf import CONF
from volattach.objects import service as service_obj


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url,
                                 "alice:images-%s" % uuid.uuid4().hex[:8])


def _servers(api):
    status, body, _ = api.request("GET", "/servers")
    assert status == 200, body
    return body["servers"]


def _computes():
    return objects.ServiceList.get_all(context.get_admin_context(),
                                       binary="volattach-compute")


def _wait_reported(image, timeout=15):
    """Until every compute's row lists ``image`` (its next state report)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = _computes()
        if rows and all(image in (s.images or []) for s in rows):
            return rows
        assert time.monotonic() < deadline, [(s.host, s.images) for s in rows]
        time.sleep(0.2)


def test_every_compute_reports_its_images(deployment):
    rows = {s.host: s for s in _computes()}
    assert sorted(rows) == sorted(CONF.all.compute_hosts)
    for service in rows.values():
        assert service.version == service_obj.SERVICE_VERSION
        assert service.images == sorted(CONF.compute.fake_images)
        assert service.reports_images


def test_unknown_image_is_400_and_stores_nothing(api):
    unknown = str(uuid.uuid4())
    status, body, _ = api.create_server(name="nope", image_ref=unknown,
                                        microversion="2.37")
    assert status == 400, body
    assert body["badRequest"]["message"] == \
        "Image %s could not be found." % unknown
    assert _servers(api) == []


def test_an_image_added_later_is_reported_and_boots(api):
    extra = str(uuid.uuid4())
    status, body, _ = api.create_server(name="nope", image_ref=extra,
                                        microversion="2.37")
    assert status == 400, body
    CONF.set_override("fake_images", CONF.compute.fake_images + [extra],
                      group="compute")
    try:
        _wait_reported(extra)
        status, body, _ = api.create_server(name="yes", image_ref=extra,
                                            microversion="2.37")
        assert status == 202, body
        server = api.wait_for_server_status(body["server"]["id"], "ACTIVE")
        assert server["image"]["id"] == extra
    finally:
        CONF.clear_override("fake_images", group="compute")
    for image in CONF.compute.fake_images:
        status, body, _ = api.create_server(name=image[:8], image_ref=image,
                                            microversion="2.37")
        assert status == 202, body
    # the image is gone from the list: refused again once reported
    rows = _computes()
    deadline = time.monotonic() + 15
    while any(extra in (s.images or []) for s in rows):
        assert time.monotonic() < deadline, [(s.host, s.images) for s in rows]
        time.sleep(0.2)
        rows = _computes()
    # the API remembers a reported image for at most UP_CACHE_SECONDS
    time.sleep(servicegroup.UP_CACHE_SECONDS)
    status, body, _ = api.create_server(name="gone", image_ref=extra,
                                        microversion="2.37")
    assert status == 400, body


def test_an_up_compute_that_reports_no_list_lets_any_image_through(api):
    """compute1's row as a compute of the release before wrote it (service
    version 10, no images): the API cannot tell what it boots, so it
    accepts an image no compute reports; the build decides."""
    ctxt = context.get_admin_context()
    row = objects.Service.get_by_host_and_binary(ctxt, "compute1",
                                                 "volattach-compute")
    row.version = service_obj.IMAGES_REPORT_SERVICE_VERSION - 1
    row.images = None
    row.save()
    unknown = str(uuid.uuid4())
    try:
        status, body, _ = api.create_server(name="old", image_ref=unknown,
                                            microversion="2.37")
        assert status == 202, body
        api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    finally:
        row.version = service_obj.SERVICE_VERSION
        row.images = sorted(CONF.compute.fake_images)
        row.save()
    status, body, _ = api.create_server(name="new", image_ref=unknown,
                                        microversion="2.37")
    assert status == 400, body
