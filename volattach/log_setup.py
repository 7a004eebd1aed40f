"""Logging of every volattach command: where lines go, how they are made
safe, and the lines that mark a daemon's start and stop.

``setup(conf)`` runs oslo.log's setup, then:

- lines go to stderr unless ``--log-file``/``--log-dir`` (or the journal)
  is given: oslo.log's fall-back handler writes to stdout, which is the
  commands' own output (``volattach-manage``'s tables and summaries);
- every handler it configured (console, log file, journal, syslog) gets
  ``EscapingFormatter``: oslo.log's ``ContextFormatter`` whose line, prefix
  and message alike, has every control character escaped (CR, LF, NUL, the
  other C0 and C1 characters, DEL, U+2028 and U+2029) as ``\\n``,
  ``\\r``, ``\\t``, ``\\xNN`` or ``\\uNNNN``.  A value from a request (a
  path, a server name, a header, a noauth user or project in the prefix)
  can then never start a line of its own, whichever call site logs it.
  Only the traceback of a record keeps its newlines (each of its lines
  carries ``logging_exception_prefix``); its other control characters are
  escaped too.

gunicorn's own logger (``volattach-api``, ``volattach-volume``) hands its
lines to these handlers as well (``volattach.wsgi_server``).

``started(name, conf, listening)`` and ``stopped(name)``: a daemon's INFO
lines once it listens (version, configuration files, addresses) and once
it has stopped.  "started" is logged only then, so that a start-up error
stays the one line that names it.
"""
import logging
import re
import sys
import urllib.parse

from oslo_log import formatters
from oslo_log import log as oslo_logging

LOG = logging.getLogger(__name__)

# C0 controls (LF, CR, NUL, TAB...), DEL, C1 controls (NEL U+0085...),
# LINE SEPARATOR and PARAGRAPH SEPARATOR
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# the same but LF: a traceback's own line breaks
_UNSAFE_BUT_LF = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match):
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def escape(text):
    """``text`` with every control character as a visible escape."""
    # isprintable: no control character (nor other unprintable ones), the
    # common case, checked at C speed
    if text.isprintable():
        return text
    return _UNSAFE.sub(_escaped, text)


class EscapingFormatter(formatters.ContextFormatter):
    """oslo.log's ContextFormatter whose lines cannot be forged (module
    doc)."""

    def formatMessage(self, record):
        return escape(super().formatMessage(record))

    def formatException(self, ei, *, record=None):
        text = super().formatException(ei, record=record)
        return _UNSAFE_BUT_LF.sub(_escaped, text)

    def formatStack(self, stack_info):
        return _UNSAFE_BUT_LF.sub(_escaped, super().formatStack(stack_info))


def setup(conf, project="volattach"):
    """oslo.log's setup for ``conf``, then stderr and the escaping
    formatter (module doc)."""
    from volattach import conf as volattach_conf
    oslo_logging.setup(conf, project,
                       version=volattach_conf.version_string())
    # a logging configuration file of the operator's
    # (``log_config_append``) chooses its own streams
    use_escaping_formatter(conf, to_stderr=not conf.log_config_append)


def use_escaping_formatter(conf, logger=None, to_stderr=True):
    """Give each handler of ``logger`` (the root logger) with oslo.log's
    ContextFormatter the escaping one and, with ``to_stderr``, move a
    handler that writes to stdout to stderr."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if (to_stderr and isinstance(handler, logging.StreamHandler)
                and getattr(handler, "stream", None) is sys.stdout):
            handler.setStream(sys.stderr)
        current = handler.formatter
        if type(current) is formatters.ContextFormatter:
            handler.setFormatter(EscapingFormatter(
                project=current.project, version=current.version,
                datefmt=current.datefmt, config=conf))


# a line of the process, not of the request its thread served last
_NO_CONTEXT = {"context": None}


def _config_files(conf):
    files = list(conf.config_file or [])
    files += ["%s/" % d for d in (conf.config_dir or [])]
    return ", ".join(files) or "none (defaults)"


def _without_password(url):
    """A transport URL fit for a log line: its passwords masked."""
    parts = urllib.parse.urlsplit(url)
    hosts = []
    for host in parts.netloc.split(","):
        user, at, where = host.rpartition("@")
        if at and ":" in user:
            user = user.split(":", 1)[0] + ":***"
        hosts.append(user + at + where if at else where)
    return urllib.parse.urlunsplit(parts._replace(netloc=",".join(hosts)))


def rpc_address(conf, url=None):
    """What an RPC daemon listens on: its transport URL, password masked."""
    from volattach import conf as volattach_conf
    from volattach import rpc
    url = url or rpc._configured_url(conf) or volattach_conf.DEFAULT_TRANSPORT_URL
    return "rpc %s" % _without_password(url)


def started(name, conf, listening=()):
    """The INFO line of daemon ``name`` once it listens."""
    from volattach import conf as volattach_conf
    LOG.info("%s %s started; config files: %s; listening on: %s", name,
             volattach_conf.version_string(), _config_files(conf),
             ", ".join(listening) or "-", extra=_NO_CONTEXT)


def stopped(name):
    """The last INFO line of daemon ``name``."""
    LOG.info("%s stopped", name, extra=_NO_CONTEXT)
