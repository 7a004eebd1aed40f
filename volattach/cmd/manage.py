"""volattach-manage: database migrations and operator commands.

    volattach-manage [--config-file F] db sync       migrate the compute and volume databases
    volattach-manage [--config-file F] db version    print the schema revisions
    volattach-manage [--config-file F] service list  print every registered service
    volattach-manage [--config-file F] attachments reconcile [--dry-run] [--grace-seconds N]
                                                     one drift-repair pass (conductor/reconcile.py)
    volattach-manage [--config-file F] rpc queues [--delete-drained-classic]
                                                     the RPC queues on RabbitMQ: kind, messages,
                                                     consumers (rpc/queues.py); delete the drained
                                                     classic ones (a switch to quorum queues)
    volattach-manage [--config-file F] storage status  the file backend's qemu-storage-daemon
    volattach-manage [--config-file F] storage stop [--force]
                                                     stop it when it exports no volume
    volattach-manage [--config-file F] volume_attachment show SERVER VOLUME
    volattach-manage [--config-file F] volume_attachment get_connector
    volattach-manage [--config-file F] volume_attachment refresh SERVER VOLUME --connector FILE
                                                     one attachment, as nova-manage's
                                                     (cmd/manage_attachments.py)

Without a configuration file (no ``--config-file``, no
``/etc/volattach/volattach.conf``), or with the file volattach-all runs
with (no ``transport_url``, the volume service on loopback), it works on
volattach-all's embedded defaults as volattach-all does: the databases
under ``~/.volattach``, noauth towards the volume service (whose port
comes from ``[volume] port`` as volattach-all's does).
The computes of volattach-all are on its in-process bus, out of reach of
another process: the reconcile pass then does not ask them to unplug
(as ``--no-unplug``), and leaves pending detaches to volattach-all's own
periodic pass.  Failures are one line on stderr and exit status 1.
"""
import sys

from oslo_config import cfg
from oslo_log import log as logging

from volattach import conf as volattach_conf
from volattach import exception
from volattach.cmd import manage_attachments

LOG = logging.getLogger(__name__)


def _add_parsers(subparsers):
    db = subparsers.add_parser("db", help="database migrations")
    db_actions = db.add_subparsers(dest="action")
    db_actions.required = True
    db_actions.add_parser("sync", help="upgrade the databases to the newest schema")
    db_actions.add_parser("version", help="print the current schema revisions")
    service = subparsers.add_parser("service", help="services of the deployment")
    service_actions = service.add_subparsers(dest="action")
    service_actions.required = True
    service_actions.add_parser("list", help="list the services and whether they are up")
    attachments = subparsers.add_parser("attachments",
                                        help="volume attachments of the servers")
    attachment_actions = attachments.add_subparsers(dest="action")
    attachment_actions.required = True
    reconcile = attachment_actions.add_parser(
        "reconcile", help="find and repair orphan attachments, orphan "
                          "block-device records and stuck volumes (the "
                          "conductor's periodic pass, by hand)")
    reconcile.add_argument("--dry-run", action="store_true",
                           help="report what would be repaired, change nothing")
    reconcile.add_argument("--grace-seconds", type=int, default=None,
                           help="leave alone what changed less than this many "
                                "seconds ago (default: [conductor] "
                                "reconcile_grace_period)")
    storage = subparsers.add_parser(
        "storage", help="the file backend's qemu-storage-daemon, which "
                        "outlives the volume service")
    storage_actions = storage.add_subparsers(dest="action")
    storage_actions.required = True
    storage_actions.add_parser("status", help="whether it runs, its PID, "
                                              "NBD address and exports")
    stop = storage_actions.add_parser(
        "stop", help="stop it when it exports no volume (no guest uses it)")
    stop.add_argument("--force", action="store_true",
                      help="stop it even though it exports volumes: their "
                           "guests lose their disks")
    reconcile.add_argument("--no-unplug", action="store_true",
                           help="do not ask computes (over RPC) to unplug "
                                "half-attached volumes before rolling them "
                                "back; detaches left pending (they need the "
                                "compute's unplug) are skipped")
    manage_attachments.add_parsers(subparsers)
    rpc_group = subparsers.add_parser("rpc", help="the RPC queues on RabbitMQ")
    rpc_actions = rpc_group.add_subparsers(dest="action")
    rpc_actions.required = True
    queues = rpc_actions.add_parser(
        "queues", help="report the queues of the conductors and computes "
                       "(kind, messages, consumers)")
    queues.add_argument("--delete-drained-classic", action="store_true",
                        help="delete the classic queues that are empty and "
                             "have no consumer, and the non-durable control "
                             "exchange, so that the daemons can declare them "
                             "again as quorum queues (stop the daemons "
                             "first: README, Faults)")


def _volume_migration():
    from volattach.volume.db import migration as volume_migration
    return volume_migration


def _database(option, url):
    from volattach.cmd import all as cmd_all
    return cmd_all._database(option, url)


def db_sync(conf):
    from volattach.db import migration
    with _database("[database] connection", conf.database.connection):
        migration.db_sync(conf.database.connection)
    with _database("[volume] connection", conf.volume.connection):
        _volume_migration().db_sync(conf.volume.connection)
    print("compute database at revision %s" % migration.db_version(conf.database.connection))


def db_version(conf):
    from volattach.db import migration
    volume_migration = _volume_migration()
    for name, module, url, option in (
            ("compute", migration, conf.database.connection,
             "[database] connection"),
            ("volume", volume_migration, conf.volume.connection,
             "[volume] connection")):
        with _database(option, url):
            current = module.db_version(url)
        head = module.head_revision()
        state = ("up to date" if current == head
                 else "not migrated" if current is None
                 else "behind %s: run volattach-manage db sync" % head)
        print("%s: %s (%s)" % (name, current or "-", state))


def service_list(conf, out=sys.stdout):
    from volattach import objects
    from volattach.api import compute as compute_api
    from volattach import context as volattach_context
    objects.register_all()
    ctxt = volattach_context.get_admin_context()
    api = compute_api.API(volume_api=object(), compute_task_api=object())
    rows = [("Id", "Binary", "Host", "Status", "State", "Updated At",
             "Version", "RPC Version", "Forced Down")]
    for svc, up in api.service_list(ctxt):
        seen = svc.last_seen_up or svc.updated_at or svc.created_at
        rows.append((str(svc.id), svc.binary, svc.host,
                     "disabled" if svc.disabled else "enabled",
                     "up" if up else "down", seen.isoformat() if seen else "-",
                     str(svc.version), svc.rpc_version or "-", str(svc.forced_down)))
    _table(rows, out)


def _table(rows, out):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out.write(line + "\n")
    for index, row in enumerate(rows):
        out.write("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |\n")
        if index == 0:
            out.write(line + "\n")
    out.write(line + "\n")


def attachments_reconcile(conf, out=sys.stdout, volume_api=None):
    """One reconciliation pass; prints what it found and did.  Exit status
    1 when a repair failed."""
    from volattach import objects
    from volattach.conductor import reconcile
    objects.register_all()
    if volume_api is None:
        from volattach.volume_client import cinder
        volume_api = cinder.VolumeAPI()
    compute_rpcapi = None
    no_unplug = conf.category.no_unplug
    if not no_unplug and _embedded(conf):
        from volattach import rpc
        if rpc._configured_url(conf) is None:
            out.write("volattach-all's computes are on its in-process bus: "
                      "half-attached volumes are rolled back without "
                      "asking them to unplug, and pending detaches are "
                      "left to volattach-all's own pass (as --no-unplug)\n")
            no_unplug = True
    if not no_unplug:
        from volattach import rpc
        from volattach.compute import rpcapi
        rpc.init(conf)
        compute_rpcapi = rpcapi.ComputeAPI()
    grace = conf.category.grace_seconds
    if grace is None:
        grace = conf.conductor.reconcile_grace_period
    report = reconcile.reconcile(reconcile.admin_context(conf),
                                 volume_api, grace,
                                 dry_run=conf.category.dry_run,
                                 compute_rpcapi=compute_rpcapi,
                                 log_summary=False)
    rows = [("Kind", "Volume", "Server", "Attachment", "Found", "Action",
             "Outcome")]
    for item in report.items:
        outcome = item.outcome + (" (%s)" % item.error if item.error else "")
        rows.append((item.kind, item.volume_id or "-", item.instance_uuid or "-",
                     item.attachment_id or "-", item.found, item.action, outcome))
    if len(rows) > 1:
        _table(rows, out)
    out.write("%s(grace %ss): %s\n" % ("dry run " if report.dry_run else "",
                                        grace, report.summary()))
    return 1 if report.failed else 0


def rpc_queues(conf, out=sys.stdout):
    """Report the RPC queues; with --delete-drained-classic delete the
    drained classic ones.  Exit status 1 when a queue still holds messages
    (or a consumer) or one could not be deleted."""
    from volattach import context as volattach_context
    from volattach import objects
    from volattach import rpc
    from volattach.objects import service as service_obj
    from volattach.rpc import queues
    objects.register_all()
    rpc.init(conf)      # registers transport_url and control_exchange
    url = rpc._configured_url(conf) or volattach_conf.DEFAULT_TRANSPORT_URL
    ctxt = volattach_context.get_admin_context()
    hosts = {binary: sorted({s.host for s in service_obj.ServiceList.get_all(
        ctxt, binary=binary)})
        for binary in (queues.CONDUCTOR_BINARY, queues.COMPUTE_BINARY)}
    names = queues.queue_names(hosts[queues.CONDUCTOR_BINARY],
                               hosts[queues.COMPUTE_BINARY])
    try:
        broker = queues.Broker(url, conf.control_exchange)
    except Exception as error:   # noqa: BLE001 - one line for the operator
        raise exception.ServiceUnavailable(
            reason="cannot reach RabbitMQ at %s: %s" % (url, error))
    try:
        found = queues.report(broker, names)
        rows = [("Queue", "Kind", "Messages", "Consumers")]
        rows.extend((q.name, q.kind, str(q.messages), str(q.consumers))
                    for q in found)
        _table(rows, out)
        busy = sum(q.messages for q in found)
        out.write("%d queue(s), %d message(s) queued; control exchange %s: "
                  "%s\n" % (len(found), busy, conf.control_exchange,
                            {None: "missing", True: "durable",
                             False: "not durable"}[broker.exchange_durable()]))
        if not conf.category.delete_drained_classic:
            return 1 if busy else 0
        deleted, left = queues.delete_drained_classic(broker, names)
        for name in deleted:
            out.write("deleted %s\n" % name)
        for name, reason in left:
            out.write("kept %s: %s\n" % (name, reason))
        return 1 if left else 0
    finally:
        broker.close()


def _storage_daemons(conf, out):
    from volattach.volume.backends import storage_daemons
    found = storage_daemons.daemons_of(conf)
    if not found:
        out.write("no file backend in this configuration ([volume] backend "
                  "= %s)\n" % conf.volume.backend)
    return storage_daemons, found


def storage_status(conf, out=sys.stdout):
    storage_daemons, found = _storage_daemons(conf, out)
    for option, daemon in found:
        pid = storage_daemons.pid_of(daemon)
        if pid is None:
            out.write("%s qemu-storage-daemon: not running (NBD port %s:%s)\n"
                      % (option, daemon.host, daemon.port))
            continue
        try:
            exported = ", ".join("%s (%s)" % e for e in
                                 storage_daemons.exports(daemon)) or "none"
        except Exception as exc:
            exported = "unknown (%s)" % exc
        out.write("%s qemu-storage-daemon: running, pid %d, NBD on %s:%s, "
                  "QMP %s, exports: %s\n" % (option, pid, daemon.host,
                                             daemon.port, daemon.socket,
                                             exported))
    return 0


def storage_stop(conf, out=sys.stdout):
    """Exit status 1 when a daemon still exports volumes (and --force is
    not given)."""
    storage_daemons, found = _storage_daemons(conf, out)
    status = 0
    for option, daemon in found:
        pid = storage_daemons.pid_of(daemon)
        if pid is None:
            orphan = storage_daemons.orphan_on_port(daemon)
            if orphan is None:
                out.write("%s qemu-storage-daemon: not running\n" % option)
            elif not conf.category.force:
                print("volattach-manage: %s NBD port %s is held by the "
                      "qemu-storage-daemon of a removed state directory (pid "
                      "%d); its exports cannot be listed: --force stops it"
                      % (option, daemon.port, orphan), file=sys.stderr)
                status = 1
            else:
                storage_daemons.stop(daemon, orphan, force=True)
                out.write("%s qemu-storage-daemon (pid %d, of a removed state "
                          "directory): stopped\n" % (option, orphan))
            continue
        kept = storage_daemons.stop(daemon, pid, force=conf.category.force)
        if kept is None:
            print("volattach-manage: %s qemu-storage-daemon (pid %d): its "
                  "exports cannot be listed over QMP (%s): --force stops it "
                  "anyway" % (option, pid, daemon.socket), file=sys.stderr)
            status = 1
            continue
        if kept:
            print("volattach-manage: %s qemu-storage-daemon (pid %d) still "
                  "exports volume %s: detach them (or delete their servers) "
                  "first, or use --force" % (
                      option, pid, ", ".join("%s (%s)" % e for e in kept)),
                  file=sys.stderr)
            status = 1
            continue
        out.write("%s qemu-storage-daemon (pid %d): stopped\n" % (option, pid))
    return status


COMMANDS = {("rpc", "queues"): rpc_queues,
            ("db", "sync"): db_sync, ("db", "version"): db_version,
            ("service", "list"): service_list,
            ("attachments", "reconcile"): attachments_reconcile,
            ("storage", "status"): storage_status,
            ("storage", "stop"): storage_stop,
            ("volume_attachment", "show"): manage_attachments.show,
            ("volume_attachment", "get_connector"):
                manage_attachments.get_connector,
            ("volume_attachment", "refresh"): manage_attachments.refresh}


DESCRIPTION = (
    "Operate a volattach deployment: migrate its databases (db sync), show "
    "their schema revisions (db version), list its services (service list), "
    "find and repair attachment drift (attachments reconcile), show or stop "
    "the file backend's storage daemon (storage status | stop), show or "
    "refresh one attachment (volume_attachment), report the RPC queues on "
    "RabbitMQ or delete the drained classic ones (rpc queues). Without a "
    "configuration file, or with volattach-all's own (no transport_url, "
    "the volume service on loopback), it works on volattach-all's defaults "
    "(~/.volattach, noauth).")


def _embedded(conf):
    """volattach-all's configuration: no configuration file, or a file
    that names no ``transport_url`` (volattach-all's in-process bus) and
    a volume service on loopback (``[cinder] endpoint``, else ``[volume]
    listen``): the file ``volattach-all --config-file`` runs with.  Its
    defaults then apply here as there (noauth towards the volume service,
    no computes reachable over a bus)."""
    if not conf.config_file and not conf.config_dir:
        return True
    import urllib.parse
    from volattach import loopback_defaults
    from volattach import rpc
    if rpc._configured_url(conf) is not None:
        return False
    host = urllib.parse.urlsplit(volattach_conf.cinder_endpoint(conf)).hostname
    return loopback_defaults.is_loopback(host)


def main(argv=None):
    conf = volattach_conf.CONF
    conf.register_cli_opt(cfg.SubCommandOpt("category", handler=_add_parsers))
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              description=DESCRIPTION)
    if _embedded(conf):
        volattach_conf.set_embedded_defaults(conf)
    from volattach import startup
    try:
        return COMMANDS[(conf.category.name, conf.category.action)](conf) or 0
    except startup.StartupError as exc:
        # a database URL that does not open: which one, not a traceback
        print("volattach-manage: %s" % exc, file=sys.stderr)
        return 1
    except exception.VolattachException as exc:
        # an operator's command: the reason, not a traceback (--debug logs it)
        LOG.debug("volattach-manage failed", exc_info=True)
        hint = ""
        if (isinstance(exc, exception.CinderConnectionFailed)
                and conf.cinder.auth_strategy == "keystone"
                and not conf.cinder.auth_type):
            hint = (" (volattach-all's configuration? its default is "
                    "[cinder] auth_strategy = noauth: set it in this file)")
        print("volattach-manage: %s%s" % (exc, hint), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
