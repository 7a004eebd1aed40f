"""The WSGI assembly (middleware order, worker loading) and volattach-api."""
import os

import pytest
from oslo_config import cfg
from oslo_log import log as oslo_logging

from volattach import rpc
from volattach.api import auth
from volattach.api import middleware
from volattach.api import wsgi as api_wsgi
from volattach import conf as volattach_conf
from volattach import wsgi_server
from volattach.wsgi import access_log
from volattach.cmd import api as cmd_api


def test_middleware_order_is_the_documented_one(conf, facade):
    assert [name for name, _wrap in api_wsgi.MIDDLEWARE] == \
        ["access log", "request id", "fault wrapper", "body limit", "auth",
         "microversion"]
    app = api_wsgi.make_app(conf, compute_api=facade)
    layers = []
    while hasattr(app, "application"):
        layers.append(type(app))
        app = app.application
    assert layers == [access_log.AccessLog,
                      middleware.RequestId, middleware.FaultWrapper,
                      middleware.BodyLimit, auth.NoAuth,
                      middleware.Microversion]
    assert type(app).__module__.startswith("falcon")
    doc = api_wsgi.__doc__
    assert doc.index("access log") < \
        doc.index("request id") < doc.index("fault wrapper") < \
        doc.index("body limit") < doc.index("auth ") < \
        doc.index("microversion") < doc.index("router")


def _private_conf():
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    oslo_logging.register_options(conf)
    return conf


@pytest.fixture(autouse=True)
def _keep_logging(monkeypatch):
    # parse_args sets up oslo.log; leave the test process's logging alone
    monkeypatch.setattr(volattach_conf.logging, "setup", lambda *a, **kw: None)


def test_worker_loads_config_from_the_environment(tmp_path, monkeypatch):
    config = tmp_path / "volattach.conf"
    config.write_text("[DEFAULT]\nstate_path = %s\n[api]\n"
                      "public_endpoint = https://cloud.example/compute\n"
                      % tmp_path)
    extra = tmp_path / "extra.conf"
    extra.write_text("[api]\nmax_limit = 7\n")
    monkeypatch.setenv(api_wsgi.CONFIG_FILE_ENV, "%s:%s" % (config, extra))
    seen = {}
    monkeypatch.setattr(rpc, "init", lambda conf: seen.setdefault("rpc", conf))
    monkeypatch.setattr(api_wsgi, "make_app",
                        lambda conf: seen.setdefault("app", conf) and "app")
    # the worker registers its service row (a heartbeat thread: not here)
    monkeypatch.setattr(api_wsgi, "register_api_service",
                        lambda: seen.setdefault("registered", True))
    conf = _private_conf()
    assert api_wsgi.load_application(conf) == "app"
    assert seen["rpc"] is conf and seen["app"] is conf
    assert seen["registered"]
    assert conf.api.public_endpoint == "https://cloud.example/compute"
    assert conf.api.max_limit == 7


def test_worker_keeps_an_already_parsed_config(tmp_path, monkeypatch):
    monkeypatch.setenv(api_wsgi.CONFIG_FILE_ENV, str(tmp_path / "missing.conf"))
    monkeypatch.setattr(rpc, "init", lambda conf: None)
    monkeypatch.setattr(api_wsgi, "make_app", lambda conf: conf)
    monkeypatch.setattr(api_wsgi, "register_api_service", lambda: None)
    conf = _private_conf()
    conf([], default_config_files=[])
    conf.set_override("max_limit", 3, group="api")
    assert api_wsgi.load_application(conf).api.max_limit == 3


def test_application_is_built_once_on_first_access(monkeypatch):
    built = []
    monkeypatch.setattr(api_wsgi, "_application", None)
    monkeypatch.setattr(api_wsgi, "load_application",
                        lambda: built.append(1) or "the app")
    assert api_wsgi.application == "the app"
    assert api_wsgi.application == "the app"
    assert built == [1]
    with pytest.raises(AttributeError):
        api_wsgi.no_such_name  # noqa: B018


def test_volattach_api_runs_gunicorn_with_the_config(tmp_path, monkeypatch):
    config = tmp_path / "api.conf"
    config.write_text("[DEFAULT]\nstate_path = %s\n[api]\nlisten = 0.0.0.0\n"
                      "port = 0\nworkers = 3\nthreads = 2\n"
                      "[wsgi]\nkeepalive_timeout = 75\n" % tmp_path)
    monkeypatch.setenv(api_wsgi.CONFIG_FILE_ENV, "")
    calls = []
    monkeypatch.setattr(wsgi_server, "run",
                        lambda *a, **kw: calls.append((a, kw)))
    conf = _private_conf()
    cmd_api.main(["--config-file", str(config)], conf=conf)
    # gunicorn gets the socket bound before it starts (volattach.listen)
    [(args, kwargs)] = calls
    sock = kwargs.pop("bind")
    with sock:
        assert sock.getsockname()[0] == "0.0.0.0"
    # the configuration whose files the start line names
    assert kwargs.pop("conf") is conf
    assert (args, kwargs) == (("volattach.api.wsgi:application",),
                              {"workers": 3, "threads": 2, "keepalive": 75.0,
                               "name": "volattach-api"})
    assert os.environ[api_wsgi.CONFIG_FILE_ENV] == str(config)


def test_bind_address_brackets_ipv6():
    conf = _private_conf()
    conf([], default_config_files=[])
    conf.set_override("listen", "::1", group="api")
    assert cmd_api.bind_address(conf) == "[::1]:8774"


def test_volattach_api_refuses_noauth_beyond_loopback(tmp_path, monkeypatch,
                                                     capsys):
    config = tmp_path / "api.conf"
    config.write_text("[api]\nlisten = 0.0.0.0\nauth_strategy = noauth\n")
    calls = []
    monkeypatch.setattr(wsgi_server, "run",
                        lambda *a, **kw: calls.append((a, kw)))
    with pytest.raises(SystemExit) as exc:
        cmd_api.main(["--config-file", str(config)], conf=_private_conf())
    assert exc.value.code == 2      # a configuration error (volattach.startup)
    assert "[DEFAULT] allow_insecure_noauth" in capsys.readouterr().err
    assert calls == []


def test_volattach_api_noauth_beyond_loopback_when_allowed(tmp_path,
                                                          monkeypatch):
    config = tmp_path / "api.conf"
    config.write_text("[DEFAULT]\nallow_insecure_noauth = true\n"
                      "[api]\nlisten = 0.0.0.0\nauth_strategy = noauth\n")
    monkeypatch.setenv(api_wsgi.CONFIG_FILE_ENV, "")
    calls = []
    monkeypatch.setattr(wsgi_server, "run",
                        lambda *a, **kw: calls.append((a, kw)))
    cmd_api.main(["--config-file", str(config)], conf=_private_conf())
    assert len(calls) == 1


def test_daemon_defaults_are_keystone_and_all_in_one_is_noauth():
    conf = _private_conf()
    conf([], default_config_files=[])
    assert (conf.api.auth_strategy, conf.volume.auth_strategy,
            conf.cinder.auth_strategy) == ("keystone",) * 3
    embedded = _private_conf()
    volattach_conf.set_embedded_defaults(embedded)
    embedded([], default_config_files=[])
    assert (embedded.api.auth_strategy, embedded.volume.auth_strategy,
            embedded.cinder.auth_strategy) == ("noauth",) * 3
