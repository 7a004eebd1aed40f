"""volattach-api: the compute API, served by gunicorn.

Parses the command line and configuration in the master, exports the
configuration files in ``VOLATTACH_CONFIG_FILE`` (colon-separated: what
``api.wsgi`` reads in a worker that finds the configuration unparsed), then
runs gunicorn on ``volattach.api.wsgi:application`` bound to ``[api] listen`` and
``[api] port`` (bound before gunicorn starts, so that a port in use is one
line naming it) with ``[api] workers`` processes of ``[api] threads``
threads.  It refuses to start with noauth on a non-loopback address
(``volattach.wsgi.insecure``).  Each worker creates its own RPC transport
after the fork.
"""
import os
import sys

from volattach.api import wsgi as api_wsgi
from volattach import conf as volattach_conf
from volattach import listen
from volattach import loopback_defaults
from volattach import startup
from volattach import wsgi_server
from volattach.wsgi import insecure

APP_URI = "volattach.api.wsgi:application"


DESCRIPTION = (
    "Serve the Nova-compatible compute API with gunicorn on [api] listen "
    "and port (default 127.0.0.1:8774), [api] workers processes; it casts "
    "to and calls the conductor over [DEFAULT] transport_url.")


def bind_address(conf):
    return listen.address(conf.api.listen, conf.api.port)


def main(argv=None, conf=None):
    conf = volattach_conf.CONF if conf is None else conf
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              conf=conf, description=DESCRIPTION)
    try:
        insecure.check_api(conf)
        # bound here, before gunicorn starts: a port in use is one line
        sock = listen.bind(conf.api.listen, conf.api.port, "api",
                           v6only=False)
    except insecure.InsecureNoauth as exc:
        startup.fail("volattach-api", exc)
    except listen.ListenError as exc:
        startup.fail("volattach-api", exc, status=startup.EXIT_IN_USE)
    loopback_defaults.check(conf, "volattach-api")
    os.environ[api_wsgi.CONFIG_FILE_ENV] = ":".join(conf.config_file or [])
    wsgi_server.run(APP_URI, bind=sock, workers=conf.api.workers,
                    threads=conf.api.threads,
                    keepalive=conf.wsgi.keepalive_timeout,
                    name="volattach-api", conf=conf)


if __name__ == "__main__":
    main()
