"""The API process loads no compute internals and no conductor workflow
code: every module of ``volattach.api``, its console script and its WSGI
entry point, imported in a fresh interpreter and the application built
(objects registered, an in-memory RPC transport, ``make_app``), leave in
``sys.modules`` no ``volattach.compute`` module but the compute's RPC
client, and none of the conductor's tasks, manager or reconcile pass.
What the API shares with them lives in neutral modules
(``volattach.device_naming``, ``volattach.volume_release``,
``volattach.transient``)."""
import json
import subprocess
import sys

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
