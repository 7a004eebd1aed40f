"""The access log middleware (volattach.wsgi.access_log) around a small
WSGI application: the line, its context, the thread's context store, and
no work when INFO is off."""
import inspect
import json
import logging

import pytest
from oslo_context import context as oslo_context
from oslo_log import formatters

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


def _serve(app, environ, start_response):
    """What a WSGI server does with the middleware: call it, read the
    answer whole, close it (PEP 3333); the chunks read."""
    answer = access_log.AccessLog(app)(environ, start_response)
    try:
        return list(answer)
    finally:
        close = getattr(answer, "close", None)
        if close is not None:
            close()


def test_one_line_with_the_request_and_its_context(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app()
    statuses = []
    body = _serve(app, _environ(), lambda status, headers, exc_info=None:
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
    _serve(app, _environ(REQUEST_URI="/v2.1/servers?a=%0A"), lambda *a: None)
    assert '"GET /v2.1/servers?a=%0A" ' in _records(caplog)[0].getMessage()


def test_a_decoded_path_is_quoted(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app()
    _serve(app, _environ(PATH_INFO="/v2.1/a\nb", QUERY_STRING=""),
           lambda *a: None)
    assert '"GET /v2.1/a%0Ab" ' in _records(caplog)[0].getMessage()


def test_a_request_refused_before_auth_has_its_request_id(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app(status="401 Unauthorized", authenticated=False)
    _serve(app, _environ(), lambda *a: None)
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
    _serve(app, _environ(), lambda *a: None)
    assert seen["context before"] is None
    assert oslo_context.get_current() is None
    assert "mallory" not in repr(_records(caplog)[0].context.to_dict())


def test_the_line_waits_for_the_server_to_close_the_answer(caplog):
    """The line is written when the server closes the answer (after
    sending it), after the application's own close(); until then the
    thread keeps the request's context."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    closed = []

    class Body(list):
        def close(self):
            closed.append(_records(caplog) == [])

    def app(environ, start_response):
        volattach_context.from_noauth_token("alice:demo", request_id="req-1")
        start_response("200 OK", [("Content-Length", "2")])
        return Body([b"{}"])

    answer = access_log.AccessLog(app)(_environ(), lambda *a: None)
    assert list(answer) == [b"{}"]
    assert _records(caplog) == []
    assert oslo_context.get_current().request_id == "req-1"
    answer.close()
    assert closed == [True]          # the application's close came first
    [record] = _records(caplog)
    assert " status: 200 len: 2 " in record.getMessage()
    assert record.context.request_id == "req-1"
    assert oslo_context.get_current() is None


def test_the_client_has_the_answer_before_the_line_is_written(conf):
    """Over a real socket (the embedded waitress server): the handler that
    writes the line waits until the client has read the whole answer; had
    the line been written before the answer was sent, the client would
    wait for it and the handler would time out."""
    import http.client
    import threading

    from volattach import embedded_server

    received = threading.Event()
    waited = []

    class Handler(logging.Handler):
        def emit(self, record):
            waited.append(received.wait(10))

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [b"{}"]

    logger = logging.getLogger(LOGGER)
    handler = Handler()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    server = embedded_server.serve_in_thread(
        access_log.AccessLog(app), "127.0.0.1", 0, name="test", conf=conf)
    try:
        client = http.client.HTTPConnection("127.0.0.1", server.port,
                                            timeout=5)
        client.request("GET", "/")
        answer = client.getresponse()
        assert answer.status == 200 and answer.read() == b"{}"
        received.set()
        client.close()
        for _ in range(500):
            if waited:
                break
            threading.Event().wait(0.01)
        assert waited == [True]
    finally:
        received.set()
        server.shutdown()
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_one_chunk_answer_without_length_still_gets_one(conf, caplog):
    """waitress gives a one-chunk answer without Content-Length the
    length of its chunk (from ``len()`` of the answer) and keeps the
    connection: the wrapped answer still has that length."""
    import http.client

    from volattach import embedded_server

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    caplog.set_level(logging.INFO, logger=LOGGER)
    server = embedded_server.serve_in_thread(
        access_log.AccessLog(app), "127.0.0.1", 0, name="test", conf=conf)
    try:
        client = http.client.HTTPConnection("127.0.0.1", server.port,
                                            timeout=5)
        for _ in range(2):          # twice over one kept connection
            client.request("GET", "/")
            answer = client.getresponse()
            assert answer.read() == b"{}"
            assert answer.getheader("Content-Length") == "2"
            assert answer.getheader("Connection") != "close"
        client.close()
    finally:
        server.shutdown()
    assert len(_records(caplog)) == 2


def test_an_escaping_exception_is_logged_as_500_and_raised(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    app, _seen = _app(raises=RuntimeError("boom"))
    with pytest.raises(RuntimeError):
        _serve(app, _environ(), lambda *a: None)
    assert " status: 500 " in _records(caplog)[0].getMessage()
    assert oslo_context.get_current() is None


def test_nothing_is_done_when_info_is_off(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    volattach_context.from_noauth_token("mallory:evil")
    app, seen = _app()

    def start_response(*args):
        return None

    _serve(app, _environ(), start_response)
    assert not _records(caplog)
    # the application got the server's own start_response: no wrapper
    assert seen["start_response"] is start_response
    assert seen["context before"] is None
    assert oslo_context.get_current() is None


# The line as oslo.log writes it, against the plain ``LOG.info`` call the
# middleware made before it built its records itself (issue 23): same text,
# same fields, same context values.

CALLER_FIELDS = ("pathname", "filename", "module", "lineno", "funcName")
TIME_FIELDS = ("created", "msecs", "relativeCreated", "asctime", "isotime")


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def conf():
    from volattach.conf import CONF
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("logging_context_format_string")


@pytest.fixture
def kept():
    """The access log's records, kept unformatted, the logger at INFO."""
    logger = logging.getLogger(LOGGER)
    handler = _Keep()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, handler.records
    logger.removeHandler(handler)
    logger.setLevel(level)
    logger.propagate = propagate


def _old_path_record(logger, records, request, elapsed):
    """The record of ``LOG.info(_LINE, ..., extra={"context": ...})`` with
    the request's context, as the middleware logged before issue 23."""
    volattach_context.from_noauth_token("alice:demo", request_id="req-inner")
    context = oslo_context.get_current()
    if not request.get("authenticated", True):
        context = oslo_context.RequestContext(request_id="req-inner",
                                              overwrite=False)
    logger.info(access_log._LINE, "10.0.0.9", "GET", "/v2.1/servers?limit=1",
                request["status"][:3], "2", "2.5", elapsed,
                extra={"context": context})
    volattach_context.clear_current()
    return records.pop()


def _same_time(old, new):
    for name in ("created", "msecs", "relativeCreated"):
        setattr(old, name, getattr(new, name))


@pytest.mark.parametrize("request_", [
    {"status": "200 OK"},
    {"status": "401 Unauthorized", "authenticated": False},
], ids=["authenticated", "refused before auth"])
@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG],
                         ids=["INFO", "DEBUG deployment"])
def test_the_line_is_the_plain_info_calls_line(conf, kept, request_, level):
    logger, records = kept
    logger.setLevel(level)
    app, _seen = _app(status=request_["status"],
                      authenticated=request_.get("authenticated", True))
    _serve(app, _environ(), lambda *a: None)
    new = records.pop()
    old = _old_path_record(logger, records, request_, new.args[-1])
    _same_time(old, new)

    text = formatters.ContextFormatter(config=conf,
                                       datefmt=conf.log_date_format)
    old_line, new_line = text.format(old), text.format(new)
    assert new_line == old_line
    assert " INFO volattach.wsgi.access_log [" in new_line
    if request_.get("authenticated", True):
        assert "req-inner alice demo - - - -] 10.0.0.9 " in new_line

    # every field the formatter put on the record, caller and time aside
    skip = set(CALLER_FIELDS + TIME_FIELDS + ("context", "thread"))
    fields = {k: v for k, v in vars(new).items() if k not in skip}
    assert fields == {k: v for k, v in vars(old).items() if k not in skip}
    assert "user_identity" in fields and "request_id" in fields
    assert new.context.to_dict() == old.context.to_dict()
    assert (new.context.get_logging_values()
            == old.context.get_logging_values())
    assert type(new.context) is type(old.context)

    # and the JSON lines (use_json) carry the same values
    as_json = formatters.JSONFormatter(datefmt=conf.log_date_format)
    old_json, new_json = (json.loads(as_json.format(r)) for r in (old, new))
    for key in ("pathname", "filename", "module", "lineno", "funcname",
                "thread"):
        old_json.pop(key), new_json.pop(key)
    assert new_json == old_json
    assert new_json["context"]["request_id"] == "req-inner"


def test_a_format_that_prints_the_caller_names_the_middleware(conf, kept):
    """A deployment whose format prints the caller (the DEBUG suffix's
    fields) gets the middleware's own location, as ``findCaller`` gave."""
    logger, records = kept
    logger.setLevel(logging.DEBUG)
    conf.set_override("logging_context_format_string",
                      conf.logging_context_format_string + " "
                      + conf.logging_debug_format_suffix)
    app, _seen = _app()
    _serve(app, _environ(), lambda *a: None)
    [record] = records
    line = formatters.ContextFormatter(config=conf).format(record)
    source, first = inspect.getsourcelines(access_log.AccessLog._log)
    assert line.endswith(" _log %s:%d" % (access_log.__file__,
                                           record.lineno)), line
    # the line is the statement that makes the record, inside _log
    assert first < record.lineno < first + len(source)
    statement = source[record.lineno - first - 1:record.lineno - first + 1]
    assert "makeRecord" in "".join(statement), statement
    assert record.filename == "access_log.py"
    assert record.module == "access_log"


def test_no_stack_walk_for_the_line(kept, monkeypatch):
    _logger, records = kept

    def walk(*args, **kwargs):
        raise AssertionError("findCaller called")

    monkeypatch.setattr(logging.Logger, "findCaller", walk)
    app, _seen = _app()
    _serve(app, _environ(), lambda *a: None)
    assert len(records) == 1


def test_the_context_logging_values_are_computed_once(conf, kept,
                                                      monkeypatch):
    logger, records = kept
    handler = logging.NullHandler()
    handler.setFormatter(formatters.ContextFormatter(config=conf))
    handler.handle = lambda record: handler.format(record)
    logger.addHandler(handler)
    calls = []
    plain = volattach_context.RequestContext.get_logging_values

    def counted(self):
        calls.append(self.request_id)
        return plain(self)

    monkeypatch.setattr(volattach_context.RequestContext,
                        "get_logging_values", counted)
    contexts = []

    def app(environ, start_response):
        contexts.append(volattach_context.from_noauth_token(
            "alice:demo", request_id="req-inner"))
        start_response("200 OK", [])
        return [b"{}"]

    try:
        _serve(app, _environ(), lambda *a: None)
    finally:
        logger.removeHandler(handler)
    # once, where oslo.log's ContextFormatter alone asks twice
    assert calls == ["req-inner"]
    [record] = records
    assert record.context.get_logging_values()["user"] == "alice"
    assert record.context.get_logging_values() is not (
        record.context.get_logging_values())
    # the request's own context is left as it was
    assert "get_logging_values" not in vars(contexts[0])
    assert record.context is not contexts[0]
