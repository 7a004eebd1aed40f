"""volattach-all calls its own volume service without a socket.

``[cinder] endpoint`` is the deployment's volume service, so the compute
API's volume calls run that service's application in the API request's own
thread (``volume_client.in_process``), still logging the volume service's
access log line; clients of the volume API still reach it over HTTP.
"""
import logging
import threading

from tests import utils
from tests.functional.test_attach_detach import _new_server, _new_volume
from volattach.volume_client import http_transport
from volattach.wsgi import access_log


def _lines(caplog):
    return [(r.getMessage(), r.thread) for r in caplog.records
            if r.name == access_log.LOG.name]


def test_the_apis_volume_calls_run_in_its_own_thread(api, volumes,
                                                     deployment, caplog):
    assert deployment.volume_origin == deployment.volume_url
    assert deployment.volume_origin in http_transport._IN_PROCESS
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)

    def post_lines():
        return [thread for line, thread in _lines(caplog)
                if '"POST /v2.1/servers/%s/os-volume_attachments"' % server_id
                in line]

    with caplog.at_level(logging.INFO, logger=access_log.LOG.name):
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.1")
        # the POST's line is written once its answer has left
        post = utils.until(post_lines, lambda found: len(found) >= 1)
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    lines = _lines(caplog)
    get = [thread for line, thread in lines
           if '"GET /v3/demo/volumes/%s" status: 200' % volume_id in line
           and line.startswith("127.0.0.1 ")]
    assert len(post) == 1, lines
    # the API's GET of the volume was logged by the volume service, in the
    # thread that served the POST (over a socket: a waitress thread of the
    # volume service)
    assert post[0] in get, lines
    assert threading.get_ident() not in get

    status, _, _ = api.detach_volume(server_id, volume_id)
    assert status == 202
    volumes.wait_for_volume_status(volume_id, "available")
