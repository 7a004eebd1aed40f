"""A stand-in for the network service (Neutron), for tempest only.

volattach provides no network service, and tempest skips its volume
attach tests unless ``[service_available] neutron`` is true.  With dynamic
credentials and ``create_isolated_networks = false`` the only network calls
tempest then makes are at set-up and clean-up: listing networks (none),
and listing and deleting each test project's ``default`` security group
(none).  This stand-in answers exactly those, empty, and 404 in Neutron's
error format for anything else, so a test that really needs networking
fails loudly instead of passing against it.

    python network_standin.py PORT
"""
import http.server
import json
import re
import sys

# GET /v2.0/<collection>: the collections tempest lists at set-up/clean-up
_LISTS = ("networks", "subnets", "ports", "routers", "security-groups",
          "floatingips")
_LIST = re.compile(r"^/v2\.0/(%s)(\.json)?$" % "|".join(_LISTS))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _not_found(self):
        self._send(404, {"NeutronError": {
            "type": "HTTPNotFound", "detail": "",
            "message": "The resource could not be found (network stand-in: "
                       "volattach has no network service)."}})

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        match = _LIST.match(path)
        if match:
            self._send(200, {match.group(1).replace("-", "_"): []})
        elif path in ("", "/v2.0"):
            self._send(200, {"versions": [{"id": "v2.0", "status": "CURRENT",
                                           "links": []}]})
        else:
            self._not_found()

    def _drain(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_DELETE(self):
        self._drain()
        self._not_found()

    def do_POST(self):
        self._drain()
        self._not_found()

    do_PUT = do_POST

    def log_message(self, fmt, *args):
        sys.stderr.write("network-standin: %s\n" % (fmt % args))


def main():
    port = int(sys.argv[1])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
