"""os-getConsoleOutput at the API edge: body, schema, 404 first, policy."""
import uuid

from volattach import exception

from tests.unit.api.test_servers import OTHER


def _url(server_id):
    return "/v2.1/servers/%s/action" % server_id


def test_console_output_is_200_with_the_output(api, facade):
    server = facade.add_instance()
    result = api.post(_url(server.uuid), {"os-getConsoleOutput": {"length": 5}})
    assert result.status_code == 200
    # control characters other than newline and tab are dropped, as Nova does
    assert result.json == {"output": "line1\nline2\n"}
    args, _ = facade.last_call("get_console_output")
    assert args[1] is server and args[2] == 5


def test_console_output_length_may_be_a_string_or_absent(api, facade):
    server = facade.add_instance()
    assert api.post(_url(server.uuid), {"os-getConsoleOutput": {
        "length": "-1"}}).status_code == 200
    assert facade.last_call("get_console_output")[0][2] == "-1"
    assert api.post(_url(server.uuid),
                    {"os-getConsoleOutput": {}}).status_code == 200
    assert facade.last_call("get_console_output")[0][2] is None


def test_bad_length_is_400(api, facade):
    server = facade.add_instance()
    for length in ("ten", -2, 1.5):
        assert api.post(_url(server.uuid), {"os-getConsoleOutput": {
            "length": length}}).status_code == 400
    assert not facade.called("get_console_output")


def test_unknown_server_is_404_before_the_body_is_checked(api, facade):
    result = api.post(_url(uuid.uuid4()),
                      {"os-getConsoleOutput": {"length": "bad"}})
    assert result.status_code == 404


def test_another_projects_server_is_404(api, facade):
    server = facade.add_instance()
    result = api.post(_url(server.uuid), {"os-getConsoleOutput": {}},
                      token=OTHER)
    assert result.status_code == 404


def test_server_without_host_is_409(api, facade):
    server = facade.add_instance()
    facade.errors["get_console_output"] = exception.InstanceNotReady(
        instance_id=server.uuid)
    result = api.post(_url(server.uuid), {"os-getConsoleOutput": {}})
    assert result.status_code == 409
