"""volattach-manage volume_attachment: the operator's tools for ONE
attachment, with the contract of Nova's ``nova-manage volume_attachment``.

    show SERVER VOLUME [--connection_info] [--json]
        the server's block-device record (compute database), its attachment
        in the volume service and the connection info, secrets masked
        (CHAP passwords, keys, keyrings, tokens).  Exit 2: no such server;
        3: the volume is not attached to it.
    get_connector [--json]
        this host's volume connector ([compute] host and virt_driver), the
        one its compute sends; save it (--json) for ``refresh``.
    refresh SERVER VOLUME --connector FILE
        re-create the attachment from the connector in FILE (JSON) on a
        stopped server: the volume stays reserved by a new attachment, the
        old one goes (with its backend connection: the host that made it
        may be dead), the new one is connected with the connector and
        completed, and the record takes its connection info; the next
        start plugs it.  The server is locked meanwhile (and unlocked after
        unless it was locked before) and gets a
        ``refresh_volume_attachment`` instance action.  Exit 2: FILE
        missing; 3: FILE unreadable or not JSON; 4: no such server; 5: not
        stopped (or busy); 6: the volume is not attached to it; 7: the
        connector's host is not the server's.

The volume service is reached as ``attachments reconcile`` does (the
``[cinder]`` options; noauth admin token on volattach-all's defaults).
"""
import json
import os
import re
import sys

from oslo_log import log as logging

from volattach import exception

LOG = logging.getLogger(__name__)

ACTION = "refresh_volume_attachment"
MASK = "***"
# key names whose values are secrets: CHAP passwords (auth_password,
# discovery_auth_password), keys, keyrings, tokens; not secret_uuid or
# secret_type (names of a libvirt secret, not its value)
_SECRET_KEY = re.compile(r"pass(word|wd)?|keyring|token|(^|_)key$|^secret$",
                         re.IGNORECASE)


def mask_secrets(value):
    """A copy of ``value`` with every secret value replaced by ***."""
    if isinstance(value, dict):
        return {k: (MASK if isinstance(k, str) and _SECRET_KEY.search(k)
                    and v not in (None, "") else mask_secrets(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    return value


def add_parsers(subparsers):
    va = subparsers.add_parser(
        "volume_attachment",
        help="one volume attachment of a server (as nova-manage's)")
    actions = va.add_subparsers(dest="action")
    actions.required = True
    show = actions.add_parser(
        "show", help="the record, the attachment and its connection info "
                     "(secrets masked)")
    show.add_argument("server_uuid", metavar="SERVER",
                      help="UUID of the server")
    show.add_argument("volume_id", metavar="VOLUME",
                      help="UUID of the volume")
    show.add_argument("--connection_info", action="store_true",
                      help="only the connection info")
    show.add_argument("--json", action="store_true", help="JSON output")
    get = actions.add_parser("get_connector",
                             help="the volume connector of this host")
    get.add_argument("--json", action="store_true", help="JSON output")
    refresh = actions.add_parser(
        "refresh", help="re-create the attachment with a new connector on "
                        "a stopped server")
    refresh.add_argument("server_uuid", metavar="SERVER",
                         help="UUID of the server")
    refresh.add_argument("volume_id", metavar="VOLUME",
                         help="UUID of the volume")
    refresh.add_argument("--connector", required=True, dest="connector_path",
                         help="file with the host connector (JSON), as "
                              "get_connector --json prints it")


def _context(conf):
    from volattach import objects
    from volattach.conductor import reconcile
    objects.register_all()
    return reconcile.admin_context(conf)


def _volume_api():
    from volattach.volume_client import cinder
    return cinder.VolumeAPI()


def _print_table(title, values, out):
    from volattach.cmd import manage
    out.write("%s\n" % title)
    rows = [("Field", "Value")] + [
        (str(k), v if isinstance(v, str) else json.dumps(v, sort_keys=True))
        for k, v in sorted(values.items())]
    manage._table(rows, out)


def _bdm_record(bdm):
    record = {name: getattr(bdm, name) for name in bdm.fields
              if bdm.obj_attr_is_set(name) and name != "connection_info"}
    for key, value in record.items():
        if hasattr(value, "isoformat"):
            record[key] = value.isoformat()
    return record


def show(conf, out=sys.stdout):
    from volattach import objects
    args = conf.category
    ctx = _context(conf)
    try:
        objects.Instance.get_by_uuid(ctx, args.server_uuid)
        bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
            ctx, args.volume_id, args.server_uuid)
    except exception.InstanceNotFound as e:
        out.write("%s\n" % e)
        return 2
    except (exception.VolumeBDMNotFound, exception.BDMNotFound) as e:
        out.write("%s\n" % e)
        return 3
    info = mask_secrets(bdm.get_connection_info())
    if args.connection_info:
        if args.json:
            out.write(json.dumps(info, sort_keys=True) + "\n")
        else:
            _print_table("Connection info (secrets masked)", info or {}, out)
        return 0
    attachment = None
    if bdm.attachment_id:
        try:
            attachment = mask_secrets(
                _volume_api().attachment_get(ctx, bdm.attachment_id))
        except exception.VolumeAttachmentNotFound:
            attachment = {"error": "attachment %s not found in the volume "
                                   "service" % bdm.attachment_id}
    record = _bdm_record(bdm)
    if args.json:
        out.write(json.dumps({"block_device_mapping": record,
                              "attachment": attachment,
                              "connection_info": info},
                             sort_keys=True, default=str) + "\n")
        return 0
    _print_table("Block device mapping (compute database)", record, out)
    _print_table("Attachment %s (volume service)" % bdm.attachment_id,
                 attachment or {}, out)
    _print_table("Connection info (secrets masked)", info or {}, out)
    return 0


def host_connector(conf):
    """The connector this host's compute sends ([compute] host and
    virt_driver)."""
    host = conf.compute.host
    if conf.compute.virt_driver == "libvirt":
        from volattach.compute.virt.libvirt import driver
        return driver.volume_connector(host)
    from volattach.compute.virt import fake
    return fake.FakeDriver(host).get_volume_connector()


def get_connector(conf, out=sys.stdout):
    connector = host_connector(conf)
    if conf.category.json:
        out.write(json.dumps(connector, sort_keys=True) + "\n")
    else:
        _print_table("Volume connector of host %s" % conf.compute.host,
                     connector, out)
    return 0


class HostConflict(exception.VolattachException):
    msg_fmt = ("The compute host '%(connector)s' in the connector does not "
               "match the instance host '%(instance)s'.")


def refresh(conf, out=sys.stdout, volume_api=None):
    path = conf.category.connector_path
    if not os.path.exists(path):
        out.write("Connector file not found at %s\n" % path)
        return 2
    try:
        with open(path, "rb") as f:
            connector = json.load(f)
        if not isinstance(connector, dict):
            raise ValueError("the connector must be a JSON object")
    except ValueError as e:
        out.write("Failed to open %s. Does it contain valid connector_info "
                  "data?\nError: %s\n" % (path, e))
        return 3
    except OSError as e:
        out.write("%s\n" % e)
        return 3
    try:
        return _refresh(conf, conf.category.server_uuid, conf.category.volume_id,
                        connector, volume_api or _volume_api(), out)
    except HostConflict as e:
        out.write("The command 'volattach-manage volume_attachment "
                  "get_connector' may have been run on the wrong compute "
                  "host. Or the instance host may be wrong and in need of "
                  "repair.\n%s\n" % e)
        return 7
    except (exception.VolumeBDMNotFound, exception.BDMNotFound) as e:
        out.write("%s\n" % e)
        return 6
    except (exception.InstanceInvalidState, exception.UnexpectedTaskState,
            exception.UnexpectedVMState) as e:
        out.write("%s\n" % e)
        return 5
    except exception.InstanceNotFound as e:
        out.write("%s\n" % e)
        return 4


def _refresh(conf, server, volume, connector, volume_api, out):
    from volattach import objects
    ctx = _context(conf)
    instance = objects.Instance.get_by_uuid(ctx, server)
    bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
        ctx, volume, server)
    if instance.vm_state != "stopped":
        raise exception.InstanceInvalidState(
            instance_uuid=server, attr="vm_state", state=instance.vm_state,
            method="refresh connection_info (must be stopped)")
    if connector.get("host") != instance.host:
        raise HostConflict(connector=connector.get("host"),
                           instance=instance.host)
    locked_here = not instance.locked
    if locked_here:
        # a compare-and-swap: a start or another action that came first
        # wins (UnexpectedTaskState/VMState, exit 5)
        instance.locked = True
        instance.locked_by = "admin"
        instance.locked_reason = (
            "Refreshing connection_info for BDM %s associated with instance "
            "%s and volume %s." % (bdm.uuid, server, volume))
        instance.save(expected_task_state=[None],
                      expected_vm_state=["stopped"])
    try:
        objects.InstanceAction.action_start(ctx, server, ACTION)
        return _do_refresh(ctx, volume_api, server, volume, bdm, connector,
                           out)
    finally:
        if locked_here:
            fresh = objects.Instance.get_by_uuid(ctx, server)
            if fresh.locked and fresh.locked_by == "admin":
                fresh.locked = False
                fresh.locked_by = None
                fresh.locked_reason = None
                fresh.save()


def _do_refresh(ctx, volume_api, server, volume, bdm, connector, out):
    old = bdm.attachment_id
    new = None
    saved = False
    try:
        # a blank attachment keeps the volume reserved for the server
        new = volume_api.attachment_create(ctx, volume, server)["id"]
        if old:
            try:
                # the old connection goes with it (its host may be dead)
                volume_api.attachment_delete(ctx, old)
            except exception.VolumeAttachmentNotFound:
                pass
        info = volume_api.attachment_update(
            ctx, new, connector, mountpoint=bdm.device_name)["connection_info"]
        info.setdefault("serial", volume)
        bdm.attachment_id = new
        bdm.set_connection_info(info)
        saved = bdm.save_if_attachment(old)
        if not saved:
            raise exception.InvalidVolume(
                reason="the record of volume %s on server %s changed "
                       "meanwhile (now attachment %s)"
                       % (volume, server, bdm.attachment_id))
        volume_api.attachment_complete(ctx, new)
        out.write("Attachment of volume %s to server %s refreshed: %s "
                  "replaces %s for host %s\n"
                  % (volume, server, new, old, connector.get("host")))
        return 0
    finally:
        if new and not saved:
            try:
                volume_api.attachment_delete(ctx, new)
            except Exception:
                LOG.exception("could not delete attachment %s", new)
            # the record must still name an attachment of the volume: a
            # reserved one (no connection) when the old one is gone
            try:
                volume_api.attachment_get(ctx, bdm.attachment_id)
            except exception.VolumeAttachmentNotFound:
                from volattach import objects
                fresh = objects.BlockDeviceMapping.get_by_volume_and_instance(
                    ctx, volume, server)
                if fresh.attachment_id == old:
                    fresh.attachment_id = volume_api.attachment_create(
                        ctx, volume, server)["id"]
                    fresh.connection_info = None
                    fresh.save_if_attachment(old)
