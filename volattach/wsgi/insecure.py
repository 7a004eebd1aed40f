"""The refusal to serve noauth beyond loopback.

Under ``noauth`` any caller who sends ``X-Auth-Token: x:y:admin`` is an
admin, so a service whose ``auth_strategy`` is ``noauth`` refuses to start
on a listen address that is not loopback unless ``[DEFAULT]
allow_insecure_noauth = true`` says the operator means it.
"""
import ipaddress
import socket

OPTION = "[DEFAULT] allow_insecure_noauth"


class InsecureNoauth(RuntimeError):
    pass


def is_loopback(host):
    """True when every address ``host`` names is a loopback address."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback
        for info in infos)


def check(conf, service, strategy, listen):
    """Raise InsecureNoauth when ``service`` would serve noauth on a
    non-loopback ``listen`` address without the explicit option."""
    if strategy != "noauth" or conf.allow_insecure_noauth:
        return
    if is_loopback(listen):
        return
    raise InsecureNoauth(
        "%s refuses to serve auth_strategy = noauth on %s, which is not a "
        "loopback address: any caller could be admin.  Use auth_strategy = "
        "keystone, listen on loopback, or set %s = true."
        % (service, listen, OPTION))


def check_api(conf):
    check(conf, "volattach-api", conf.api.auth_strategy, conf.api.listen)


def check_volume(conf, listen=None):
    check(conf, "volattach-volume", conf.volume.auth_strategy,
          listen or conf.volume.listen)
    # and no NBD export on the network without TLS ([volume] nbd_tls)
    from volattach.volume.backends import file as file_backend
    file_backend.check_security(conf)
