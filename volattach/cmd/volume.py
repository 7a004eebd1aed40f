"""volattach-volume: the Cinder-compatible volume service.

Parses the configuration, runs the volume database migrations, registers
the service (and keeps its heartbeat from the gunicorn master), then serves
``volattach.volume.wsgi:application`` with gunicorn on ``[volume] listen``/``port``
(bound first: a port in use is one line, before anything started)
with ``[volume] workers`` processes.  It refuses to start with noauth on
a non-loopback address (``volattach.wsgi.insecure``).
"""
import os
import sys

from oslo_log import log as logging

from volattach import conf as volattach_conf
from volattach import listen
from volattach import loopback_defaults
from volattach import startup
from volattach import wsgi_server

LOG = logging.getLogger(__name__)


DESCRIPTION = (
    "Serve the Cinder-compatible volume service (v3) with gunicorn on "
    "[volume] listen and port (default 127.0.0.1:8776), on its own "
    "database ([volume] connection); it migrates that database first.")


def main(argv=None):
    from volattach.volume import service
    from volattach.wsgi import insecure

    conf = volattach_conf.CONF
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              description=DESCRIPTION)
    from volattach.cmd import all as cmd_all
    from volattach.volume import backend as volume_backend
    from volattach.volume.backends import file as file_backend
    from volattach.volume.backends import storage_daemons
    try:
        insecure.check_volume(conf)
        startup.check_drivers(conf, compute=False)
        startup.check_sqlite_url(conf.volume.connection,
                                 "[volume] connection")
        # bound before the migrations and the registration: a port in use
        # is one line, and nothing has started
        sock = listen.bind(conf.volume.listen, conf.volume.port, "volume",
                           v6only=False)
    except (insecure.InsecureNoauth, startup.StartupError) as exc:
        startup.fail("volattach-volume", exc)
    except listen.ListenError as exc:
        startup.fail("volattach-volume", exc, status=startup.EXIT_IN_USE)
    loopback_defaults.check(conf, "volattach-volume")
    try:
        with cmd_all._database("[volume] connection", conf.volume.connection):
            service.prepare(conf)
    except (insecure.InsecureNoauth, volume_backend.BackendConfigError,
            startup.StartupError, file_backend.ExportError) as exc:
        sock.close()
        startup.fail("volattach-volume", exc,
                     status=startup.EXIT_IN_USE if isinstance(
                         exc, file_backend.NBDPortInUse) else None)
    service.start_heartbeat(conf)
    master = os.getpid()
    try:
        wsgi_server.run("volattach.volume.wsgi:application", bind=sock,
                        workers=conf.volume.workers,
                        keepalive=conf.wsgi.keepalive_timeout,
                        name="volattach-volume", conf=conf)
    finally:
        if os.getpid() == master:     # not in a gunicorn worker's exit
            for line in storage_daemons.stop_notes(conf):
                LOG.info(line)


if __name__ == "__main__":
    main()
