"""Upload build-test-image.sh's guest image into Glance (tools/start-glance.sh).

    glance_upload.py KEYSTONE_URL ADMIN_PASSWORD GLANCE_URL IMAGE_DIR DISK NAME

The test image boots by direct kernel boot (kernel, initramfs, cmdline), so
Glance holds it as Nova's AMI-style triple: NAME-kernel ("aki"),
NAME-initramfs ("ari") and NAME, the qcow2 DISK whose ``kernel_id``,
``ramdisk_id`` and ``os_command_line`` properties name the other two and
the command line, the properties Nova's libvirt driver boots such an image
by.  Idempotent: an active public image of the same name and size is kept,
any other of that name deleted and uploaded again.  Prints the machine
image's id.  Standard library only: it runs in Glance's own virtualenv.
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request


def request(method, url, body=None, token=None, headers=None, data=None):
    h = {"Content-Type": "application/json", **(headers or {})}
    if token:
        h["X-Auth-Token"] = token
    if body is not None:
        data = json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data, headers=h)
    with urllib.request.urlopen(req, timeout=300) as r:
        raw = r.read()
        return r.headers, (json.loads(raw) if raw else None)


def admin_token(keystone, password):
    headers, _ = request("POST", keystone + "/v3/auth/tokens", {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"id": "default"},
            "password": password}}},
        "scope": {"project": {"name": "admin",
                              "domain": {"id": "default"}}}}})
    return headers["X-Subject-Token"]


def upload(glance, token, name, path, fmt, properties=None):
    """The active public image NAME of PATH's size; uploaded when none."""
    found = request("GET", glance + "/v2/images?name="
                    + urllib.parse.quote(name), token=token)[1]["images"]
    size = os.path.getsize(path)
    for image in found:
        if image["status"] == "active" and image.get("size") == size:
            return image["id"]
    for stale in found:
        request("DELETE", glance + "/v2/images/" + stale["id"], token=token)
    container = fmt if fmt in ("aki", "ari") else "bare"
    image = request("POST", glance + "/v2/images", {
        "name": name, "disk_format": fmt, "container_format": container,
        "visibility": "public", **(properties or {})}, token=token)[1]
    started = time.monotonic()
    with open(path, "rb") as f:
        request("PUT", glance + "/v2/images/%s/file" % image["id"],
                token=token, data=f, headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(size)})
    image = request("GET", glance + "/v2/images/" + image["id"],
                    token=token)[1]
    if image["status"] != "active":
        sys.exit("start-glance: ERROR: image %s is %s after upload"
                 % (image["id"], image["status"]))
    print("start-glance: uploaded %s (%d bytes, %s) in %.1f s" % (
        name, size, image["os_hash_algo"], time.monotonic() - started),
        file=sys.stderr)
    return image["id"]


def main(argv):
    keystone, password, glance, image_dir, disk, name = argv
    token = admin_token(keystone, password)
    kernel = upload(glance, token, name + "-kernel",
                    os.path.join(image_dir, "kernel"), "aki")
    ramdisk = upload(glance, token, name + "-initramfs",
                     os.path.join(image_dir, "initramfs"), "ari")
    with open(os.path.join(image_dir, "cmdline")) as f:
        cmdline = f.read().strip()
    print(upload(glance, token, name, disk, "qcow2", {
        "kernel_id": kernel, "ramdisk_id": ramdisk,
        "os_command_line": cmdline}))


if __name__ == "__main__":
    main(sys.argv[1:])
