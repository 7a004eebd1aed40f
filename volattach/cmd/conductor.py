"""volattach-conductor: the workflow and object-proxy daemon (needs the database)."""
import sys

from volattach import objects
from volattach import rpc
from volattach import conf as volattach_conf
from volattach.conductor import service as conductor_service
from volattach import service


def main(argv=None):
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv)
    conf = volattach_conf.CONF
    objects.register_all()
    rpc.init(conf)
    svc = conductor_service.ConductorService()
    svc.start()
    service.run_until_signalled([svc])


if __name__ == "__main__":
    main()
