"""The API's os-begin_detaching of a detach when the volume service refuses
it (400, InvalidVolume) because another detach holds the volume: a
multiattach volume detaching with other attachments is detached without it
(and never rolled back by this detach); one back to in-use is asked again,
a bounded number of times; anything else fails as before."""
import uuid

import pytest

from tests.unit.api.test_compute_facade_volume_requests import (  # noqa: F401
    _Tasks, _bdm, _compute, _server, ctx, database)
from volattach.api.compute import volume_attachments
from volattach.api import compute as compute_api
from volattach import exception

REFUSED = exception.InvalidVolume(
    "Invalid volume: Unable to detach volume. Volume status must be 'in-use' "
    "and attach_status must be 'attached' to detach.")


class _Volumes:
    """begin_detaching answers from ``begins`` (an exception or None, one
    per call); get answers the volume ``views`` in turn."""

    def __init__(self, begins, views):
        self.begins, self.views = list(begins), list(views)
        self.calls = []

    def begin_detaching(self, ctx, volume_id):
        self.calls.append("begin_detaching")
        outcome = self.begins.pop(0)
        if outcome is not None:
            raise outcome

    def roll_detaching(self, ctx, volume_id):
        self.calls.append("roll_detaching")

    def get(self, ctx, volume_id):
        self.calls.append("get")
        return self.views.pop(0)


class _FailingTasks(_Tasks):
    def detach_volume(self, ctx, instance, volume_id):
        super().detach_volume(ctx, instance, volume_id)
        raise RuntimeError("the cast failed")


def _view(status, attachment_ids, multiattach=True):
    return {"status": status, "multiattach": multiattach,
            "attachments": [{"attachment_id": a, "server_id": str(uuid.uuid4())}
                            for a in attachment_ids]}


def _detach(ctx, volumes, tasks=None):
    _compute()
    server = _server()
    bdm = _bdm(server)
    api = compute_api.API(volume_api=volumes, compute_task_api=tasks or _Tasks())
    instance, bdms = api.get_with_bdms(ctx, server)
    return api, instance, bdm, bdms


def test_detaching_under_another_detach_goes_on_without_it(database, ctx):
    other = str(uuid.uuid4())
    volumes = _Volumes([REFUSED], [])
    api, instance, bdm, bdms = _detach(ctx, volumes)
    volumes.views.append(_view("detaching", [bdm["attachment_id"], other]))
    api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert volumes.calls == ["begin_detaching", "get"]
    assert api.compute_task_api.calls == [("detach_volume", bdm["volume_id"])]


def test_a_failed_cast_does_not_roll_back_the_other_detach(database, ctx):
    other = str(uuid.uuid4())
    volumes = _Volumes([REFUSED], [])
    api, instance, bdm, bdms = _detach(ctx, volumes, _FailingTasks())
    volumes.views.append(_view("detaching", [bdm["attachment_id"], other]))
    with pytest.raises(RuntimeError):
        api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert "roll_detaching" not in volumes.calls


def test_a_volume_back_in_use_is_asked_again(database, ctx):
    volumes = _Volumes([REFUSED, None], [])
    api, instance, bdm, bdms = _detach(ctx, volumes, _FailingTasks())
    volumes.views.append(_view("in-use", [bdm["attachment_id"]]))
    with pytest.raises(RuntimeError):
        api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    # this detach made the volume detaching: its failure rolls it back
    assert volumes.calls == ["begin_detaching", "get", "begin_detaching",
                             "roll_detaching"]


def test_the_retries_are_bounded(database, ctx):
    attempts = volume_attachments.BEGIN_DETACHING_ATTEMPTS
    volumes = _Volumes([REFUSED] * attempts, [])
    api, instance, bdm, bdms = _detach(ctx, volumes)
    volumes.views.extend([_view("in-use", [bdm["attachment_id"]])] * attempts)
    with pytest.raises(exception.InvalidVolume):
        api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert volumes.calls == ["begin_detaching", "get"] * attempts
    assert api.compute_task_api.calls == []


@pytest.mark.parametrize("view", [
    # the same attachment is being detached already
    lambda mine: _view("detaching", [mine]),
    # not multiattach
    lambda mine: _view("detaching", [mine, str(uuid.uuid4())],
                       multiattach=False),
    # neither detaching nor in-use
    lambda mine: _view("error_deleting", [mine, str(uuid.uuid4())]),
])
def test_other_refusals_still_fail(database, ctx, view):
    volumes = _Volumes([REFUSED], [])
    api, instance, bdm, bdms = _detach(ctx, volumes)
    volumes.views.append(view(bdm["attachment_id"]))
    with pytest.raises(exception.InvalidVolume):
        api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert volumes.calls == ["begin_detaching", "get"]
    assert api.compute_task_api.calls == []
