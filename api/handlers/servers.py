"""/servers: create, list, list with details, show, update, delete.

Networks are accepted as Nova accepts them but nothing allocates ports
(there is no network service behind this API): ``addresses`` stay ``{}``.
"""
import ipaddress
import secrets
import string
import urllib.parse

from oslo_utils import strutils
from oslo_utils import timeutils
from oslo_utils import uuidutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import servers as schemas
from volattach.api.views import servers as view
from volattach import exception

SERVERS = "os_compute_api:servers:%s"

# filters a non-admin may use (Nova's _get_server_search_options)
_USER_FILTERS = ("reservation_id", "name", "status", "image", "flavor", "ip",
                 "changes-since", "all_tenants")
_PAGING = ("sort_key", "sort_dir", "limit", "marker")

BOOT_SEQUENCE_INVALID = ("Boot sequence for the instance and image/block "
                         "device mapping combination is not valid.")


def _user_filters(mv):
    names = list(_USER_FILTERS)
    if mv.matches("2.5"):
        names.append("ip6")
    if mv.matches("2.26"):
        names += ["tags", "tags-any", "not-tags", "not-tags-any"]
    if mv.matches("2.66"):
        names.append("changes-before")
    if mv.matches("2.73"):
        names.append("locked")
    if mv.matches("2.83"):
        names += ["availability_zone", "config_drive", "key_name",
                  "created_at", "launched_at", "terminated_at", "power_state",
                  "task_state", "vm_state", "progress", "user_id"]
    if mv.matches("2.90"):
        names.append("hostname")
    return names


def tags_of(compute, req, instance):
    """The server's tags when the view shows them (2.26), else None."""
    if not req.context.microversion.matches("2.26"):
        return None
    return compute.get_tags(req.context.ctx, instance)


def _tag_list(values):
    """A tags filter (``?tags=a,b&tags=c``): the tags, in order."""
    return [t for value in values for t in value.split(",") if t]


def canonical_ip(value):
    """An access IP as Nova stores and shows it (``::babe:dc0c:1602`` for
    ``0000:0000:0000:0000:0000:babe:220.12.22.2``)."""
    return ipaddress.ip_address(value).compressed if value else value


def generate_password(length=12):
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def host_statuses(compute, ctx):
    """host -> Nova's host_status of the compute services."""
    statuses = {}
    for svc, is_up in compute.service_list(ctx):
        if not svc.binary.endswith("-compute"):
            continue
        if svc.forced_down:
            statuses[svc.host] = "DOWN"
        elif is_up:
            statuses[svc.host] = "MAINTENANCE" if svc.disabled else "UP"
        else:
            statuses[svc.host] = "UNKNOWN"
    return statuses


def _check_networks(networks):
    """Nova's checks of a list of requested networks (the list is not used)."""
    if not isinstance(networks, list):
        return
    ports = []
    for network in networks:
        port = network.get("port")
        if port:
            if port in ports:
                raise exception.InvalidInput(
                    message="Port ID '%s' was specified twice: you cannot "
                            "attach a port multiple times." % port)
            if network.get("fixed_ip") is not None:
                raise exception.InvalidInput(
                    message="Specified Fixed IP '%s' cannot be used with port "
                            "'%s': the two cannot be specified together."
                            % (network["fixed_ip"], port))
            ports.append(port)
            continue
        if "uuid" not in network:
            raise exception.InvalidInput(
                message="Bad network format: missing 'uuid'")
        if not uuidutils.is_uuid_like(network["uuid"]):
            raise exception.InvalidInput(
                message="Bad networks format: network uuid is not in proper "
                        "format (%s)" % network["uuid"])


def _bool(value, default=False):
    if value is None:
        return default
    return strutils.bool_from_string(value, strict=True)


def _normalize_bdm(bdm):
    """The schema allows "0" for 0 and "true" for True: give the facade types."""
    bdm = dict(bdm)
    if bdm.get("boot_index") is not None:
        bdm["boot_index"] = int(bdm["boot_index"])
    if "delete_on_termination" in bdm:
        bdm["delete_on_termination"] = _bool(bdm["delete_on_termination"])
    if bdm.get("volume_size") is not None:
        bdm["volume_size"] = int(bdm["volume_size"])
    return bdm


def _legacy_to_v2(legacy, boots):
    """Legacy ``block_device_mapping`` items as block_device_mapping_v2."""
    result = []
    for index, item in enumerate(legacy):
        source = "snapshot" if item.get("snapshot_id") else "volume"
        bdm = {"source_type": source, "destination_type": "volume",
               "uuid": item.get("snapshot_id") or item.get("volume_id"),
               "boot_index": 0 if boots and index == 0 else None}
        for key in ("device_name", "volume_size", "delete_on_termination"):
            if key in item:
                bdm[key] = item[key]
        result.append(bdm)
    return result


def _group_hint(hints):
    """The server group of the ``group`` scheduler hint (a uuid, or a list
    of one), or None."""
    group = hints.get("group")
    if isinstance(group, list):
        if len(group) > 1:
            raise exception.InvalidInput(
                message="Only one server group may be given in the group "
                        "scheduler hint.")
        group = group[0] if group else None
    return group or None


class Servers(common.Resource):

    # -- lists ---------------------------------------------------------------------
    def _list(self, req, detail):
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.INDEX_QUERY,
                                          common.query(req))
        policy.authorize(ctx, SERVERS % ("detail" if detail else "index"))
        if policy.check(ctx, SERVERS % "allow_all_filters"):
            filters = {k: v for k, v in query.items() if k not in _PAGING}
        else:
            allowed = _user_filters(mv)
            filters = {k: v for k, v in query.items() if k in allowed}
        for name in filters:
            if name in schemas.JOINED_TABLE_QUERY_PARAMS or name.startswith("_"):
                raise exception.InvalidInput(
                    message="Invalid filter field: %s." % name)

        opts = {}
        if "status" in filters:
            statuses = [s.upper() for s in filters["status"]]
            valid = [s for s in statuses if s in view.STATUSES]
            if not valid:
                if mv.matches("2.38"):
                    raise exception.InvalidInput(message="Invalid status value")
                return None
            opts["status"] = valid[0]
            if opts["status"] == "DELETED" and not ctx.is_admin:
                raise exception.Forbidden(
                    message="Only administrators may list deleted instances")
        if "name" in filters:
            opts["name"] = filters["name"][-1]      # a regex (the schema's)
        if "flavor" in filters:
            opts["flavorid"] = filters["flavor"][-1]
        if "image" in filters:
            # an id or an image URL, whose last part is the id
            opts["image_ref"] = filters["image"][-1].rstrip("/").rsplit(
                "/", 1)[-1]
        for key, value in zip(("changes-since", "changes-before"),
                              common.changes_range(filters)):
            if value is not None:
                # the database holds naive UTC times
                opts[key] = timeutils.normalize_time(value)
        all_tenants = False
        if "all_tenants" in filters:
            value = filters["all_tenants"][-1]
            try:
                all_tenants = strutils.bool_from_string(value, strict=True) \
                    if value else True
            except ValueError as exc:
                raise exception.InvalidInput(message=str(exc))
        if all_tenants:
            policy.authorize(ctx, SERVERS % (
                "detail:get_all_tenants" if detail else "index:get_all_tenants"))
            opts["all_tenants"] = True
            project = filters.get("project_id") or filters.get("tenant_id")
            if project:
                opts["project_id"] = project[-1]
        if "host" in filters:
            opts["host"] = filters["host"][-1]
        if "reservation_id" in filters:
            opts["reservation_id"] = filters["reservation_id"][-1]
        for name in ("tags", "tags-any", "not-tags", "not-tags-any"):
            if name in filters:
                opts[name] = _tag_list(filters[name])
        if "locked" in filters:
            try:
                opts["locked"] = strutils.bool_from_string(
                    filters["locked"][-1], strict=True)
            except ValueError as exc:
                raise exception.InvalidInput(message=str(exc))
        if "deleted" in filters:
            opts["deleted"] = strutils.bool_from_string(filters["deleted"][-1],
                                                        default=False)
        limit, marker = common.limit_and_marker(self.conf, query)
        if limit == 0:
            return []
        try:
            instances = self.compute.get_all(ctx, opts, limit=limit,
                                             marker=marker)
        except exception.InstanceNotFound:
            if marker is None:
                raise
            raise exception.InvalidInput(message="marker [%s] not found"
                                         % marker)
        return list(instances)

    def on_get(self, req, resp):
        instances = self._list(req, detail=False)
        if instances is None:
            common.send(resp, {"servers": []})
            return
        common.send(resp, view.index(req, self.conf, instances))

    def on_get_detail(self, req, resp):
        instances = self._list(req, detail=True)
        if instances is None:
            common.send(resp, {"servers": []})
            return
        ctx = req.context.ctx
        bdms = self.compute.get_bdms_by_instances(ctx, instances) \
            if instances else {}
        tags = (self.compute.tags_by_instances(ctx, instances)
                if req.context.microversion.matches("2.26") else None)
        common.send(resp, view.detail(req, self.conf, instances, bdms,
                                      self._host_statuses(req), tags))

    def _host_statuses(self, req, instance=None):
        if not req.context.microversion.matches("2.16"):
            return None
        target = {"project_id": instance.project_id} if instance else None
        if not policy.check(req.context.ctx, SERVERS % "show:host_status",
                            target):
            return None
        return host_statuses(self.compute, req.context.ctx)

    # -- one server ----------------------------------------------------------------
    def on_get_item(self, req, resp, server_id):
        ctx = req.context.ctx
        validation.validate_query(req.context.microversion, schemas.SHOW_QUERY,
                                  common.query(req))
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, SERVERS % "show",
                         {"project_id": instance.project_id})
        bdms = self.compute.get_bdms_by_instances(ctx, [instance])
        common.send(resp, view.show(req, instance,
                                    bdms.get(instance.uuid, []),
                                    self._host_statuses(req, instance),
                                    tags_of(self.compute, req, instance)))

    def on_put_item(self, req, resp, server_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.UPDATE,
                                        common.read_body(req))["server"]
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, SERVERS % "update",
                         {"project_id": instance.project_id})
        changes = {}
        if "name" in body:
            changes["display_name"] = body["name"]
        if "description" in body:
            changes["display_description"] = body["description"]
        for key, field in (("accessIPv4", "access_ip_v4"),
                           ("accessIPv6", "access_ip_v6")):
            if key in body:
                changes[field] = canonical_ip(body[key])
        if "hostname" in body:
            changes["hostname"] = body["hostname"]
        pin = "pinned_availability_zone" in body      # 2.104's schema
        instance = self.compute.update(
            ctx, instance, changes, pin=pin,
            zone=body.get("pinned_availability_zone"))
        bdms = self.compute.get_bdms_by_instances(ctx, [instance])
        common.send(resp, view.updated(req, instance,
                                       bdms.get(instance.uuid, []),
                                       self._host_statuses(req, instance),
                                       tags_of(self.compute, req, instance)))

    def on_delete_item(self, req, resp, server_id):
        ctx = req.context.ctx
        try:
            instance = self.compute.get(ctx, server_id)
            policy.authorize(ctx, SERVERS % "delete",
                             {"project_id": instance.project_id})
            self.compute.delete(ctx, instance)
        except exception.InstanceNotFound:
            raise exception.InstanceNotFound(
                message="Instance could not be found")
        common.send(resp, None, status=204)

    # -- create --------------------------------------------------------------------
    def on_post(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.CREATE,
                                        common.read_body(req))
        server = body["server"]
        policy.authorize(ctx, SERVERS % "create", {"project_id": ctx.project_id})

        name = server["name"].strip()
        description = server.get("description") if mv.matches("2.19") else name
        min_count = int(server.get("min_count", 1))
        max_count = int(server.get("max_count", min_count))
        if min_count > max_count:
            raise exception.InvalidInput(message="min_count must be <= max_count")

        availability_zone = server.get("availability_zone")
        if availability_zone and ":" in availability_zone:
            policy.authorize(ctx, SERVERS % "create:forced_host")
        if mv.matches("2.74") and (server.get("host")
                                   or server.get("hypervisor_hostname")):
            policy.authorize(ctx, SERVERS % "create:requested_destination")

        legacy = server.get("block_device_mapping")
        bdms = server.get("block_device_mapping_v2")
        if legacy and bdms:
            raise exception.InvalidInput(
                message="Using different block_device_mapping syntaxes is not "
                        "allowed in the same request.")
        image_ref = server.get("imageRef")
        if legacy:
            bdms = _legacy_to_v2(legacy, boots=not image_ref)
        bdms = [_normalize_bdm(b) for b in bdms] if bdms else None
        if not image_ref:
            if not bdms:
                raise exception.InvalidInput(message="Missing imageRef attribute")
            if not any(b.get("boot_index") == 0 for b in bdms):
                raise exception.InvalidBDM(message=BOOT_SEQUENCE_INVALID)
            image_ref = ""

        _check_networks(server.get("networks"))
        flavor_id = urllib.parse.urlsplit(str(server["flavorRef"])).path \
            .rstrip("/").split("/")[-1]
        config_drive = server.get("config_drive")
        hints = (body.get("os:scheduler_hints")
                 or body.get("OS-SCH-HNT:scheduler_hints") or {})
        try:
            instances, reservation_id = self.compute.create(
                ctx, name=name, flavor_ref=flavor_id, image_ref=image_ref,
                block_device_mapping=bdms, min_count=min_count,
                max_count=max_count, metadata=server.get("metadata", {}),
                key_name=server.get("key_name"),
                user_data=server.get("user_data"),
                availability_zone=availability_zone,
                access_ip_v4=canonical_ip(server.get("accessIPv4")),
                access_ip_v6=canonical_ip(server.get("accessIPv6")),
                config_drive=_bool(config_drive) if config_drive is not None
                else None,
                description=description,
                supports_multiattach=mv.matches("2.60"),
                multiattach_multi_create=mv.matches("2.105"),
                microversion=str(mv), group=_group_hint(hints),
                tags=server.get("tags") if mv.matches("2.52") else None)
        except exception.FlavorNotFound as exc:
            raise exception.FlavorRefInvalid(message=exc.format_message())
        except (exception.VolumeNotFound, exception.VolumeTypeNotFound,
                exception.ComputeHostNotFound) as exc:
            # something named in the body: 400, as in Nova
            raise exception.InvalidInput(message=exc.format_message())

        if _bool(server.get("return_reservation_id")):
            common.send(resp, {"reservation_id": reservation_id}, status=202)
            return
        instance = instances[0]
        body = view.create(req, instance, server.get("security_groups"),
                           server.get("adminPass") or generate_password())
        resp.set_header("Location", common.href(req, "servers", instance.uuid))
        common.send(resp, body, status=202)
