"""The conductor process loads none of the volume service's code: every
module of ``volattach.conductor`` and its console script, imported in a
fresh interpreter and the service built (objects registered, an in-memory
RPC transport, ``ConductorService``), leave no ``volattach.volume`` module
in ``sys.modules``.  The conductor calls the volume service over HTTP
through ``volattach.volume_client``; what it shares with the service (the
status strings) lives in ``volattach.volume_states``.  Imports inside
functions (loaded only when a code path runs) are checked in the sources."""
import ast
import json
import pathlib
import subprocess
import sys

import volattach.conductor

SCRIPT = r"""
import importlib, json, pkgutil, sys
import volattach.conductor
for info in pkgutil.walk_packages(volattach.conductor.__path__,
                                  "volattach.conductor."):
    importlib.import_module(info.name)
from volattach.cmd import conductor as cmd_conductor
from volattach import conf as volattach_conf
from volattach import objects, rpc
from volattach.conductor import service as conductor_service
volattach_conf.parse_args([])
objects.register_all()
rpc.init(volattach_conf.CONF, url=volattach_conf.MEMORY_TRANSPORT_URL)
svc = conductor_service.ConductorService("guard-host")
assert svc.task_manager.volume_api is not None and cmd_conductor.main
print(json.dumps(sorted(sys.modules)))
"""


def _modules_of_conductor_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_conductor_process_loads_no_volume_service_code():
    modules = _modules_of_conductor_process()
    # the probe did run: the reconcile pass and the volume client are loaded
    assert "volattach.conductor.reconcile" in modules
    assert "volattach.volume_client.cinder" in modules
    forbidden = [m for m in modules
                 if m == "volattach.volume" or m.startswith("volattach.volume.")]
    assert forbidden == []


def _imported_names(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from ("%s.%s" % (node.module, alias.name)
                        for alias in node.names)


def test_no_conductor_module_imports_the_volume_service_even_lazily():
    root = pathlib.Path(volattach.conductor.__file__).parent
    sources = sorted(root.rglob("*.py"))
    assert root / "reconcile.py" in sources
    found = []
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        found += ["%s: %s" % (path.relative_to(root), name)
                  for name in _imported_names(tree)
                  if name == "volattach.volume"
                  or name.startswith("volattach.volume.")]
    assert found == []
