"""volattach-volume: the Cinder-compatible volume service.

Parses the configuration, runs the volume database migrations, registers
the service (and keeps its heartbeat from the gunicorn master), then serves
``volattach.volume.wsgi:application`` with gunicorn on ``[volume] listen``/``port``
(bound first: a port in use is one line, before anything started)
with ``[volume] workers`` processes.  It refuses to start with noauth on
a non-loopback address (``volattach.wsgi.insecure``).
"""
import sys

from volattach import conf as volattach_conf
from volattach import listen
from volattach import loopback_defaults
from volattach import wsgi_server


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
    try:
        insecure.check_volume(conf)
        # bound before the migrations and the registration: a port in use
        # is one line, and nothing has started
        sock = listen.bind(conf.volume.listen, conf.volume.port, "volume",
                           v6only=False)
    except (insecure.InsecureNoauth, listen.ListenError) as exc:
        sys.exit("volattach-volume: %s" % exc)
    loopback_defaults.check(conf, "volattach-volume")
    service.prepare(conf)
    service.start_heartbeat(conf)
    wsgi_server.run("volattach.volume.wsgi:application", bind=sock,
                    workers=conf.volume.workers,
                    keepalive=conf.wsgi.keepalive_timeout,
                    name="volattach-volume", conf=conf)


if __name__ == "__main__":
    main()
