"""Guards on every version surface: objects, compute RPC API, service version.

When one of these fails you changed a surface other daemons depend on.  Bump
the version that protects it (object VERSION with a `# Version 1.N` line and
`obj_make_compatible`; compute RPC VERSION with a docstring line, the
manager's target, SERVICE_VERSION and its history), then update the expected
value here.
"""
import hashlib
import inspect

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.compute import manager as compute_manager
from volattach.compute import rpcapi as compute_rpcapi
from volattach.conductor import manager as conductor_manager
from volattach.conductor import rpcapi as conductor_rpcapi
from volattach.objects import base
from volattach.objects import service as service_obj

objects.register_all()

EXPECTED_OBJECT_HASHES = {
    "BlockDeviceMapping": "1.5-942b7cfcd998448fa5778c1af237376b",
    "BlockDeviceMappingList": "1.5-64d5855ad1329af83dcc52f711c28719",
    "BlockDevicePayload": "1.0-fc6c8394e1e7d035969d5a889342067d",
    "InstanceActionVolumePayload": "1.0-13f5db945401f499682981d90bef9971",
    "Flavor": "1.0-05f5afeaccc1ab90958f7dc985b89dad",
    "Instance": "1.1-27498f117e6d5d84e1917b77df6a6a68",
    "InstanceAction": "1.0-4f86c9fda6c4c7e5f40c25a541a25aaa",
    "InstanceActionEvent": "1.0-85b5c4bd0a9a974f4597e49bef48a94b",
    "InstanceActionEventList": "1.0-13d92fb953030cdbfee56481756e02be",
    "InstanceActionList": "1.0-4a53826625cc280e15fae64a575e0879",
    "InstanceExternalEvent": "1.0-c9969ff024e71d6112c3cff195175c5f",
    "InstanceList": "1.0-96f87b1dd0a285b85e61fcb9603909a6",
    "KeyPair": "1.0-cdb1c976432528b66a6b111f8cfef76c",
    "KeyPairList": "1.0-06de1564523f50d5df4a3f9af1c9ef55",
    "LiveMigrateData": "1.0-fe60c542d38b87725584193f12cdcb36",
    "Migration": "1.0-f6968e9d2a256d90e52ada2a4588fc3f",
    "MigrationList": "1.0-dadbbab2ec78be0ba64d2cb5d2d00fa4",
    "Service": "1.1-797d842a4b572114c091dca901d72d49",
    "ServiceList": "1.1-f6621975c20e5805eb2b67dec3679efc",
}

def _endpoint_signatures(cls):
    lines = []
    for name, func in sorted(inspect.getmembers(cls, inspect.isfunction)):
        if name.startswith("_"):
            continue
        lines.append("%s%s" % (name, inspect.signature(func)))
    return "\n".join(lines)


def test_object_hashes_match_versions():
    from oslo_versionedobjects import fixture
    checker = fixture.ObjectVersionChecker(base.VolattachObjectRegistry.obj_classes())
    expected, actual = checker.test_hashes(EXPECTED_OBJECT_HASHES)
    assert expected == actual, (
        "An object's fields or remotable methods changed: bump its VERSION "
        "(with a '# Version 1.N' line and obj_make_compatible) and update "
        "EXPECTED_OBJECT_HASHES")


def test_every_object_declares_its_version_history():
    for name, classes in base.VolattachObjectRegistry.obj_classes().items():
        for cls in classes:
            source = inspect.getsource(cls)
            assert "# Version %s" % cls.VERSION in source, (
                "%s %s has no '# Version %s:' history line" % (name, cls.VERSION, cls.VERSION))


# sha1 of the compute manager's endpoint signatures, per compute RPC version
COMPUTE_MANAGER_SIGNATURE_SHA1 = {
    "1.0": "2417f84c783f7b21b56deec80c640b1a1ce02ef0",
    "1.1": "4d40cef02d4ed78e37e61c526d17ecccd064a656",
    "1.2": "81d5d88246f303815fb4d1f0f2a02ab8bc6d0689",
    "1.3": "b39195189eb117d3afbd3b19820273e6123982a6",
    "1.4": "ebe59d75f5ee758380b5dc73d05a1929bd005a95",
    "1.5": "d7e181894db6b96e30074e932c559e89964d0e58",
    "1.6": "e9994a1c491eebfc9ba2d6a8a263e2c71b77bd14",
    "1.7": "765789a34f239ebc41fef0faba8192c1ad37bd1e",
    "1.8": "23ef898e7e0325dadc634ce90258e674675027d0",
    "1.9": "d9ce8a947edffa7326ebe71b9025b6d2f9cfae58",
    "1.10": "00b16e7c4c44c4bc641fa7b3353a6121a70df2a8",
    "1.11": "71c396b961bdf180726a68a3be61250b6dd91a46",
}


def test_compute_rpc_versions_agree():
    assert compute_manager.ComputeManager.target.version == compute_rpcapi.ComputeAPI.VERSION
    assert (service_obj.SERVICE_VERSION_HISTORY[service_obj.SERVICE_VERSION]["compute_rpc"]
            == compute_rpcapi.ComputeAPI.VERSION)
    assert len(service_obj.SERVICE_VERSION_HISTORY) == service_obj.SERVICE_VERSION + 1
    assert "%s - " % compute_rpcapi.ComputeAPI.VERSION in compute_rpcapi.__doc__


def test_compute_endpoints_change_only_with_a_version_bump():
    text = _endpoint_signatures(compute_manager.ComputeManager)
    digest = hashlib.sha1(text.encode()).hexdigest()
    expected = COMPUTE_MANAGER_SIGNATURE_SHA1.get(compute_rpcapi.ComputeAPI.VERSION)
    assert digest == expected, (
        "The compute manager's endpoints changed (sha1 %s):\n%s\nBump the compute "
        "RPC version, SERVICE_VERSION and its history, then record the new sha1 "
        "here." % (digest, text))


CONDUCTOR_TASK_SIGNATURE_SHA1 = {
    "1.1": "b30eace4d4c2e00a9262b6bab9357cbeafe91468",
    "1.2": "6a6d86404e7def35aedbc39ecb2b719d7f8b8ee3",
    "1.3": "db17878023981c1e28b1f3b350be3a5118cebaa5",
    "1.4": "336ab9d2cc31142f9f2b23262f552769144933c0",
    "1.5": "126a143d5f754db92d30c2e61c28d834ea80f770",
    "1.6": "608a3e7be52d7eb70fbb56d614917bf887380988",
    "1.7": "51f9bce196ec1a373f2614f97dd73847079377d9",
    "1.8": "6e1d010f4bd9366658444d400b2ae6b0efee18f4",
    "1.9": "b3f9ff22e078e1b3d58ef34d7be2d1951cc7a1af",
}


def test_conductor_task_versions_agree():
    assert (conductor_manager.ComputeTaskManager.target.version
            == conductor_rpcapi.ComputeTaskAPI.VERSION)
    assert "%s - " % conductor_rpcapi.ComputeTaskAPI.VERSION in conductor_rpcapi.__doc__
    text = _endpoint_signatures(conductor_manager.ComputeTaskManager)
    digest = hashlib.sha1(text.encode()).hexdigest()
    assert digest == CONDUCTOR_TASK_SIGNATURE_SHA1[conductor_rpcapi.ComputeTaskAPI.VERSION], (
        "The conductor task endpoints changed (sha1 %s):\n%s\nBump the "
        "ComputeTaskAPI version and record the new sha1 here." % (digest, text))


@pytest.mark.parametrize("version,expected", [(None, None), (0, "1.0"), (1, "1.0"),
                                              (2, "1.1"), (3, "1.2"), (4, "1.3"),
                                              (5, "1.4"), (6, "1.5"),
                                              (7, "1.6"), (8, "1.7"), (9, "1.8"),
                                              (10, "1.9"), (11, "1.9"),
                                              (12, "1.10"), (13, "1.11"),
                                              (14, "1.11"),
                                              (99, compute_rpcapi.ComputeAPI.VERSION)])
def test_compute_rpc_for_service_version(version, expected):
    assert service_obj.compute_rpc_for_service_version(version) == expected


@pytest.mark.parametrize("first,rpc", [
    (service_obj.READ_ONLY_ATTACH_SERVICE_VERSION, "1.2"),
    (service_obj.LIVE_MIGRATION_SERVICE_VERSION, "1.3"),
    (service_obj.SUSPEND_REBOOT_SERVICE_VERSION, "1.6"),
    (service_obj.REBUILD_SERVICE_VERSION, "1.7"),
    (service_obj.REBOOT_RECONNECT_SERVICE_VERSION, "1.10"),
    (service_obj.EXTERNAL_EVENTS_SERVICE_VERSION, "1.11"),
])
def test_feature_service_versions_are_the_first_with_their_rpc(first, rpc):
    """A feature's first service version is the one whose computes speak
    the compute RPC that brought it, and the one before is not: a bump of
    SERVICE_VERSION must not move them (one did, by a text replace)."""
    assert service_obj.compute_rpc_for_service_version(first) == rpc
    assert service_obj.compute_rpc_for_service_version(first - 1) != rpc
