"""A Glance stand-in for unit tests of the image client and cache: a real
HTTP server on loopback answering ``GET /v2/images/{id}``, ``.../file`` and
``.../members/{project}`` from a dict.  Minimal by design: tests that need
Glance's behaviour use the real one (tools/start-glance.sh).

Per image: ``data`` (bytes), and in its record any field to override.
``truncate_at``: the file answer announces the whole length and closes the
connection after that many bytes.  ``hold``: an Event the file answer waits
for (at most 10 s) before sending.  ``downloads`` counts the file requests.
"""
import hashlib
import http.server
import json
import threading


class GlanceStandin:
    def __init__(self):
        self.images = {}
        self.members = {}
        self.downloads = {}
        self.truncate_at = {}
        self.hold = {}
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, code, body):
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):
                parts = self.path.strip("/").split("/")
                if parts[:2] != ["v2", "images"] or len(parts) < 3:
                    return self._json(404, {})
                image = standin.images.get(parts[2])
                if image is None:
                    return self._json(404, {})
                if len(parts) == 3:
                    return self._json(200, standin.record(parts[2]))
                if parts[3] == "members" and len(parts) == 5:
                    status = standin.members.get((parts[2], parts[4]))
                    if status is None:
                        return self._json(404, {})
                    return self._json(200, {"status": status})
                if parts[3] != "file":
                    return self._json(404, {})
                standin.downloads[parts[2]] = (
                    standin.downloads.get(parts[2], 0) + 1)
                hold = standin.hold.get(parts[2])
                if hold is not None:
                    hold.wait(10)
                data = image["data"]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                cut = standin.truncate_at.get(parts[2])
                self.wfile.write(data if cut is None else data[:cut])
                if cut is not None:
                    self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        daemon=True)

    def add(self, image_id, data, **fields):
        self.images[image_id] = {"data": data, **fields}

    def record(self, image_id):
        image = self.images[image_id]
        record = {"id": image_id, "status": "active", "size": len(image["data"]),
                  "disk_format": "qcow2", "container_format": "bare",
                  "visibility": "public", "owner": "admin",
                  "os_hash_algo": "sha512",
                  "os_hash_value": hashlib.sha512(image["data"]).hexdigest()}
        record.update({k: v for k, v in image.items() if k != "data"})
        return record

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        for event in self.hold.values():
            event.set()
        self.server.shutdown()
        self.server.server_close()
