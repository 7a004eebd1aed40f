"""imageRefs on the real daemons over RabbitMQ and PostgreSQL (issue 21
item 4): the API process checks them against what the compute daemons
report through the conductor, not against a directory or list of its own.

The API daemon is configured as the old check would have read it, with
the libvirt driver and an image directory that does not exist (an API host
of its own has none) and no fake images; each compute has an image the
other lacks.  Both computes' images boot, each on a compute that reports
it (the scheduler skips the other), and an image no compute reports is a
400 that stores nothing.  Before this change every imageRef was a 400
here."""
import uuid

import pytest

from tests.integration import client as clients
from tests.integration import conftest as harness

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SHARED = clients.DEFAULT_IMAGE
ONLY_1 = "11111111-1111-4111-8111-111111111111"
ONLY_2 = "22222222-2222-4222-8222-222222222222"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    def prepare(dep):
        dep.add_daemon("api", "volattach-api", overrides={
            "compute": {"virt_driver": "libvirt", "fake_images": ""},
            "libvirt": {"image_dir": str(dep.workdir / "no-such-dir")}})
        for host, only in (("compute1", ONLY_1), ("compute2", ONLY_2)):
            dep.add_daemon(host, "volattach-compute", overrides={
                "compute": {"host": host,
                            "fake_images": ",".join((SHARED, only))}})
    with harness.running_deployment(tmp_path_factory.mktemp("images"),
                                    prepare=prepare) as dep:
        yield dep


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url,
                                 "alice:images-%s" % uuid.uuid4().hex[:8])


def test_images_reported_by_either_compute_boot_on_a_compute_that_has_them(
        deployment, api):
    admin = clients.ComputeClient(deployment.api_url, "admin:admin:admin")
    # compute2's image twice first: the fewest-servers choice alone would
    # put the first on compute1 (the tie goes to the first name), the
    # second on compute2
    for image, hosts in ((ONLY_2, {"compute2"}), (ONLY_2, {"compute2"}),
                         (ONLY_1, {"compute1"}), (ONLY_1, {"compute1"}),
                         (SHARED, {"compute1", "compute2"})):
        status, body, _ = api.create_server(name=image[:8], image_ref=image,
                                            microversion="2.37")
        assert status == 202, (image, body)
        server = api.wait_for_server_status(body["server"]["id"], "ACTIVE")
        assert server["image"]["id"] == image
        status, body, _ = admin.request("GET", "/servers/%s" % server["id"])
        assert status == 200, body
        assert body["server"]["OS-EXT-SRV-ATTR:host"] in hosts, (image, body)


def test_an_image_no_compute_reports_is_400_and_stores_nothing(api):
    unknown = str(uuid.uuid4())
    status, body, _ = api.create_server(name="nope", image_ref=unknown,
                                        microversion="2.37")
    assert status == 400, body
    assert body["badRequest"]["message"] == \
        "Image %s could not be found." % unknown
    status, body, _ = api.request("GET", "/servers")
    assert status == 200 and body["servers"] == [], body


def test_a_rebuild_needs_the_image_on_the_servers_own_host(deployment, api):
    status, body, _ = api.create_server(name="rb", image_ref=ONLY_2,
                                        microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    # compute1 has it, the server's compute2 does not: 400, nothing changes
    status, body, _ = api.request(
        "POST", "/servers/%s/action" % server_id,
        {"rebuild": {"imageRef": ONLY_1}})
    assert status == 400, body
    assert body["badRequest"]["message"] == \
        "Image %s could not be found." % ONLY_1
    server = api.wait_for_server_status(server_id, "ACTIVE")
    assert server["image"]["id"] == ONLY_2
    status, body, _ = api.request(
        "POST", "/servers/%s/action" % server_id,
        {"rebuild": {"imageRef": SHARED}})
    assert status == 202, body
    server = api.wait_for_server_status(server_id, "ACTIVE")
    assert server["image"]["id"] == SHARED
