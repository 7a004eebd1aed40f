"""The access log of the two HTTP services: one INFO line per request.

``AccessLog`` wraps a whole WSGI application, outermost, so that it sees
every answer (401s of authentication, 404s of unknown paths, 406s, 413s as
well as the handlers' own) and logs it on the logger
``volattach.wsgi.access_log``::

    127.0.0.1 "GET /v2.1/servers?limit=1" status: 200 len: 15 microversion: 2.1 time: 0.004512

oslo.log's prefix gives the line its request id and caller, those of the
request's context (``[req-... alice demo - - -]``); a request refused before
it has a caller (a 401) still carries its request id.  ``time`` is the
seconds the application took to answer (the body's transfer is not
counted); ``len`` and ``microversion`` are ``-`` when the answer has none.

The line is written when the server closes the answer (PEP 3333: once it
has sent it, or given up on it), not while the client waits for it: about
0.1-0.2 ms less per request, GET os-volume_attachments -9 % in
``benchmarks.ab`` (issue 23).  An application that raises is logged at
once, as a 500.

It also keeps oslo.context's thread-local store to one request: emptied
before the application runs and once its answer is closed, so that a line
logged by this thread outside a request never names the last request it
served.

At a level above INFO it formats nothing and reads no header.

The line costs less than a plain ``LOG.info`` with the same text (issue
23, ``benchmarks.access_log_cost``): the record is built here, its caller
being this module's ``_log`` (what ``findCaller``'s stack walk would have
found, without the walk), and its context is a copy of the request's whose
logging values are computed once, where oslo.log's ContextFormatter asks
for them twice per record.
"""
import logging
import sys
import time
from urllib import parse

from oslo_context import context as oslo_context

from volattach import context as volattach_context

LOG = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-openstack-request-id"
VERSION_HEADER = "openstack-api-version"

_LINE = ('%s "%s %s" status: %s len: %s microversion: %s time: %.6f')


def _target(environ):
    """The request target as the client sent it (waitress: REQUEST_URI,
    gunicorn: RAW_URI), else rebuilt from the decoded path, quoted so that
    no control character reaches the log."""
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI")
    if raw:
        return raw
    target = parse.quote(environ.get("SCRIPT_NAME", "")
                         + environ.get("PATH_INFO", ""), safe="/;=,:@")
    query = environ.get("QUERY_STRING")
    return target + "?" + query if query else target


class AccessLog:
    """WSGI middleware: the access log line of every request (module doc)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        volattach_context.clear_current()
        if not LOG.isEnabledFor(logging.INFO):
            try:
                return self.application(environ, start_response)
            finally:
                volattach_context.clear_current()
        answer = []

        def _start_response(status, headers, exc_info=None):
            answer[:] = (status, headers)
            return start_response(status, headers, exc_info)

        start = time.monotonic()
        try:
            iterable = self.application(environ, _start_response)
        except Exception:
            try:
                self._log(environ, answer or ("500", ()),
                          time.monotonic() - start)
            finally:
                volattach_context.clear_current()
            raise
        wrapper = _SizedAnswer if hasattr(iterable, "__len__") else _Answer
        return wrapper(iterable, self._log, environ, answer,
                       time.monotonic() - start)

    @staticmethod
    def _log(environ, answer, elapsed):
        if not LOG.isEnabledFor(logging.INFO):
            return
        status, headers = answer or ("-", ())
        request_id = length = version = None
        for name, value in headers:
            name = name.lower()
            if name == REQUEST_ID_HEADER:
                request_id = value
            elif name == "content-length":
                length = value
            elif name == VERSION_HEADER:
                version = value.rpartition(" ")[2]
        context = oslo_context.get_current()
        if context is None:
            # refused before authentication: the request id alone
            context = oslo_context.RequestContext(request_id=request_id,
                                                  overwrite=False)
        args = (environ.get("REMOTE_ADDR", "-"), environ.get("REQUEST_METHOD"),
                _target(environ), status[:3], length or "-", version or "-",
                elapsed)
        # LOG.info(_LINE, *args, extra=...) without findCaller's stack
        # walk: the caller is this frame (_log), at the line that makes the
        # record
        frame = sys._getframe()
        record = LOG.makeRecord(
            LOG.name, logging.INFO, frame.f_code.co_filename, frame.f_lineno,
            _LINE, args, None, frame.f_code.co_name,
            {"context": _logged_copy(context)})
        LOG.handle(record)


def _logged_copy(context):
    """A shallow copy of ``context`` for one log record, its logging values
    computed once (oslo.log's ContextFormatter calls ``get_logging_values``
    twice per record, its JSONFormatter too); each call still gets a dict
    of its own.  The request's context itself is left untouched."""
    values = context.get_logging_values()
    logged = object.__new__(type(context))
    logged.__dict__.update(context.__dict__)
    logged.get_logging_values = values.copy
    return logged


class _Answer:
    """The application's answer, logged when the server closes it: after
    the last byte was handed to the socket (PEP 3333: a server calls
    ``close()`` once it is done with the iterable, whether it sent it
    whole or not), so that the line is no longer written while the client
    waits.  Then the thread's context is emptied."""

    __slots__ = ("iterable", "log", "environ", "answer", "elapsed")

    def __init__(self, iterable, log, environ, answer, elapsed):
        self.iterable = iterable
        self.log = log
        self.environ = environ
        self.answer = answer
        self.elapsed = elapsed

    def __iter__(self):
        return iter(self.iterable)

    def close(self):
        try:
            close = getattr(self.iterable, "close", None)
            if close is not None:
                close()
        finally:
            try:
                self.log(self.environ, self.answer, self.elapsed)
            finally:
                volattach_context.clear_current()


class _SizedAnswer(_Answer):
    """An ``_Answer`` whose iterable has a length, which it gives: waitress
    sets the Content-Length of a one-chunk answer that has none from it."""

    __slots__ = ()

    def __len__(self):
        return len(self.iterable)
