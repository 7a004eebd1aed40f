"""volattach.wsgi.request_id: request ids and the inbound global id."""
import re

from volattach.wsgi import request_id

ID_RE = re.compile(r"^req-[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$")


def test_new_ids_are_distinct_req_uuids():
    first, second = request_id.new_request_id(), request_id.new_request_id()
    assert ID_RE.match(first) and ID_RE.match(second)
    assert first != second


def test_only_a_well_formed_inbound_id_is_kept():
    valid = "req-12345678-1234-1234-1234-123456789abc"
    assert request_id.global_request_id(valid) == valid
    for bad in (None, "", "12345678-1234-1234-1234-123456789abc",
                "req-12345678-1234-1234-1234-123456789ABC", valid + "0"):
        assert request_id.global_request_id(bad) is None
