"""The daemons' logs (gunicorn API and volume service, conductor, computes
over RabbitMQ) cannot be forged, and a daemon logs its start and stop.

``tests/log_forgery.py`` sends each control character through each logged
field to the API and the volume service; a server created by a user whose
name would forge a line carries that user over RPC to the conductor and a
compute.  Every daemon's log written meanwhile is checked: no raw control
character, no line starting with the attacker's text, one access line per
request.  Then the volume service (a gunicorn master and its worker) is
restarted: one ``stopped`` line (the master's, none of its worker), then
its ``started`` line with its configuration file and address.  At
``[DEFAULT] debug`` one attach's request id is on each of its hops, in
the API's, the conductor's, a compute's and the volume service's logs.
"""
import re

from tests import log_forgery
from tests import utils
from tests.integration import client as clients

DAEMONS = ("api", "volume", "conductor", "compute1", "compute2")


def _read(deployment, name, start=0):
    with open(deployment.log_path(name), "rb") as log:
        log.seek(start)
        return log.read().decode("utf-8", "replace")


def test_request_values_cannot_forge_daemon_log_lines(deployment):
    start = {name: len(open(deployment.log_path(name), "rb").read())
             for name in DAEMONS}
    sent = log_forgery.send_forgeries(deployment.api_url,
                                      deployment.volume_url)
    token, user = log_forgery.odd_user_token()
    api = clients.ComputeClient(deployment.api_url, token.decode("latin-1"))
    server_id = api.create_active_server()
    # the user reaches the conductor and the compute over RPC
    logs = utils.until(
        lambda: {name: _read(deployment, name, start[name])
                 for name in DAEMONS},
        lambda logs: user in logs["conductor"] and any(
            server_id in logs[c] and user in logs[c]
            for c in ("compute1", "compute2")) and all(
            log_forgery.access_lines(logs["api"] + logs["volume"],
                                     s.request_id) for s in sent),
        timeout=30)
    assert user in logs["conductor"], logs["conductor"][-3000:]
    log_forgery.check_lines("\n".join(logs.values()), sent)
    api.delete_server(server_id)


def test_a_daemon_logs_its_start_and_stop(deployment):
    start = len(open(deployment.log_path("volume"), "rb").read())
    deployment.restart("volume")
    text = utils.until(lambda: _read(deployment, "volume", start),
                       lambda t: " started; " in t, timeout=30)
    stopped = [line for line in text.split("\n")
               if line.endswith(" volattach-volume stopped")]
    assert len(stopped) == 1, text[-3000:]
    assert " INFO volattach.log_setup [-] " in stopped[0]
    assert re.search(
        r" INFO volattach\.log_setup \[-\] volattach-volume \S+ started; "
        r"config files: %s[^;]*; listening on: http://127\.0\.0\.1:%d$" % (
            re.escape(deployment.conf_path), int(
                deployment.volume_url.rsplit(":", 1)[1])),
        text, re.M), text[-3000:]
    assert text.index(stopped[0]) < text.index(" started; ")


def test_debug_follows_one_attach_across_the_daemons(deployment):
    """``[DEFAULT] debug``: the attach's request id in each daemon's log,
    on each hop (the all-in-one test checks every line of the story)."""
    api = clients.ComputeClient(deployment.api_url, "alice:demo")
    volumes = clients.VolumeClient(deployment.volume_url, "alice:demo")
    server_id = api.create_active_server()
    volume_id = volumes.create_available_volume()
    start = {name: len(open(deployment.log_path(name), "rb").read())
             for name in DAEMONS}
    status, body, headers = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    rid = headers["x-openstack-request-id"]
    hops = {
        "api": ["RPC call attach_volume (version "],
        "conductor": ["RPC received attach_volume (version ",
                      "AttachVolumeTask of %s: start" % server_id,
                      "RPC call attach_volume (version ",
                      "volume call POST /v3/demo/attachments: 200",
                      "AttachVolumeTask of %s: done" % server_id],
        "compute": ["RPC received attach_volume (version ",
                    "driver attach_volume %s" % server_id],
        "volume": ["backend fake initialize_connection %s" % volume_id],
    }

    def found(logs):
        logs = dict(logs, compute=logs["compute1"] + logs["compute2"])
        return {name: [needle for needle in needles if not any(
            rid in line and needle in line and " DEBUG " in line
            for line in logs[name].split("\n"))]
            for name, needles in hops.items()}
    missing = utils.until(
        lambda: found({name: _read(deployment, name, start[name])
                       for name in DAEMONS}),
        lambda missing: not any(missing.values()), timeout=30)
    assert not any(missing.values()), missing
    api.delete_server(server_id)
