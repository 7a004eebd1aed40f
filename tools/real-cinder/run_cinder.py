"""Run a real OpenStack Cinder 29.0.0 on loopback, all in one process.

Run it with the python of the virtualenv that ``tools/real-cinder/setup.sh``
made (never volattach's own .venv)::

    .ci-state/cinder-venv/bin/python tools/real-cinder/run_cinder.py PORT \
        [--state-dir DIR] [--host NAME] [--debug] \
        [--backend rbd --rbd-pool POOL --rbd-user USER \
         --rbd-ceph-conf /etc/ceph/ceph.conf --rbd-secret-uuid UUID]

It writes ``DIR/cinder.conf`` (noauth with the project id in the URL,
``transport_url = fake:/`` unless ``--transport-url`` says otherwise, one
backend, SQLite in DIR, file-based
coordination and locks in DIR), migrates the database (what
``cinder-manage db sync`` does), then starts the scheduler, the volume
service (host ``<host>@<backend>``) and the ``osapi_volume`` WSGI API in this one
process under oslo.service's ServiceLauncher: with the in-memory ``fake:/``
transport the three can only talk inside one process.  When the API answers
on http://127.0.0.1:PORT/ it prints ``READY http://127.0.0.1:PORT`` on
stdout; Cinder's own log goes to ``DIR/cinder.log``.  SIGTERM or SIGINT
stops it.

The backend is ``fake`` (default: no storage at all) or ``rbd``: Cinder's own
``cinder.volume.drivers.rbd.RBDDriver`` on a real Ceph cluster, as
``--rbd-user`` (a cephx user whose keyring is at Ceph's standard path
``/etc/ceph/<cluster>.client.<user>.keyring``), in ``--rbd-pool``, with
``rbd_secret_uuid`` ``--rbd-secret-uuid`` (the uuid of the libvirt secret
computes use; without it Cinder sends the cluster's fsid).  That driver
imports Ceph's ``rados`` and ``rbd`` bindings: tools/real-cinder/setup.sh
links Debian's into the venv.

Two things differ from the stock ``cinder-*`` commands, both needed to run
them in one process:

* the ``fake`` backend's volume driver is ``MultiattachFakeDriver`` below: Cinder's
  ``FakeLoggingVolumeDriver`` (shipped in the cinder package) plus the pool
  capability ``multiattach=True``, without which volumes of a multiattach
  type fail with NoValidBackend;
* ``cinder.service.Service`` keeps the service id on the class, so in one
  process every service's heartbeat would update the row of whichever service
  was created last and the scheduler would soon see the other one as down.
  ``OwnIdService`` heartbeats with its own id.

Uses eventlet, as Cinder 29 does by default; nothing of volattach is imported.
"""
from cinder import monkey_patch; monkey_patch.patch()  # noqa: E702,I100

import argparse  # noqa: E402
import http.client  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from oslo_config import cfg  # noqa: E402
from oslo_db import exception as db_exc  # noqa: E402
from oslo_log import log as logging  # noqa: E402

from cinder.common import config  # noqa: E402
from cinder.common import constants  # noqa: E402
from cinder import context  # noqa: E402
from cinder import coordination  # noqa: E402
from cinder.db import migration  # noqa: E402
from cinder import exception  # noqa: E402
from cinder import i18n  # noqa: E402
from cinder import objects  # noqa: E402
from cinder import rpc  # noqa: E402
from cinder import service  # noqa: E402
from cinder.tests import fake_driver  # noqa: E402
from cinder import version  # noqa: E402

i18n.enable_lazy()
CONF = cfg.CONF
LOG = logging.getLogger("run_cinder")

BACKEND = "fake"
RBD_DRIVER = "cinder.volume.drivers.rbd.RBDDriver"


class MultiattachFakeDriver(fake_driver.FakeLoggingVolumeDriver):
    """Cinder's fake logging driver, reporting the multiattach capability."""

    def _update_volume_stats(self):
        super()._update_volume_stats()
        for pool in self._stats["pools"]:
            pool["multiattach"] = True


class OwnIdService(service.Service):
    """A Cinder service whose heartbeat updates its own services row.

    ``Service.report_state`` reads the row id from the class attribute
    ``Service.service_id``, which every service of the process overwrites.
    This is the same method with the id of this instance.  The class
    attribute itself is left pinned to the volume service's id (it tags the
    volume service's cleanup records).
    """

    volume_service_id = None

    def start(self):
        super().start()
        if self.binary == constants.VOLUME_BINARY:
            OwnIdService.volume_service_id = self.origin_service_id
        if OwnIdService.volume_service_id is not None:
            service.Service.service_id = OwnIdService.volume_service_id

    def _create_service_ref(self, ctxt, rpc_version=None):
        pinned = service.Service.service_id
        super()._create_service_ref(ctxt, rpc_version)
        if pinned is not None:
            service.Service.service_id = pinned

    def report_state(self):
        if not self.manager.is_working():
            LOG.error("Manager for service %s %s is reporting problems, not "
                      "sending heartbeat.", self.binary, self.host)
            return
        ctxt = context.get_admin_context()
        try:
            try:
                service_ref = objects.Service.get_by_id(
                    ctxt, self.origin_service_id)
            except exception.NotFound:
                LOG.debug("The service database object disappeared, "
                          "recreating it.")
                self._create_service_ref(ctxt)
                service_ref = objects.Service.get_by_id(
                    ctxt, self.origin_service_id)
            service_ref.report_count += 1
            if self.availability_zone != service_ref.availability_zone:
                service_ref.availability_zone = self.availability_zone
            service_ref.save(retry=False)
            if getattr(self, "model_disconnected", False):
                self.model_disconnected = False
                LOG.error("Recovered model server connection!")
        except db_exc.DBError:
            if not getattr(self, "model_disconnected", False):
                self.model_disconnected = True
                LOG.exception("Heartbeat of %s failed", self.binary)
        except Exception:
            if not getattr(self, "model_disconnected", False):
                self.model_disconnected = True
                LOG.exception("Heartbeat of %s failed", self.binary)


def _class_path(cls):
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def backend_section(backend="fake", rbd_pool="volumes", rbd_user=None,
                    rbd_ceph_conf="/etc/ceph/ceph.conf",
                    rbd_secret_uuid=None):
    """The ``[<backend>]`` section of cinder.conf."""
    if backend == "fake":
        return (f"volume_driver = {_class_path(MultiattachFakeDriver)}\n"
                f"volume_backend_name = {backend}\n"
                "target_ip_address = 127.0.0.1\n")
    if backend != "rbd":
        raise ValueError("unknown backend %r (fake or rbd)" % backend)
    lines = [f"volume_driver = {RBD_DRIVER}",
             f"volume_backend_name = {backend}",
             f"rbd_pool = {rbd_pool}",
             f"rbd_ceph_conf = {rbd_ceph_conf}",
             # a volume is an image of its own, not a clone of a snapshot
             "rbd_flatten_volume_from_snapshot = false",
             # answer at once when the cluster is away (default: -1, never)
             "rados_connect_timeout = 10"]
    if rbd_user:
        lines.append(f"rbd_user = {rbd_user}")
    if rbd_secret_uuid:
        lines.append(f"rbd_secret_uuid = {rbd_secret_uuid}")
    return "\n".join(lines) + "\n"


def write_config(state_dir, port, host, debug, report_interval,
                 service_down_time, transport_url="fake:/", backend=BACKEND,
                 section=None):
    """Write ``state_dir/cinder.conf`` (and api-paste.ini); return its path.

    ``section``: the backend's section (``backend_section``'s)."""
    section = section if section is not None else backend_section(backend)
    os.makedirs(os.path.join(state_dir, "locks"), exist_ok=True)
    os.makedirs(os.path.join(state_dir, "coordination"), exist_ok=True)
    paste = os.path.join(state_dir, "api-paste.ini")
    shutil.copyfile(os.path.join(sys.prefix, "etc", "cinder", "api-paste.ini"),
                    paste)
    path = os.path.join(state_dir, "cinder.conf")
    with open(path, "w") as conf:
        conf.write(f"""\
[DEFAULT]
host = {host}
state_path = {state_dir}
auth_strategy = noauth_include_project_id
transport_url = {transport_url}
enabled_backends = {backend}
osapi_volume_listen = 127.0.0.1
osapi_volume_listen_port = {port}
osapi_volume_workers = 1
api_paste_config = {paste}
my_ip = 127.0.0.1
report_interval = {report_interval}
service_down_time = {service_down_time}
scheduler_driver_init_wait_time = 10
debug = {debug}
log_file = {os.path.join(state_dir, "cinder.log")}

[database]
connection = sqlite:///{os.path.join(state_dir, "cinder.sqlite")}

[oslo_concurrency]
lock_path = {os.path.join(state_dir, "locks")}

[coordination]
backend_url = file://{os.path.join(state_dir, "coordination")}

[os_brick]
lock_path = {os.path.join(state_dir, "locks")}

[{backend}]
{section}""")
    return path


def _announce_when_ready(port, timeout=60.0):
    """Print READY once GET / answers (from a green thread)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/")
            status = conn.getresponse().status
            conn.close()
            if status < 500:
                print("READY http://127.0.0.1:%d" % port, flush=True)
                return
        except OSError:
            pass
        time.sleep(0.1)
    print("NOT READY after %ss: see the log" % timeout, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int, help="port of the volume API")
    parser.add_argument("--state-dir", default=None,
                        help="database, config, locks and log "
                             "(default: .ci-state/real-cinder-<port>)")
    parser.add_argument("--host", default="cinderhost",
                        help="service host name; the backend is "
                             "<host>@<backend>")
    parser.add_argument("--debug", action="store_true",
                        help="debug logging (slows every request down)")
    parser.add_argument("--transport-url", default="fake:/",
                        help="oslo.messaging URL between api, scheduler and "
                             "volume (default fake:/, in-memory; its "
                             "listeners poll every 50 ms, which every RPC "
                             "call pays: use rabbit://... to measure)")
    parser.add_argument("--backend", choices=("fake", "rbd"), default=BACKEND,
                        help="fake (no storage) or rbd (Cinder's RBD driver)")
    parser.add_argument("--rbd-pool", default="volumes")
    parser.add_argument("--rbd-user", default=None,
                        help="cephx user of the RBD driver (and of the "
                             "connections it hands out)")
    parser.add_argument("--rbd-ceph-conf", default="/etc/ceph/ceph.conf")
    parser.add_argument("--rbd-secret-uuid", default=None)
    parser.add_argument("--report-interval", type=int, default=2)
    parser.add_argument("--service-down-time", type=int, default=10)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    state_dir = os.path.abspath(args.state_dir or os.path.join(
        repo, ".ci-state", "real-cinder-%d" % args.port))
    conf_file = write_config(state_dir, args.port, args.host, args.debug,
                             args.report_interval, args.service_down_time,
                             args.transport_url, args.backend,
                             backend_section(args.backend, args.rbd_pool,
                                             args.rbd_user,
                                             args.rbd_ceph_conf,
                                             args.rbd_secret_uuid))

    objects.register_all()
    CONF(["--config-file", conf_file], project="cinder",
         version=version.version_string())
    config.set_middleware_defaults()
    logging.setup(CONF, "cinder")
    LOG.info("cinder.conf: %s", conf_file)

    migration.db_sync()  # cinder-manage db sync

    coordination.COORDINATOR.start()
    rpc.init(CONF)
    launcher = service.service.ServiceLauncher(CONF, restart_method="mutate")
    # The volume service first: the scheduler asks it for its capabilities
    # when it starts.
    volume = OwnIdService.create(
        host="%s@%s" % (CONF.host, args.backend), service_name=args.backend,
        binary=constants.VOLUME_BINARY, coordination=True)
    launcher.launch_service(volume)
    scheduler = OwnIdService.create(binary=constants.SCHEDULER_BINARY)
    launcher.launch_service(scheduler)
    api = service.WSGIService("osapi_volume")
    launcher.launch_service(api)
    threading.Thread(target=_announce_when_ready, args=(args.port,),
                     daemon=True).start()
    try:
        launcher.wait()
    except KeyboardInterrupt:
        launcher.stop()
    rpc.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
