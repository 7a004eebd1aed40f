"""volume.faults: domain exception families -> HTTP status and body."""
import pytest

from volattach import exception
from volattach.volume import faults


@pytest.mark.parametrize("exc, status", [
    (exception.InvalidVolume(reason="x"), 400),
    (exception.ValidationError("x"), 400),
    (exception.NotAuthenticated(), 401),
    (exception.PolicyNotAuthorized(action="a"), 403),
    (exception.VolumeNotFound(volume_id="v"), 404),
    (exception.VolumeAttachmentNotFound(attachment_id="a"), 404),
    (exception.VolumeTypeExists(name="n"), 409),
    (exception.VolumeTypeInUse(volume_type_id="t"), 400),
    (exception.CinderConnectionFailed(reason="r"), 503),
    (exception.DBError(reason="r"), 500),
])
def test_status_of(exc, status):
    assert faults.status_of(exc) == status


def test_fault_body_names():
    assert faults.fault_body(404, "m") == {
        "itemNotFound": {"code": 404, "message": "m"}}
    assert faults.fault_body(406, "m") == {
        "computeFault": {"code": 406, "message": "m"}}
    assert faults.fault_body(500, "m") == {
        "computeFault": {"code": 500, "message": "m"}}
