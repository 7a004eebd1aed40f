"""The scheduler places a server only on a compute that can boot its image:
a compute that reports its images (service version 11) without it is
skipped; one that reports none (older) may have any."""
import datetime
import types

import pytest

import volattach  # noqa: F401
from volattach.conductor import scheduler
from volattach.conf import CONF
from volattach.db import api as db_api
from volattach.db.models import utcnow
from volattach import exception
from volattach import objects
from volattach.objects import service as service_obj

objects.register_all()

IMAGE_A = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
IMAGE_B = "2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11"


def _compute(host, images, version=service_obj.SERVICE_VERSION):
    return objects.Service(
        None, id=len(host), host=host, binary="volattach-compute",
        disabled=False, forced_down=False, version=version, images=images,
        last_seen_up=utcnow() - datetime.timedelta(seconds=1),
        created_at=None, updated_at=None)


@pytest.fixture
def computes(monkeypatch):
    CONF([], project="volattach", default_config_files=[])
    rows = []
    monkeypatch.setattr(objects.ServiceList, "get_all", classmethod(
        lambda cls, ctx, binary=None, host=None: list(rows)))
    # no servers anywhere: the host name breaks the tie
    monkeypatch.setattr(db_api, "instance_count_by_host", lambda hosts: {})
    return rows


def test_a_compute_without_the_image_is_not_picked(computes):
    computes += [_compute("a", [IMAGE_B]), _compute("b", [IMAGE_A])]
    assert scheduler.select_host(types.SimpleNamespace(), image_ref=IMAGE_A) == "b"
    assert scheduler.select_host(types.SimpleNamespace(), image_ref=IMAGE_B) == "a"
    # boot from volume: any
    assert scheduler.select_host(types.SimpleNamespace(), image_ref="") == "a"
    assert scheduler.select_host(types.SimpleNamespace()) == "a"


def test_a_compute_that_reports_no_list_may_have_any_image(computes):
    computes += [_compute("a", None, version=10), _compute("b", [IMAGE_B])]
    assert scheduler.select_host(types.SimpleNamespace(), image_ref=IMAGE_A) == "a"


def test_no_compute_with_the_image_is_no_valid_host(computes):
    computes += [_compute("a", [IMAGE_B]), _compute("b", [])]
    with pytest.raises(exception.NoValidHost):
        scheduler.select_host(types.SimpleNamespace(), image_ref=IMAGE_A)
