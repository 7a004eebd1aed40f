"""The module paths that the docs and the config samples name import.

Operators copy these lines (``gunicorn volattach.api.wsgi:application``,
``python -m benchmarks.ab``, a logger name to raise or lower): a path left
behind by a move fails here instead of on their machine.  Scanned: every
README, the files under ``etc/`` and ``devstack/``.  Checked: each
``<module>:<attribute>`` WSGI path, each ``python -m <module>`` and each
dotted ``volattach.<...>`` name (a module, or an attribute of one).
"""
import glob
import importlib
import importlib.util
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DOCS = sorted(
    set(glob.glob(os.path.join(REPO, "*.md")))
    | set(glob.glob(os.path.join(REPO, "*", "README.md")))
    | set(glob.glob(os.path.join(REPO, "tests", "*", "README.md")))
    | {p for p in glob.glob(os.path.join(REPO, "etc", "**", "*"), recursive=True)
       if os.path.isfile(p)}
    | {p for p in glob.glob(os.path.join(REPO, "devstack", "**", "*"), recursive=True)
       if os.path.isfile(p)})

WSGI_PATH = re.compile(r"\b((?:volattach|api|volume)(?:\.\w+)+):(\w+)\b")
RUN_MODULE = re.compile(r"python3? -m ((?:volattach|benchmarks|tests)(?:\.\w+)+)")
DOTTED = re.compile(r"\bvolattach(?:\.[A-Za-z_]\w*)+")
# names that are files, not modules (volattach.conf is both: the module
# imports, so it passes either way)
FILE_SUFFIXES = (".sqlite", ".sample", ".yaml", ".json", ".log", ".sock",
                 ".keyring", ".pem", ".conf", ".service", ".in", ".txt")


def _mentions(pattern):
    found = []
    for path in DOCS:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        for match in pattern.finditer(text):
            found.append((os.path.relpath(path, REPO), match))
    return found


def _resolves(dotted):
    """True when ``dotted`` is a module or an attribute path inside one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_the_scan_sees_the_docs():
    assert any(p.endswith("README.md") for p in DOCS)
    assert _mentions(WSGI_PATH), "no WSGI path found: the pattern is stale"
    assert _mentions(RUN_MODULE), "no python -m found: the pattern is stale"


@pytest.mark.parametrize("where,match", _mentions(WSGI_PATH),
                         ids=lambda v: v if isinstance(v, str) else v.group(0))
def test_wsgi_paths_import(where, match):
    module, attribute = match.group(1), match.group(2)
    assert module.startswith("volattach."), (
        "%s names %s: the installed module is volattach.%s"
        % (where, match.group(0), module))
    assert hasattr(importlib.import_module(module), attribute), (
        "%s names %s" % (where, match.group(0)))


@pytest.mark.parametrize("where,match", _mentions(RUN_MODULE),
                         ids=lambda v: v if isinstance(v, str) else v.group(1))
def test_run_modules_import(where, match):
    # found, not run: a benchmark script may do its work at import
    assert importlib.util.find_spec(match.group(1)) is not None, (
        "%s runs %s" % (where, match.group(0)))


def test_dotted_volattach_names_resolve():
    stale = sorted({(where, m.group(0)) for where, m in _mentions(DOTTED)
                    if not m.group(0).endswith(FILE_SUFFIXES)
                    and not _resolves(m.group(0))})
    assert not stale, "names that do not import: %s" % stale


def test_a_stale_path_is_caught():
    assert not _resolves("volattach.api.no_such_module")
    assert not _resolves("volattach.api.wsgi.no_such_attribute")
    assert _resolves("volattach.api.wsgi.application")
