"""Functional tests: every role in this one process (volattach-all's
AllInOne) over the in-process oslo.messaging driver (``rpc.inproc``,
volattach-all's default) and SQLite, the compute API and the volume service
served over real HTTP on loopback ports.

One deployment per test module (``deployment`` fixture), a fresh state
directory each time; a module sets ``CONF_OVERRIDES`` for options of its
own and ``TRANSPORT_URL`` for another in-process bus
(``test_kombu_memory_transport`` runs on ``kombu+memory:////``).  ``api``
and ``volumes`` are small HTTP clients that speak as a project (noauth
tokens).
"""
import uuid

import pytest

import volattach  # noqa: F401
from tests import utils
from tests.integration import client as clients
from volattach.conf import CONF


def _configure(state_path, overrides=None):
    CONF([], project="volattach", default_config_files=[])
    api_port, volume_port = utils.free_port(), utils.free_port()
    settings = {
        (None, "state_path"): str(state_path),
        (None, "report_interval"): 1,
        ("database", "connection"): "sqlite:///%s/volattach.sqlite" % state_path,
        ("volume", "connection"): "sqlite:///%s/volume.sqlite" % state_path,
        ("api", "port"): api_port,
        ("volume", "port"): volume_port,
        ("cinder", "endpoint"): "http://127.0.0.1:%d/v3" % volume_port,
        ("cinder", "retry_seconds"): 2.0,
        # one project ("demo") holds a module's many servers: no quota on
        # them (test_quotas_limits sets Nova's defaults back)
        ("quota", "instances"): -1,
        ("quota", "cores"): -1,
        ("quota", "ram"): -1,
    }
    settings.update(overrides or {})
    for (group, name), value in settings.items():
        CONF.set_override(name, value, group=group)
    return settings


def _register_transport_opts():
    from oslo_config import cfg
    from oslo_messaging import transport as messaging_transport
    try:
        CONF.transport_url
    except cfg.NoSuchOptError:
        CONF.register_opts(messaging_transport._transport_opts)


def _unconfigure(settings):
    for (group, name) in settings:
        CONF.clear_override(name, group=group)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, request):
    from volattach.cmd.all import AllInOne
    from volattach import conf as volattach_conf
    overrides = dict(getattr(request.module, "CONF_OVERRIDES", None) or {})
    transport_url = getattr(request.module, "TRANSPORT_URL", None)
    if transport_url:
        _register_transport_opts()
        overrides[(None, "transport_url")] = transport_url
    settings = _configure(tmp_path_factory.mktemp("state"), overrides)
    from volattach.db import engine as db_engine
    db_engine.dispose_all()
    deployment = AllInOne(CONF).start()
    from volattach import rpc
    # every role in this process, never a broker shared with other
    # processes: volattach-all's default bus unless the module chose one
    expected = transport_url or volattach_conf.MEMORY_TRANSPORT_URL
    assert (str(rpc.TRANSPORT._driver._url).split(":")[0]
            == expected.split(":")[0])
    deployment.api_url = "http://127.0.0.1:%d" % CONF.api.port
    deployment.volume_url = "http://127.0.0.1:%d" % CONF.volume.port
    try:
        yield deployment
    finally:
        deployment.stop()
        db_engine.dispose_all()
        _unconfigure(settings)


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url, "alice:demo")


@pytest.fixture
def admin_api(deployment):
    return clients.ComputeClient(deployment.api_url, "admin:admin:admin")


@pytest.fixture
def volumes(deployment):
    return clients.VolumeClient(deployment.volume_url, "alice:demo")


@pytest.fixture
def volumes_admin(deployment):
    return clients.VolumeClient(deployment.volume_url, "admin:admin:admin")


@pytest.fixture(scope="module")
def multiattach_type(deployment):
    """The id of a volume type with ``multiattach <is> True`` (made by an
    admin), for the module's multiattach volumes."""
    admin = clients.VolumeClient(deployment.volume_url, "admin:demo:admin")
    status, body, _ = admin.create_volume_type(
        "multiattach-%s" % uuid.uuid4().hex[:6], {"multiattach": "<is> True"})
    assert status == 200, body
    return body["volume_type"]["id"]
