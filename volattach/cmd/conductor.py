"""volattach-conductor: the workflow and object-proxy daemon (needs the database)."""
import sys

from volattach import objects
from volattach import rpc
from volattach import conf as volattach_conf
from volattach import log_setup
from volattach import loopback_defaults
from volattach.conductor import service as conductor_service
from volattach import service
from volattach import startup


DESCRIPTION = (
    "Run the conductor: the attach, detach and swap workflows and their "
    "rollback, the computes' database proxy and the periodic drift repair, "
    "over [DEFAULT] transport_url and the [database] connection; it calls "
    "the volume service at [cinder] endpoint.")


def main(argv=None):
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              description=DESCRIPTION)
    conf = volattach_conf.CONF
    try:
        startup.check_sqlite_url(conf.database.connection,
                                 "[database] connection")
    except startup.StartupError as exc:
        startup.fail("volattach-conductor", exc)
    loopback_defaults.check(conf, "volattach-conductor")
    objects.register_all()
    rpc.init(conf)
    svc = conductor_service.ConductorService()
    from volattach.cmd import all as cmd_all
    try:
        with cmd_all._database("[database] connection",
                               conf.database.connection):
            svc.start()
    except startup.StartupError as exc:
        svc.stop()
        startup.fail("volattach-conductor", exc)
    log_setup.started("volattach-conductor", conf,
                      [log_setup.rpc_address(conf)])
    service.run_until_signalled([svc])
    log_setup.stopped("volattach-conductor")


if __name__ == "__main__":
    main()
