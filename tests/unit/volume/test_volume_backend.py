"""volume.backend: the fake iSCSI backend's connector checks and targets."""
import uuid

import pytest

from volattach import exception
from volattach.volume import backend

VOLUME = {"id": str(uuid.uuid4()), "service_uuid": str(uuid.uuid4()),
          "shared_targets": True}
CONNECTOR = {"initiator": "iqn.1993-08.org.debian:01:abc", "host": "c1"}


def make(shared=True):
    return backend.FakeISCSIBackend("fake", "svc", "127.0.0.1", shared)


@pytest.mark.parametrize("connector, missing", [
    ({}, "initiator"), ({"foo": "bar"}, "initiator"),
    ({"host": "c1"}, "initiator"), ({"initiator": "", "host": "c1"},
                                    "initiator"),
    ({"initiator": "iqn.x"}, "host"), ({"initiator": "iqn.x", "host": 1},
                                       "host"),
    ({"initiator": "iqn.x", "host": "  "}, "host"),
])
def test_connector_needs_initiator_and_host(connector, missing):
    with pytest.raises(exception.InvalidInput) as err:
        backend.FakeISCSIBackend.check_connector(connector)
    assert err.value.format_message() == (
        "Invalid input received: Connector doesn't have required "
        "information: %s" % missing)


def test_non_object_connector():
    with pytest.raises(exception.InvalidInput):
        backend.FakeISCSIBackend.check_connector(["host"])


def test_shared_target_per_host():
    be = make()
    other = dict(VOLUME, id=str(uuid.uuid4()))
    a = be.initialize_connection(VOLUME, "a1", CONNECTOR, "rw")
    b = be.initialize_connection(other, "a2", CONNECTOR, "ro")
    c = be.initialize_connection(VOLUME, "a3", dict(CONNECTOR, host="c2"),
                                 "rw")
    assert a["target_iqn"] == b["target_iqn"] != c["target_iqn"]
    assert a["shared_target_id"] == b["shared_target_id"] == \
        be.shared_target_id(VOLUME["service_uuid"], "c1")
    assert a["target_lun"] != b["target_lun"]
    assert (a["access_mode"], b["access_mode"]) == ("rw", "ro")
    assert a["driver_volume_type"] == "iscsi"
    assert a["attachment_id"] == "a1"


def test_own_target_per_attachment_without_shared_targets():
    be = make(shared=False)
    vol = dict(VOLUME, shared_targets=False)
    a = be.initialize_connection(vol, "a1", CONNECTOR, "rw")
    b = be.initialize_connection(vol, "a2", CONNECTOR, "rw")
    assert a["target_iqn"] != b["target_iqn"]
    assert a["shared_target_id"] is None
