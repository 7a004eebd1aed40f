"""volattach.wsgi_server: the daemons' gunicorn settings and runner, its
start and stop lines, gunicorn's lines through volattach's handlers."""
import types

import pytest

from volattach import wsgi_server


def test_gunicorn_workers_are_gthread_even_with_one_thread():
    options = wsgi_server.gunicorn_options("127.0.0.1:8776", workers=2)
    assert options["worker_class"] == "gthread"
    assert options["threads"] == 1
    assert options["workers"] == 2
    assert options["bind"] == "127.0.0.1:8776"
    # [wsgi] keepalive_timeout's default, not gunicorn's 2 s
    assert options["keepalive"] == 60
    assert wsgi_server.gunicorn_options("h:1", keepalive=0.5)["keepalive"] == 1


def test_run_passes_the_options_to_gunicorn(monkeypatch):
    ran = []

    class FakeApplication:
        def __init__(self, app_uri, options):
            ran.append((app_uri, options))

        def run(self):
            ran.append("ran")
    monkeypatch.setattr(wsgi_server, "_Application", FakeApplication)
    wsgi_server.run("volattach.volume.wsgi:application", bind="127.0.0.1:1", workers=3,
                    extra={"keepalive": 5})
    (uri, options), state = ran
    assert (uri, state) == ("volattach.volume.wsgi:application", "ran")
    assert options["worker_class"] == "gthread"
    assert (options["workers"], options["keepalive"]) == (3, 5)


def test_gunicorn_lines_go_to_the_root_handlers():
    from gunicorn.config import Config
    logger = wsgi_server._Logger(Config())
    assert logger.error_log.propagate
    assert not [h for h in logger.error_log.handlers
                if getattr(h, "_gunicorn", False)]


def _fake_gunicorn(monkeypatch, in_run=None):
    class FakeApplication:
        def __init__(self, app_uri, options):
            pass

        def run(self):
            if in_run is not None:
                in_run()
            raise SystemExit(0)     # as gunicorn's master and workers leave
    monkeypatch.setattr(wsgi_server, "_Application", FakeApplication)


def test_run_logs_started_and_the_masters_stop(monkeypatch, caplog):
    _fake_gunicorn(monkeypatch)
    caplog.set_level("INFO", logger="volattach.log_setup")
    conf = types.SimpleNamespace(config_file=["/etc/v.conf"], config_dir=[])
    with pytest.raises(SystemExit):
        wsgi_server.run("x:app", bind="127.0.0.1:1", name="volattach-x",
                        conf=conf)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("volattach-x ")
    assert messages[0].endswith(" started; config files: /etc/v.conf; "
                                "listening on: 127.0.0.1:1")
    assert messages[1:] == ["volattach-x stopped"]


def test_a_worker_leaving_logs_no_stop(monkeypatch, caplog):
    # a forked worker leaves through the master's frames: another pid
    _fake_gunicorn(monkeypatch, in_run=lambda: monkeypatch.setattr(
        wsgi_server.os, "getpid", lambda: -1))
    caplog.set_level("INFO", logger="volattach.log_setup")
    conf = types.SimpleNamespace(config_file=[], config_dir=[])
    with pytest.raises(SystemExit):
        wsgi_server.run("x:app", bind="127.0.0.1:1", name="volattach-x",
                        conf=conf)
    assert not [r for r in caplog.records if "stopped" in r.getMessage()]
