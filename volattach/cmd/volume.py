"""volattach-volume: the Cinder-compatible volume service.

Parses the configuration, runs the volume database migrations, registers
the service (and keeps its heartbeat from the gunicorn master), then serves
``volume.wsgi:application`` with gunicorn on ``[volume] listen``/``port``
with ``[volume] workers`` processes.  It refuses to start with noauth on
a non-loopback address (``volattach.wsgi.insecure``).
"""
import sys

from volattach import conf as volattach_conf
from volattach import wsgi_server


def _bind(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def main(argv=None):
    from volattach.volume import service
    from volattach.wsgi import insecure

    conf = volattach_conf.CONF
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        insecure.check_volume(conf)
    except insecure.InsecureNoauth as exc:
        sys.exit("volattach-volume: %s" % exc)
    service.prepare(conf)
    service.start_heartbeat(conf)
    wsgi_server.run("volattach.volume.wsgi:application",
                    bind=_bind(conf.volume.listen, conf.volume.port),
                    workers=conf.volume.workers,
                    keepalive=conf.wsgi.keepalive_timeout)


if __name__ == "__main__":
    main()
