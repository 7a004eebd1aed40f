"""The compute RPC client: which version each call goes out at, and what
it carries at each (capped by the oldest compute, ``can_send_version``)."""
import types

import pytest

import volattach  # noqa: F401
from volattach.compute import rpcapi


class _Client:
    """A stand-in for an oslo.messaging client capped at ``cap``."""

    def __init__(self, cap):
        self.cap = cap
        self.calls = []

    def can_send_version(self, version):
        return tuple(map(int, version.split("."))) <= \
            tuple(map(int, self.cap.split(".")))

    def prepare(self, version):
        client = self

        class Prepared:
            def call(self, ctxt, method, **kwargs):
                client.calls.append((version, method, sorted(kwargs)))
        return Prepared()


@pytest.mark.parametrize("cap, migrate_data, sent", [
    ("1.8", "data", ("1.8", ["dest", "instance", "migrate_data"])),
    ("1.7", "data", ("1.3", ["dest", "instance"])),
    ("1.8", None, ("1.3", ["dest", "instance"])),
])
def test_live_migration_sends_migrate_data_to_sources_of_1_8(
        cap, migrate_data, sent):
    api = rpcapi.ComputeAPI()
    client = _Client(cap)
    api._client = lambda host: client
    api.live_migration(None, types.SimpleNamespace(host="src"), "dest",
                       migrate_data=migrate_data)
    version, method, kwargs = client.calls[0]
    assert (version, kwargs) == sent and method == "live_migration"



@pytest.mark.parametrize("cap, bdms, bdm_uuid, sent", [
    ("1.9", "listing", "u", ("1.9", ["bdm_uuid", "bdms"])),
    ("1.9", None, "u", ("1.9", ["bdm_uuid", "bdms"])),
    ("1.8", "listing", "u", ("1.4", ["bdms"])),
    ("1.9", "listing", None, ("1.4", ["bdms"])),
    ("1.3", "listing", "u", ("1.0", [])),
])
def test_reserve_sends_the_records_uuid_to_computes_of_1_9(
        cap, bdms, bdm_uuid, sent):
    api = rpcapi.ComputeAPI()
    client = _Client(cap)
    api._client = lambda host: client
    api.reserve_block_device_name(None, types.SimpleNamespace(host="h"),
                                  None, "vol", bdms=bdms, bdm_uuid=bdm_uuid)
    version, method, kwargs = client.calls[0]
    common = ["delete_on_termination", "device", "instance", "tag",
              "volume_id"]
    assert method == "reserve_block_device_name"
    assert (version, kwargs) == (sent[0], sorted(common + sent[1]))
