"""The API process loads no compute internals and no conductor workflow
code: every module of ``volattach.api``, its console script and its WSGI
entry point, imported in a fresh interpreter and the application built
(objects registered, an in-memory RPC transport, ``make_app``), leave in
``sys.modules`` no ``volattach.compute`` module but the compute's RPC
client, and none of the conductor's tasks, manager or reconcile pass.
What the API shares with them lives in neutral modules
(``volattach.device_naming``, ``volattach.volume_release``,
``volattach.transient``).

The probe only sees what importing and building the app loads; an import
inside a function runs at the first request that reaches it (the imageRef
check read the libvirt driver's image directory that way).  So the API's
source is also read: no ``import`` statement anywhere in it, at module or
function level, names a compute module but the RPC client."""
import ast
import json
import pathlib
import subprocess
import sys

import volattach.api

SCRIPT = r"""
import importlib, json, pkgutil, sys
import volattach.api
for info in pkgutil.walk_packages(volattach.api.__path__, "volattach.api."):
    importlib.import_module(info.name)
from volattach.cmd import api as cmd_api
from volattach.api import wsgi as api_wsgi
from volattach import conf as volattach_conf
from volattach import objects, rpc
volattach_conf.parse_args([])
objects.register_all()
rpc.init(volattach_conf.CONF, url=volattach_conf.MEMORY_TRANSPORT_URL)
assert api_wsgi.make_app(volattach_conf.CONF) and cmd_api.main
print(json.dumps(sorted(sys.modules)))
"""

# the compute modules the API needs: the RPC client it casts and calls
# through (and its package, whose __init__ is a docstring)
ALLOWED_COMPUTE = {"volattach.compute", "volattach.compute.rpcapi"}
# the conductor's workflow code: the API reaches it over RPC only
# (``volattach.conductor.api`` and ``rpcapi`` are its client)
FORBIDDEN_CONDUCTOR = ("volattach.conductor.tasks",
                       "volattach.conductor.manager",
                       "volattach.conductor.reconcile")


def _modules_of_api_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_api_process_loads_no_compute_internals_or_conductor_workflows():
    modules = _modules_of_api_process()
    # the probe did run and walked the API's packages
    assert "volattach.api.compute.servers" in modules
    assert "volattach.api.handlers.keypairs" in modules
    forbidden = [m for m in modules if (
        ((m == "volattach.compute" or m.startswith("volattach.compute."))
         and m not in ALLOWED_COMPUTE)
        or any(m == name or m.startswith(name + ".")
               for name in FORBIDDEN_CONDUCTOR))]
    assert forbidden == []


def _compute_imports(tree):
    """``(line, module)`` of every import in ``tree`` (at any depth) of a
    ``volattach.compute`` module other than the allowed ones, including
    ``from volattach.compute import X`` for X not allowed."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module + "." + alias.name for alias in node.names]
            if node.module.startswith("volattach.compute."):
                names.append(node.module)
        else:
            continue
        found += [(node.lineno, name) for name in names
                  if (name == "volattach.compute"
                      or name.startswith("volattach.compute."))
                  and name not in ALLOWED_COMPUTE]
    return found


def test_api_source_imports_no_compute_internals_even_inside_functions():
    sources = sorted(p for path in volattach.api.__path__
                     for p in pathlib.Path(path).rglob("*.py"))
    assert any(p.name == "servers.py" for p in sources), sources
    offenders = ["%s:%d imports %s" % (p, line, name) for p in sources
                 for line, name in _compute_imports(ast.parse(p.read_text()))]
    assert offenders == []


def test_the_source_scan_sees_function_level_imports():
    tree = ast.parse(
        "from volattach.compute import rpcapi\n"
        "def check():\n"
        "    from volattach.compute.virt.libvirt import images\n"
        "    import volattach.compute.manager\n"
        "    from volattach.compute import connections, rpcapi\n")
    assert _compute_imports(tree) == [
        (3, "volattach.compute.virt.libvirt.images"),
        (3, "volattach.compute.virt.libvirt"),
        (4, "volattach.compute.manager"),
        (5, "volattach.compute.connections")]
