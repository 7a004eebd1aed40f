"""Attempts to forge log lines, and the checks of what the services logged
(issue 33), for the all-in-one (tests/functional/test_log_lines.py) and
the daemons (tests/integration/test_log_lines.py).

``send_forgeries`` sends each control character through each field that
reaches a log line: the path (``volattach.api.faults`` logs it decoded),
a server name and a volume id in a body (the 400's message, logged with
its value), a header, and the user of a noauth token (the prefix of every
line of the request, in every service it reaches).  ``check_lines`` then
asserts, on the text the services wrote:

- no raw control character anywhere (a line break only ends a line);
- no line starts with the attacker's text;
- one access line per request (its request id);
- each value that is logged appears escaped.
"""
import json
import re
import urllib.parse
import uuid

import requests

from volattach import log_setup

TIMEOUT = 30
ACCESS_LOGGER = "volattach.wsgi.access_log"
# a line as the attacker would like it to look
FORGED = "2099-01-01 00:00:00.000 1 ERROR forged"
# the same without a colon, for a noauth token (<user>:<project>)
FORGED_WORDS = "2099-01-01 ERROR forged"
CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c",
            "\r", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9b", "\x9f",
            "\u2028", "\u2029"]
# what of them an HTTP server lets through in a header: HTAB and
# obs-text bytes (NEL; U+2028 in UTF-8); it refuses the others itself
HEADER_BYTES = [b"\t", b"\x80", b"\x85", b"\x9b", b"\x9f",
                "\u2028".encode("utf-8")]
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


class Sent:
    """One request sent: its request id and the escaped text the log must
    show (None when the field it carried is not logged)."""

    def __init__(self, what, response, logged=None):
        self.what = what
        self.status = response.status_code
        self.request_id = response.headers.get("x-openstack-request-id")
        self.logged = logged

    def __repr__(self):
        return "<%s %s %s>" % (self.what, self.status, self.request_id)


def _headers(token=b"alice:demo", **more):
    headers = {"X-Auth-Token": token, "Accept": "application/json"}
    headers.update(more)
    return headers


def send_forgeries(api_url, volume_url):
    """Each control character through each logged field; the ``Sent``."""
    sent = []
    session = requests.Session()
    for char in CONTROLS:
        path = "/v2.1/servers/abc" + char + FORGED
        response = session.get(api_url + urllib.parse.quote(path),
                               headers=_headers(), timeout=TIMEOUT)
        assert response.status_code == 404, response.text
        sent.append(Sent("path %r" % char, response,
                         log_setup.escape(path)))
        response = session.get(
            volume_url + urllib.parse.quote("/v3/demo/volumes/abc" + char
                                            + FORGED),
            headers=_headers(), timeout=TIMEOUT)
        assert response.status_code == 404, response.text
        sent.append(Sent("volume path %r" % char, response))
        name = "a" + char + FORGED
        response = session.post(
            api_url + "/v2.1/servers", headers=_headers(**{
                "Content-Type": "application/json"}),
            data=json.dumps({"server": {"name": name, "flavorRef": "1",
                                        "imageRef": "no-such-image",
                                        "networks": "none"}}),
            timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        sent.append(Sent("name %r" % char, response,
                         log_setup.escape(name) if name in response.json()[
                             "badRequest"]["message"] else None))
        volume_id = "x" + char + FORGED
        response = session.post(
            api_url + "/v2.1/servers/%s/os-volume_attachments" % uuid.uuid4(),
            headers=_headers(**{"Content-Type": "application/json"}),
            data=json.dumps({"volumeAttachment": {"volumeId": volume_id}}),
            timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        sent.append(Sent("body %r" % char, response,
                         log_setup.escape(volume_id)))
    for raw in HEADER_BYTES:
        response = session.get(
            api_url + "/v2.1/servers",
            headers=_headers(**{"OpenStack-API-Version":
                                b"compute 2.1" + raw + FORGED.encode()}),
            timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        sent.append(Sent("header %r" % raw, response))
        user = b"alice" + raw + FORGED_WORDS.encode()
        for url in (api_url + "/v2.1/servers", volume_url + "/v3/demo/volumes"):
            response = session.get(url, headers=_headers(user + b":demo"),
                                   timeout=TIMEOUT)
            assert response.status_code == 200, response.text
            sent.append(Sent("user %r" % raw, response,
                             log_setup.escape(user.decode("latin-1"))))
    session.close()
    return sent


def odd_user_token():
    """A noauth token whose user would forge a line, and that user as the
    log shows it."""
    user = b"alice\x85" + FORGED_WORDS.encode()
    return user + b":demo", log_setup.escape(user.decode("latin-1"))


def access_lines(text, request_id):
    """The access lines of request ``request_id`` (its own id, not a call
    it made: those carry it as their global request id)."""
    return [line for line in text.split("\n")
            if ACCESS_LOGGER in line and "[None %s " % request_id in line]


def check_lines(text, sent):
    """The checks of the module doc on ``text``, for the requests ``sent``."""
    raw = RAW.search(text)
    assert raw is None, (raw, text[max(0, raw.start() - 300):raw.end() + 100])
    lines = text.split("\n")
    forged = [line for line in lines if line.startswith(("2099", "FORGED"))
              or line.lstrip().startswith(FORGED_WORDS)]
    assert not forged, forged
    for request in sent:
        found = access_lines(text, request.request_id)
        assert len(found) == 1, (request, found)
        if request.logged is not None:
            assert request.logged in text, (request, request.logged)
