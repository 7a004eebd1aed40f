"""volume.states: the status rules of the attach flow."""
import pytest

from volattach.volume import states


@pytest.mark.parametrize("attachments, expected", [
    ([], "available"),
    (["reserved"], "reserved"),
    (["reserved", "attaching"], "attaching"),
    (["attaching", "attached", "reserved"], "in-use"),
    (["detaching", "reserved"], "detaching"),
    (["attached"], "in-use"),
])
def test_status_from_attachments(attachments, expected):
    assert states.status_from_attachments(attachments) == expected


def test_reserve_refused_messages():
    assert states.reserve_refused("v1", "in-use", False) == (
        "Volume v1 status must be available or downloading to reserve, but "
        "the current status is in-use.")
    message = states.reserve_refused("v1", "error", True)
    assert message.startswith("Volume v1 status must be available or "
                              "reserved or attaching or in-use")
    assert message.endswith("but the current status is error.")


def test_multiattach_reservable_fixes_bug_1747985():
    for status in ("reserved", "attaching", "in-use"):
        assert status in states.MULTIATTACH_RESERVABLE
        assert status not in states.RESERVABLE
    assert "detaching" not in states.MULTIATTACH_RESERVABLE


@pytest.mark.parametrize("value, expected", [
    ("<is> True", True), ("<is> true", True), (" <is> True ", True),
    ("True", False), ("<is> False", False), (None, False), (True, False)])
def test_is_multiattach_spec(value, expected):
    assert states.is_multiattach_spec(value) is expected


@pytest.mark.parametrize("readonly, requested, connector_mode, expected", [
    (True, "rw", "rw", "ro"),
    (False, "ro", "rw", "ro"),
    (False, None, "ro", "ro"),
    (False, None, None, "rw"),
    (False, None, "bogus", "rw"),
    (False, "rw", "ro", "rw"),
])
def test_attach_mode_for(readonly, requested, connector_mode, expected):
    assert states.attach_mode_for(readonly, requested,
                                  connector_mode) == expected
