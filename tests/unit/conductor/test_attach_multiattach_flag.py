"""The volume's multiattach flag travels with the attach (conductor task
RPC 1.8): the API read the volume before the cast, so the attach workflow
builds the compute's connection from that flag without a GET of the volume;
an API capped below 1.8 leaves it out and the workflow reads the volume as
before.  Unit tests: the oslo.messaging client, the compute RPC client and
the volume API are test doubles."""
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach.conductor import rpcapi
from tests.unit.conductor.test_attach_workflow import workflow  # noqa: F401


class _Client:
    """A stand-in for an oslo.messaging client capped at ``cap``: records
    the version each message was prepared at and what it carried."""

    def __init__(self, cap):
        self.cap = cap
        self.sent = []

    def can_send_version(self, version):
        return (tuple(map(int, version.split(".")))
                <= tuple(map(int, self.cap.split("."))))

    def prepare(self, version, timeout=None):
        client = self

        class Prepared:
            def cast(self, ctxt, method, **kwargs):
                client.sent.append(("cast", version, method, kwargs))

            def call(self, ctxt, method, **kwargs):
                client.sent.append(("call", version, method, kwargs))
                return "/dev/vdb"
        return Prepared()


def _api(cap):
    api = object.__new__(rpcapi.ComputeTaskAPI)
    api.client = _Client(cap)
    return api


@pytest.mark.parametrize("cap, attach_mode, multiattach, version, flag", [
    # a conductor of 1.8 gets the flag, True or False, cast or called
    ("1.8", None, True, "1.8", True),
    ("1.8", None, False, "1.8", False),
    ("1.8", "ro", True, "1.8", True),
    # capped below 1.8: the message an older conductor dispatches, no flag
    ("1.7", None, True, "1.1", None),
    ("1.7", "ro", False, "1.3", None),
    ("1.3", "ro", True, "1.3", None),
    # the caller does not know it: no flag, the conductor reads the volume
    ("1.8", None, None, "1.1", None),
    ("1.8", "ro", None, "1.3", None),
])
@pytest.mark.parametrize("do_cast", [True, False])
def test_attach_sends_the_flag_from_1_8(cap, attach_mode, multiattach,
                                        version, flag, do_cast):
    api = _api(cap)
    answer = api.attach_volume(None, "inst", "vol-1", do_cast=do_cast,
                               attach_mode=attach_mode,
                               multiattach=multiattach)
    [(kind, sent_version, method, kwargs)] = api.client.sent
    assert (kind, sent_version, method) == (
        "cast" if do_cast else "call", version, "attach_volume")
    assert answer == (None if do_cast else "/dev/vdb")
    if flag is None:
        assert "multiattach" not in kwargs
    else:
        assert kwargs["multiattach"] is flag
    assert ("attach_mode" in kwargs) == (attach_mode == "ro")


def test_a_read_only_attach_below_1_3_is_still_refused():
    api = _api("1.2")
    with pytest.raises(exception.ConductorTooOld):
        api.attach_volume(None, "inst", "vol-1", attach_mode="ro",
                          multiattach=True)
    assert api.client.sent == []


@pytest.mark.parametrize("multiattach", [True, False])
def test_the_attach_with_the_flag_reads_no_volume(workflow, multiattach):  # noqa: F811
    w = workflow
    # the volume service would say the opposite: the flag given wins, and
    # the volume is not read at all
    w.volume.get.return_value = {"id": "vol-1",
                                 "multiattach": not multiattach}
    assert w.tm.attach_volume(w.ctx, w.instance, "vol-1",
                              multiattach=multiattach) == "/dev/vdb"
    assert w.volume.get.call_count == 0
    saved = w.bdm.saves[-1][2]
    assert saved.get("multiattach", False) is multiattach
    plugged = w.compute.attach_volume.call_args.args[2]
    assert plugged.connection_info == saved


@pytest.mark.parametrize("multiattach", [True, False])
def test_the_attach_without_the_flag_reads_the_volume_once(workflow,  # noqa: F811
                                                           multiattach):
    w = workflow
    w.volume.get.return_value = {"id": "vol-1", "multiattach": multiattach}
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.volume.get.assert_called_once_with(w.ctx, "vol-1")
    assert w.bdm.saves[-1][2].get("multiattach", False) is multiattach


def test_a_flag_that_the_answer_carries_is_not_trusted(workflow):  # noqa: F811
    w = workflow
    w.volume.attachment_update.return_value = {
        "id": "att-1", "connection_info": {"driver_volume_type": "fake",
                                           "multiattach": True}}
    w.tm.attach_volume(w.ctx, w.instance, "vol-1", multiattach=False)
    assert w.bdm.saves[-1][2] == {"driver_volume_type": "fake"}
    assert w.volume.get.call_count == 0


def test_the_facade_hands_the_volumes_flag_to_the_conductor():
    """The compute API's attach passes the flag of the volume it read."""
    from volattach.conductor import api as conductor_api
    facade = object.__new__(conductor_api.ComputeTaskAPI)
    facade.rpcapi = mock.Mock()
    facade.attach_volume(None, "inst", "vol-1", do_cast=True,
                         multiattach=True)
    assert facade.rpcapi.attach_volume.call_args.kwargs["multiattach"] is True
