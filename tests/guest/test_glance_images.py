"""Real guests booted from a real Glance (tools/start-glance.sh, behind the
tests' Keystone): the compute and the API call Glance with a token of their
[glance] service credentials (at Glance's URL: the tempest job, running
beside this tier, points the catalog's image service at its stand-in),
downloads the AMI-style test image (kernel, initramfs, qcow2 machine
image) into its cache once, boots from a qcow2
overlay on it; the API refuses an imageRef Glance does not have, and a
build of an image that cannot boot ends in ERROR with a fault naming why.

scripts/test starts Glance before the test streams (VOLATTACH_TEST_GLANCE_URL
and VOLATTACH_TEST_GLANCE_IMAGE); without them this module starts it
itself (outside CI) or fails (under CI)."""
import json
import os
import subprocess
import urllib.request
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.integration import client as clients

KEYSTONE = "http://127.0.0.1:%s" % os.environ.get("VOLATTACH_KEYSTONE_PORT",
                                                   "5000")


@pytest.fixture(scope="module")
def glance(image_id):
    url = os.environ.get("VOLATTACH_TEST_GLANCE_URL")
    image = os.environ.get("VOLATTACH_TEST_GLANCE_IMAGE")
    if not (url and image):
        if os.environ.get("CI") == "true":
            pytest.fail("VOLATTACH_TEST_GLANCE_URL/_IMAGE unset under CI "
                        "(scripts/test starts Glance)")
        image_dir, _ = image_id
        proc = subprocess.run(
            [os.path.join(guest_env.REPO, "tools", "start-glance.sh")],
            capture_output=True, text=True,
            env={**os.environ, "VOLATTACH_TEST_IMAGE_DIR": image_dir})
        if proc.returncode != 0:
            pytest.skip("tools/start-glance.sh failed: %s"
                        % proc.stderr[-500:])
        url, image = proc.stdout.split()[-2:]
    return url, image


def _token():
    body = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "admin", "domain": {"id": "default"},
                 "password": "admin"}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
    req = urllib.request.Request(KEYSTONE + "/v3/auth/tokens",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers["X-Subject-Token"]


def _glance_image(url, fmt, data):
    """A new active image of ``fmt`` holding ``data``; its id."""
    token = _token()
    headers = {"X-Auth-Token": token, "Content-Type": "application/json"}
    req = urllib.request.Request(url + "/v2/images", headers=headers,
                                 data=json.dumps({
                                     "name": "va-test-" + uuid.uuid4().hex[:6],
                                     "disk_format": fmt,
                                     "container_format": "bare",
                                     "visibility": "public"}).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        image_id = json.load(r)["id"]
    req = urllib.request.Request(
        url + "/v2/images/%s/file" % image_id, data=data, method="PUT",
        headers={"X-Auth-Token": token,
                 "Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req, timeout=30).close()
    return image_id


class GlanceDeployment(guest_env.Deployment):
    """volattach-all whose computes and API use Glance with the tests'
    service user; no image of [libvirt] image_dir has a Glance id."""

    def __init__(self, tmp, image_dir, glance_url):
        super().__init__(tmp, image_dir)
        with open(self.conf, "a") as f:
            f.write(f"""[glance]
endpoint = {glance_url}
auth_type = password
auth_url = {KEYSTONE}/v3
username = volattach
password = volattach
project_name = service
user_domain_name = Default
project_domain_name = Default
""")


@pytest.fixture(scope="module")
def deployment(image_id, glance, tmp_path_factory):
    image_dir, _ = image_id
    d = GlanceDeployment(str(tmp_path_factory.mktemp("glance")), image_dir,
                         glance[0])
    d.start()
    yield d
    try:
        guest_env.tear_down(d, clients.ComputeClient(d.api_url),
                            clients.VolumeClient(d.volume_url))
    finally:
        d.stop_storage_daemon()


@pytest.fixture(scope="module")
def api(deployment):
    return clients.ComputeClient(deployment.api_url, microversion="2.105")


def test_guests_boot_from_one_download_of_a_glance_image(api, deployment,
                                                         glance):
    _, image = glance
    first, second = guest_env.boot(api, deployment, image,
                                   ["glance-a", "glance-b"])
    base = os.path.join(deployment.instances, "_base")
    cached = sorted(os.listdir(base))
    # the machine image, its kernel and its initramfs; no partial file
    assert image in cached and len(cached) == 3, cached
    for guest in (first, second):
        info = json.loads(subprocess.run(
            ["qemu-img", "info", "-U", "--output=json",
             os.path.join(deployment.instances, guest.id, "disk")],
            check=True, capture_output=True, text=True).stdout)
        assert info["format"] == "qcow2"
        assert info["backing-filename"] == os.path.join(base, image)
    # the guest writes its root disk: the overlay takes it, not the cache
    cache_file = os.stat(os.path.join(base, image))
    status, out = first.run("echo va-root-write | dd of=/dev/vda bs=512 "
                            "seek=4096 2>&1; sync", timeout=120)
    assert status == 0, out
    after = os.stat(os.path.join(base, image))
    assert (after.st_mtime, after.st_size) == (cache_file.st_mtime,
                                               cache_file.st_size)
    with open(os.path.join(deployment.instances, first.id, "disk"),
              "rb") as f:
        assert b"va-root-write" in f.read()


def test_an_image_glance_does_not_have_is_refused(api):
    missing = str(uuid.uuid4())
    code, body, _ = api.create_server(name="no-image", image_ref=missing,
                                      flavor_ref="1")
    assert code == 400, body
    assert body["badRequest"]["message"] == (
        "Image %s could not be found." % missing)


def test_an_image_that_cannot_boot_fails_its_build_by_name(api, glance,
                                                          tmp_path):
    url, _ = glance
    # Glance inspects what it is given: a real VMDK for disk_format vmdk
    path = tmp_path / "disk.vmdk"
    subprocess.run(["qemu-img", "create", "-q", "-f", "vmdk", str(path),
                    "1M"], check=True)
    vmdk = _glance_image(url, "vmdk", path.read_bytes())
    code, body, _ = api.create_server(name="vmdk", image_ref=vmdk,
                                      flavor_ref="1")
    assert code == 202, body
    server_id = body["server"]["id"]
    server = api.wait_for_server_status(server_id, "ERROR", timeout=120)
    assert "'vmdk'" in server["fault"]["message"], server["fault"]
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=60)
