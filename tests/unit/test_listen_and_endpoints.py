"""Sockets bound before anything starts (``volattach.listen``), endpoints
that follow the listen options (``conf.cinder_endpoint``), and the admin
context of the reconcile pass under noauth."""
import socket

import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import listen
from volattach.conductor import reconcile


def _conf():
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf([], default_config_files=[])
    return conf


def test_bind_listens_and_a_taken_port_is_one_line():
    sock = listen.bind("127.0.0.1", 0, "api")
    with sock:
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass                                # it listens already
        with pytest.raises(listen.ListenError) as caught:
            listen.bind("127.0.0.1", port, "volume")
    assert str(caught.value) == (
        "cannot listen on 127.0.0.1:%d ([volume] listen/port): Address "
        "already in use" % port)


def test_bind_an_address_not_of_this_host():
    with pytest.raises(listen.ListenError) as caught:
        listen.bind("192.0.2.1", 0, "api")     # TEST-NET-1: not ours
    assert str(caught.value).startswith(
        "cannot listen on 192.0.2.1:0 ([api] listen/port): ")


@pytest.mark.parametrize("host,port,url", [
    ("127.0.0.1", 18776, "http://127.0.0.1:18776/v3"),
    ("0.0.0.0", 8776, "http://127.0.0.1:8776/v3"),
    ("::", 8776, "http://[::1]:8776/v3"),
    ("::1", 9776, "http://[::1]:9776/v3"),
    ("10.1.2.3", 8776, "http://10.1.2.3:8776/v3"),
])
def test_cinder_endpoint_follows_the_volume_listen_options(host, port, url):
    conf = _conf()
    assert volattach_conf.cinder_endpoint(conf) == "http://127.0.0.1:8776/v3"
    conf.set_override("listen", host, group="volume")
    conf.set_override("port", port, group="volume")
    assert volattach_conf.cinder_endpoint(conf) == url
    conf.set_override("endpoint", "http://cinder:8776/v3", group="cinder")
    assert volattach_conf.cinder_endpoint(conf) == "http://cinder:8776/v3"


def test_reconcile_admin_context_under_noauth_has_its_own_token():
    conf = _conf()
    context = reconcile.admin_context(conf)
    assert context.is_admin and context.auth_token is None   # keystone
    conf.set_override("auth_strategy", "noauth", group="cinder")
    context = reconcile.admin_context(conf, request_id="req-x")
    assert context.is_admin and context.request_id == "req-x"
    user, project, roles = context.auth_token.split(":")
    assert (user, project) == (context.user_id, context.project_id)
    assert "admin" in roles.split(",")


def test_periodic_pass_failing_on_the_volume_service_is_one_line(
        monkeypatch, caplog):
    """No credentials or no volume service: a WARNING line per pass, no
    traceback every reconcile_interval."""
    import logging

    from volattach import exception

    class NoCinder:
        def attachment_list(self, context, **kwargs):
            raise exception.CinderConnectionFailed(reason="no credentials")

    monkeypatch.setattr(reconcile, "is_leader", lambda context, host: True)
    periodic = reconcile.PeriodicReconciler("c1", NoCinder(), None, 0, 0)
    with caplog.at_level(logging.WARNING, logger=reconcile.LOG.name):
        assert periodic.run_once() is None
    [record] = [r for r in caplog.records if r.name == reconcile.LOG.name]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage() == (
        "reconcile pass failed: Connection to cinder host failed: no "
        "credentials")
