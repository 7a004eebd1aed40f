"""Stand-ins for the network (Neutron) and image (Glance) services, for
tempest only.

volattach provides neither service.  tempest skips its volume attach tests
unless ``[service_available] neutron`` is true, and its compute admin tests
need ``glance`` (they build an image client at set-up).

- network: with dynamic credentials and ``create_isolated_networks =
  false`` the only network calls tempest makes are at set-up and clean-up:
  listing networks, and listing and deleting each test project's
  ``default`` security group.  Every list is empty.
- image: shows and lists the image ids the compute API is configured with
  (the same ids as tempest's ``image_ref`` / ``image_ref_alt``), as active
  public raw images.  Nothing can be uploaded or created.

Anything else is 404 in the service's error format, so a test that really
needs networking or images fails loudly instead of passing against a
stand-in.

    python standins.py NETWORK_PORT IMAGE_PORT IMAGE_ID [IMAGE_ID...]
"""
import http.server
import json
import re
import sys
import threading

# GET /v2.0/<collection>: the collections tempest lists at set-up/clean-up
_LISTS = ("networks", "subnets", "ports", "routers", "security-groups",
          "floatingips")
_LIST = re.compile(r"^/v2\.0/(%s)(\.json)?$" % "|".join(_LISTS))


class _Base(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    service = "stand-in"

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
    do_PATCH = do_POST

    def log_message(self, fmt, *args):
        sys.stderr.write("%s: %s\n" % (self.service, fmt % args))


class NetworkHandler(_Base):
    service = "network-standin"

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


def image(image_id):
    return {"id": image_id, "name": "volattach-image-%s" % image_id[:8],
            "status": "active", "visibility": "public", "protected": False,
            "os_hidden": False, "disk_format": "raw",
            "container_format": "bare", "min_disk": 0, "min_ram": 0,
            "size": 1073741824, "virtual_size": 1073741824,
            "checksum": None, "os_hash_algo": None, "os_hash_value": None,
            "owner": None, "tags": [], "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "self": "/v2/images/%s" % image_id,
            "file": "/v2/images/%s/file" % image_id,
            "schema": "/v2/schemas/image"}


class ImageHandler(_Base):
    service = "image-standin"
    image_ids = ()

    def _not_found(self):
        self._send(404, {"code": 404, "title": "Not Found",
                         "message": "No image found (image stand-in: "
                                    "volattach has no image service)."})

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("", "/v2"):
            self._send(200, {"versions": [{"id": "v2.16", "status": "CURRENT",
                                           "links": []}]})
        elif path == "/v2/images":
            self._send(200, {"images": [image(i)
                                        for i in self.image_ids],
                             "first": "/v2/images",
                             "schema": "/v2/schemas/images"})
        elif (path.startswith("/v2/images/")
              and path[len("/v2/images/"):] in self.image_ids):
            self._send(200, image(path[len("/v2/images/"):]))
        else:
            self._not_found()


def serve(port, handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


def main():
    network_port, image_port = int(sys.argv[1]), int(sys.argv[2])
    ImageHandler.image_ids = tuple(sys.argv[3:])
    serve(network_port, NetworkHandler)
    serve(image_port, ImageHandler)
    threading.Event().wait()


if __name__ == "__main__":
    main()
