"""volattach.wsgi.faults: the fault-name table and status mapping."""
from volattach import exception
from volattach.wsgi import faults


def test_named_statuses_and_the_default_name():
    assert faults.fault_body(404, "gone") == {
        "itemNotFound": {"code": 404, "message": "gone"}}
    assert faults.fault_name(413) == faults.fault_name(429) == "overLimit"
    assert faults.fault_name(406) == "computeFault"
    assert faults.fault_name(500) == "computeFault"


def test_status_by_family_first_match_wins():
    assert faults.status_for(exception.NotFound("x")) == 404
    assert faults.status_for(exception.ValidationError("x")) == 400
    assert faults.status_for(RuntimeError("x")) == 500
    table = ((exception.NotFound, 410),) + faults.EXCEPTION_FAMILY_STATUS
    assert faults.status_for(exception.NotFound("x"), table) == 410
    assert faults.status_for(exception.Conflict("x"), table) == 409
