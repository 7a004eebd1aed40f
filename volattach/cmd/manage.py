"""volattach-manage: database migrations and operator commands.

    volattach-manage [--config-file F] db sync       migrate the compute and volume databases
    volattach-manage [--config-file F] db version    print the schema revisions
    volattach-manage [--config-file F] service list  print every registered service
"""
import sys

from oslo_config import cfg

from volattach import conf as volattach_conf


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


def _volume_migration():
    from volume.db import migration as volume_migration
    return volume_migration


def db_sync(conf):
    from db import migration
    migration.db_sync(conf.database.connection)
    _volume_migration().db_sync(conf.volume.connection)
    print("compute database at revision %s" % migration.db_version(conf.database.connection))


def db_version(conf):
    from db import migration
    print("compute: %s" % migration.db_version(conf.database.connection))


def service_list(conf, out=sys.stdout):
    import objects
    from compute import api as compute_api
    from volattach import context as volattach_context
    objects.register_all()
    ctxt = volattach_context.get_admin_context()
    api = compute_api.API(volume_api=object(), compute_task_api=object())
    rows = [("Id", "Binary", "Host", "Status", "State", "Updated At",
             "Version", "RPC Version", "Forced Down")]
    for svc, up in api.service_list(ctxt):
        rows.append((str(svc.id), svc.binary, svc.host,
                     "disabled" if svc.disabled else "enabled",
                     "up" if up else "down",
                     (svc.last_seen_up or svc.updated_at or svc.created_at).isoformat()
                     if (svc.last_seen_up or svc.updated_at or svc.created_at) else "-",
                     str(svc.version), svc.rpc_version or "-", str(svc.forced_down)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out.write(line + "\n")
    for index, row in enumerate(rows):
        out.write("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |\n")
        if index == 0:
            out.write(line + "\n")
    out.write(line + "\n")


COMMANDS = {("db", "sync"): db_sync, ("db", "version"): db_version,
            ("service", "list"): service_list}


def main(argv=None):
    conf = volattach_conf.CONF
    conf.register_cli_opt(cfg.SubCommandOpt("category", handler=_add_parsers))
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv)
    COMMANDS[(conf.category.name, conf.category.action)](conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
