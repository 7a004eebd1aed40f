"""os-getConsoleOutput with the fake driver: the guest's console as its
compute holds it, trimmed to ``length`` lines, following attach and detach."""
from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_suspend_reboot import _action


def _console(api, server_id, length=None):
    status, body, _ = _action(api, server_id, "os-getConsoleOutput",
                              {} if length is None else {"length": length})
    assert status == 200, body
    return body["output"]


def test_console_follows_the_guest(api, volumes):
    server_id = _new_server(api, name="talkative")
    output = _console(api, server_id)
    assert "booted from" in output and "power running" in output
    # tempest's unlimited-size test wants more than 3 lines in all
    assert len(output.split("\n")) > 3
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id, microversion="2.20")[0] == 200
    output = _console(api, server_id)
    assert output.splitlines()[-1] == "/dev/vdb rw"
    # length N: the last N lines (tempest counts them with split("\n"))
    assert len(_console(api, server_id, 3).split("\n")) == 3
    assert _console(api, server_id, 0) == ""
    assert _console(api, server_id, -1) == output
    assert _action(api, server_id, "os-stop")[0] == 202
    api.wait_for_server_status(server_id, "SHUTOFF")
    assert "power shutdown" in _console(api, server_id)
