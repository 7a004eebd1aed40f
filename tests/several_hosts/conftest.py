"""The several-hosts tier: the real daemons over RabbitMQ and PostgreSQL
with a controller and two computes in network namespaces of their own,
real guests, NBD over TLS between hosts (topology: README.md here,
``topology.several_hosts``).

Needs root (``ip netns``), libvirt and QEMU (tools/start-libvirt.sh),
RabbitMQ and PostgreSQL installed (tools/start-rabbitmq.sh,
tools/start-postgres.sh) and the volattach[libvirt] extra.  Without them
the tests skip, except under CI (``CI=true``), where they fail.  Every
test is marked ``several_hosts``.
"""
import os

import pytest

from tests import utils
from tests.guest.conftest import image_id  # noqa: F401 - a fixture
from tests.several_hosts import topology

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "several_hosts: a controller and two computes in "
        "network namespaces of their own (tests/several_hosts)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if os.path.dirname(str(item.fspath)) == HERE:
            item.add_marker(pytest.mark.several_hosts)


@pytest.fixture(scope="module")
def hosts(image_id, tmp_path_factory):  # noqa: F811
    image_dir, image = image_id
    try:
        with topology.several_hosts(
                str(tmp_path_factory.mktemp("several-hosts")), image_dir,
                image) as running:
            yield running
    except topology.Unavailable as e:
        if utils.in_ci():
            pytest.fail("several-hosts tier under CI: %s" % e, pytrace=False)
        pytest.skip(str(e))
