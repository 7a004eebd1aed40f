"""The compute API's imageRef check against Glance (api/compute/images.py
GlanceImages), over real HTTP to a Glance stand-in: Nova's 400s for an
image that is missing, hidden from the caller or not active, 503 when
Glance does not answer."""
import types

import pytest

from volattach.api.compute import images
from volattach.conf import CONF
from volattach import exception
from volattach.image import glance

from tests.glance_standin import GlanceStandin

IMG = "7d1c4b0e-1f0a-4c55-9a11-3e2b9c0d0001"


def _ctx(project="demo", admin=False):
    return types.SimpleNamespace(project_id=project, is_admin=admin)


@pytest.fixture
def standin():
    with GlanceStandin() as s:
        yield s


@pytest.fixture
def check(standin):
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("endpoint", standin.url, group="glance")
    yield images.image_check()
    CONF.clear_override("endpoint", group="glance")


def test_glance_configured_means_glance_is_asked(check):
    assert isinstance(check, images.GlanceImages)
    CONF.clear_override("endpoint", group="glance")
    assert isinstance(images.image_check(), images.ReportedImages)


def test_an_active_public_image_is_accepted(standin, check):
    standin.add(IMG, b"x")
    check.check(_ctx(), IMG)


@pytest.mark.parametrize("fields, ctx", [
    (None, _ctx()),                                            # missing
    ({"visibility": "private", "owner": "other"}, _ctx()),     # another's
    ({"visibility": "shared", "owner": "other"}, _ctx()),      # not a member
])
def test_an_image_the_caller_cannot_see_is_not_found(standin, check, fields,
                                                     ctx):
    if fields is not None:
        standin.add(IMG, b"x", **fields)
    with pytest.raises(exception.InvalidInput) as err:
        check.check(ctx, IMG)
    assert err.value.message == "Image %s could not be found." % IMG


def test_a_private_image_is_seen_by_its_owner_an_admin_and_members(standin,
                                                                   check):
    standin.add(IMG, b"x", visibility="private", owner="demo")
    check.check(_ctx("demo"), IMG)
    check.check(_ctx("other", admin=True), IMG)
    standin.add(IMG, b"x", visibility="shared", owner="other")
    standin.members[(IMG, "demo")] = "accepted"
    check.check(_ctx("demo"), IMG)
    standin.members[(IMG, "demo")] = "pending"
    with pytest.raises(exception.InvalidInput):
        check.check(_ctx("demo"), IMG)


def test_an_image_that_is_not_active_is_refused(standin, check):
    standin.add(IMG, b"x", status="queued")
    with pytest.raises(exception.InvalidInput) as err:
        check.check(_ctx(), IMG)
    assert err.value.message == "Image %s is not active." % IMG


def test_glance_not_answering_is_503(check):
    CONF.set_override("endpoint", "http://127.0.0.1:9", group="glance")
    with pytest.raises(exception.ImageServiceUnavailable):
        check.check(_ctx(), IMG)


def test_visibility_rules():
    image = {"visibility": "community", "owner": "x"}
    assert glance.visible_to(image, "demo", False)
