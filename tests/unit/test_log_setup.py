"""volattach.log_setup: the escaping formatter and where ``setup`` sends
the lines (stderr by default, the file of --log-file, never stdout)."""
import logging
import re
import sys

import pytest
from oslo_config import cfg
from oslo_log import log as oslo_logging

from volattach import log_setup

# every character that could end or fake a line, or hide in one
CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c",
            "\r", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9b", "\x9f",
            "\u2028", "\u2029"]
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
RAW_BUT_LF = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
FORGED = "2099-01-01 00:00:00.000 1 ERROR forged"


@pytest.mark.parametrize("char", CONTROLS)
def test_escape_makes_each_control_character_visible(char):
    escaped = log_setup.escape("a%sb" % char)
    assert not RAW.search(escaped), repr(escaped)
    assert escaped.startswith("a\\") and escaped.endswith("b")
    assert escaped == {"\n": "a\\nb", "\r": "a\\rb", "\t": "a\\tb",
                       "\x00": "a\\x00b", "\x85": "a\\x85b",
                       "\u2028": "a\\u2028b"}.get(char, escaped)


def _conf(**overrides):
    conf = cfg.ConfigOpts()
    oslo_logging.register_options(conf)
    conf([], project="volattach", default_config_files=[])
    for name, value in overrides.items():
        conf.set_override(name, value)
    return conf


def _record(msg, args, exc_info=None):
    return logging.LogRecord("volattach.api.faults", logging.INFO, __file__,
                             1, msg, args, exc_info)


def test_formatter_keeps_a_message_on_one_line():
    formatter = log_setup.EscapingFormatter(config=_conf(),
                                            project="volattach")
    for char in CONTROLS:
        line = formatter.format(_record("GET %s returned 404",
                                        ("/abc%s%s" % (char, FORGED),)))
        assert "\n" not in line and not RAW.search(line), repr(line)
        assert line.endswith(" returned 404")


def test_formatter_keeps_a_traceback_on_its_own_prefixed_lines():
    formatter = log_setup.EscapingFormatter(config=_conf(),
                                            project="volattach")
    try:
        raise ValueError("bad\n%s\x00" % FORGED)
    except ValueError:
        record = _record("failed %s", ("x\ny",), exc_info=sys.exc_info())
    lines = formatter.format(record).split("\n")
    assert lines[0].endswith("failed x\\ny")
    assert len(lines) > 3           # the traceback keeps its lines
    assert not any(RAW_BUT_LF.search(line) for line in lines)
    # each traceback line starts with oslo.log's exception prefix
    assert not any(line.startswith(FORGED) for line in lines), lines
    assert any(line.endswith(FORGED + "\\x00") for line in lines), lines


@pytest.fixture
def root_handlers():
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    try:
        yield root
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            if handler not in saved[0]:
                handler.close()
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])


def test_setup_logs_to_stderr_by_default(root_handlers):
    log_setup.setup(_conf())
    handlers = root_handlers.handlers
    assert len(handlers) == 1
    assert handlers[0].stream is sys.stderr
    assert type(handlers[0].formatter) is log_setup.EscapingFormatter


@pytest.mark.parametrize("option", ["log_file", "log_dir"])
def test_setup_with_a_log_file_escapes_there_and_leaves_stdout(
        root_handlers, tmp_path, capsys, option):
    if option == "log_file":
        log_file = tmp_path / "volattach.log"
        log_setup.setup(_conf(log_file=str(log_file)))
    else:
        log_setup.setup(_conf(log_dir=str(tmp_path)))
        [log_file] = tmp_path.glob("*.log")
    handlers = root_handlers.handlers
    assert [type(h.formatter) for h in handlers] == [
        log_setup.EscapingFormatter]
    logging.getLogger("volattach.test").warning("name %s", "a\x00b\nc")
    for handler in handlers:
        handler.flush()
    assert log_file.read_text().endswith(" name a\\x00b\\nc\n")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_masked_transport_url():
    assert log_setup._without_password(
        "rabbit://guest:secret@h1:5672,u:pw@h2:5672/vhost") == (
        "rabbit://guest:***@h1:5672,u:***@h2:5672/vhost")
