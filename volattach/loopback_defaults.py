"""Warnings for the all-in-one's loopback defaults in a daemon whose peers
are on other machines.

``[cinder] endpoint`` and ``[volume] compute_endpoint`` default to the
``[volume]`` and ``[api]`` listen address and port of the same file, and
the databases to SQLite under ``state_path``: right for ``volattach-all``,
where every role is in one process.  A daemon run with one of them while
its peers are elsewhere (``transport_url`` names a broker on another host,
or the volume service listens for other hosts) would call a service on its
own machine that is not there, or keep a database the others do not see.
``check`` logs one WARNING per such default, naming the option to set.
"""
import ipaddress

from oslo_log import log as logging

from volattach import conf as volattach_conf

LOG = logging.getLogger(__name__)

# listen addresses that take every address of the machine
WILDCARDS = ("", "0.0.0.0", "::")


def is_loopback(host):
    host = (host or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def remote_broker_hosts(conf):
    """The hosts of a configured ``transport_url`` that are not loopback."""
    from volattach import rpc
    url = rpc._configured_url(conf)
    if not url or "://" not in url:
        return []
    import oslo_messaging
    try:
        parsed = oslo_messaging.TransportURL.parse(conf, url)
    except Exception:   # a bad URL is the transport's to report
        return []
    return [h.hostname for h in parsed.hosts
            if h.hostname and not is_loopback(h.hostname)]


def findings(conf, binary):
    """``[(option, text)]``: the loopback defaults ``binary`` runs with
    while its peers are elsewhere."""
    found = []
    if binary in ("volattach-api", "volattach-conductor"):
        brokers = remote_broker_hosts(conf)
        if brokers:
            elsewhere = ("transport_url names a broker on %s"
                         % ", ".join(sorted(set(brokers))))
            if not conf.cinder.endpoint and (
                    is_loopback(conf.volume.listen)
                    or conf.volume.listen in WILDCARDS):
                found.append((
                    "[cinder] endpoint",
                    "calls the volume service at %s (the all-in-one "
                    "default, from [volume] listen/port) while %s: set "
                    "[cinder] endpoint to the volume service's URL"
                    % (volattach_conf.cinder_endpoint(conf), elsewhere)))
            if (binary == "volattach-conductor"
                    and conf.database.connection.startswith("sqlite")):
                found.append((
                    "[database] connection",
                    "keeps the compute database in SQLite on this machine "
                    "(%s, the all-in-one default) while %s: the other "
                    "daemons do not see it; use PostgreSQL"
                    % (conf.database.connection, elsewhere)))
    if (binary == "volattach-volume" and not conf.volume.compute_endpoint
            and not is_loopback(conf.volume.listen)):
        from volattach.volume import compute_client
        found.append((
            "[volume] compute_endpoint",
            "asks the compute API at %s to swap volumes (the all-in-one "
            "default, from [api] listen/port) while it listens for other "
            "hosts on %s: set [volume] compute_endpoint to the compute "
            "API's URL" % (compute_client.compute_endpoint(conf),
                           conf.volume.listen)))
    return found


def check(conf, binary):
    """Log a WARNING per finding; returns the findings."""
    found = findings(conf, binary)
    for option, text in found:
        LOG.warning("%s %s (%s)", binary, text, option)
    return found
