"""volattach-compute: a compute host agent (no database, no Cinder credentials)."""
import logging
import sys
import time

from volattach import objects
from volattach import rpc
from volattach import conf as volattach_conf
from volattach import log_setup
from volattach.compute import service as compute_service
from volattach import service
from volattach import startup

LOG = logging.getLogger(__name__)


DESCRIPTION = (
    "Run a compute host agent ([compute] host, [compute] virt_driver): it "
    "does the host-local work of attach, detach and swap for the conductor "
    "over [DEFAULT] transport_url, with no database and no Cinder "
    "credentials.")


def main(argv=None):
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              description=DESCRIPTION)
    conf = volattach_conf.CONF
    try:
        startup.check_drivers(conf, volume=False)
    except startup.StartupError as exc:
        startup.fail("volattach-compute", exc)
    objects.register_all()
    rpc.init(conf)
    svc = compute_service.ComputeService(conf.compute.host)
    # The conductor may still be starting: registration goes through it.
    while True:
        try:
            svc.start()
            break
        except Exception as error:
            LOG.warning("registration through the conductor failed (%s); retrying",
                        error)
            time.sleep(2)
    log_setup.started("volattach-compute", conf, [log_setup.rpc_address(conf)])
    service.run_until_signalled([svc])
    log_setup.stopped("volattach-compute")


if __name__ == "__main__":
    main()
