"""The compute daemon loads no database, conductor-side or volume-client
code: its entry point, its objects and its service, built in a fresh
interpreter, leave none of those modules in ``sys.modules``."""
import json
import subprocess
import sys

SCRIPT = r"""
import json, sys
from volattach.cmd import compute as cmd_compute
from volattach import conf as volattach_conf
from volattach import objects, rpc
from volattach.compute import service as compute_service
volattach_conf.parse_args([])
objects.register_all()
rpc.init(volattach_conf.CONF, url=volattach_conf.MEMORY_TRANSPORT_URL)
svc = compute_service.ComputeService("guard-host")
assert svc.manager is not None and cmd_compute.main
print(json.dumps(sorted(sys.modules)))
"""

# the one conductor module a compute needs: the RPC client it talks through
ALLOWED_CONDUCTOR = {"volattach.conductor", "volattach.conductor.rpcapi"}


def _modules_of_compute_daemon():
    out = subprocess.run([sys.executable, "-c", SCRIPT], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_compute_daemon_loads_no_database_conductor_or_volume_code():
    modules = _modules_of_compute_daemon()
    assert "volattach.compute.service" in modules  # the probe did run
    forbidden = [m for m in modules if (
        m == "volattach.db" or m.startswith("volattach.db.")
        or m.startswith("volattach.db_")
        or m == "volattach.volume" or m.startswith("volattach.volume.")
        or m == "volattach.volume_client"
        or m.startswith("volattach.volume_client.")
        or m == "volattach.servicegroup"
        or (m.startswith("volattach.conductor") and m not in ALLOWED_CONDUCTOR)
        or m == "sqlalchemy" or m.startswith("sqlalchemy.")
        or m == "alembic" or m.startswith("alembic."))]
    assert forbidden == []
