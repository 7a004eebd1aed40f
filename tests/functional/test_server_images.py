"""One image source for the fake driver: [compute] fake_images. An imageRef
outside it is 400 (Nova's message) and stores nothing; boot from volume
needs no image."""
import uuid

import pytest

from tests.integration import client as clients
from volattach.conf import CONF


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url,
                                 "alice:images-%s" % uuid.uuid4().hex[:8])


def _servers(api):
    status, body, _ = api.request("GET", "/servers")
    assert status == 200, body
    return body["servers"]


def test_unknown_image_is_400_and_stores_nothing(api):
    unknown = str(uuid.uuid4())
    status, body, _ = api.create_server(name="nope", image_ref=unknown,
                                        microversion="2.37")
    assert status == 400, body
    assert body["badRequest"]["message"] == \
        "Image %s could not be found." % unknown
    assert _servers(api) == []


def test_configured_images_boot(api):
    extra = str(uuid.uuid4())
    status, body, _ = api.create_server(name="nope", image_ref=extra,
                                        microversion="2.37")
    assert status == 400, body
    CONF.set_override("fake_images", CONF.compute.fake_images + [extra],
                      group="compute")
    try:
        status, body, _ = api.create_server(name="yes", image_ref=extra,
                                            microversion="2.37")
    finally:
        CONF.clear_override("fake_images", group="compute")
    assert status == 202, body
    server = api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    assert server["image"]["id"] == extra
    for image in CONF.compute.fake_images:
        status, body, _ = api.create_server(name=image[:8], image_ref=image,
                                            microversion="2.37")
        assert status == 202, body
