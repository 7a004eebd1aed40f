"""The access log middleware (volattach.wsgi.access_log) around a small
WSGI application: the line, its context, the thread's context store, and
no work when INFO is off."""
import logging

import pytest
from oslo_context import context as oslo_context

from volattach import context as volattach_context
from volattach.wsgi import access_log

LOGGER = "volattach.wsgi.access_log"


def _app(status="200 OK", authenticated=True, raises=None):
    seen = {}

    def app(environ, start_response):
        seen["context before"] = oslo_context.get_current()
        seen["start_response"] = start_response
        if authenticated:
            volattach_context.from_noauth_token("alice:demo",
                                                request_id="req-inner")
        if raises:
            raise raises
        start_response(status, [("Content-Length", "2"),
                                ("X-OpenStack-Request-Id", "req-inner"),
                                ("OpenStack-API-Version", "compute 2.5")])
        return [b"{}"]
    return app, seen


def _environ(**extra):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v2.1/servers",
               "QUERY_STRING": "limit=1", "REMOTE_ADDR": "10.0.0.9"}
    environ.update(extra)
    return environ


@pytest.fixture(autouse=True)
def _empty_store():
    volattach_context.clear_current()
    yield
    volattach_context.clear_current()


def _records(caplog):
    return [r for r in caplog.records if r.name == LOGGER]


def test_one_line_with_the_request_and_its_context(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app()
    statuses = []
    body = access_log.AccessLog(app)(
        _environ(), lambda status, headers, exc_info=None:
        statuses.append(status))
    assert body == [b"{}"] and statuses == ["200 OK"]
    [record] = _records(caplog)
    assert record.levelno == logging.INFO
    message = record.getMessage()
    assert message.startswith(
        '10.0.0.9 "GET /v2.1/servers?limit=1" status: 200 len: 2 '
        'microversion: 2.5 time: '), message
    assert record.context.user_id == "alice"
    assert record.context.request_id == "req-inner"


def test_the_raw_target_is_logged_as_sent(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app()
    access_log.AccessLog(app)(_environ(REQUEST_URI="/v2.1/servers?a=%0A"),
                              lambda *a: None)
    assert '"GET /v2.1/servers?a=%0A" ' in _records(caplog)[0].getMessage()


def test_a_decoded_path_is_quoted(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app()
    access_log.AccessLog(app)(_environ(PATH_INFO="/v2.1/a\nb",
                                       QUERY_STRING=""), lambda *a: None)
    assert '"GET /v2.1/a%0Ab" ' in _records(caplog)[0].getMessage()


def test_a_request_refused_before_auth_has_its_request_id(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app(status="401 Unauthorized", authenticated=False)
    access_log.AccessLog(app)(_environ(), lambda *a: None)
    [record] = _records(caplog)
    assert " status: 401 " in record.getMessage()
    assert record.context.request_id == "req-inner"
    assert record.context.user_id is None


def test_the_store_is_emptied_before_and_after(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    stale = volattach_context.from_noauth_token("mallory:evil",
                                                request_id="req-stale")
    assert oslo_context.get_current() is stale
    app, seen = _app()
    access_log.AccessLog(app)(_environ(), lambda *a: None)
    assert seen["context before"] is None
    assert oslo_context.get_current() is None
    assert "mallory" not in repr(_records(caplog)[0].context.to_dict())


def test_an_escaping_exception_is_logged_as_500_and_raised(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app(raises=RuntimeError("boom"))
    with pytest.raises(RuntimeError):
        access_log.AccessLog(app)(_environ(), lambda *a: None)
    assert " status: 500 " in _records(caplog)[0].getMessage()
    assert oslo_context.get_current() is None


def test_nothing_is_done_when_info_is_off(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    volattach_context.from_noauth_token("mallory:evil")
    app, seen = _app()

    def start_response(*args):
        return None

    access_log.AccessLog(app)(_environ(), start_response)
    assert not _records(caplog)
    # the application got the server's own start_response: no wrapper
    assert seen["start_response"] is start_response
    assert seen["context before"] is None
    assert oslo_context.get_current() is None
