"""The route table of the compute API: every URL, in one place.

Each row is ``(path, handler class, suffix)``: falcon calls
``on_<method>`` of the handler for the path, or ``on_<method>_<suffix>``
when a suffix is given (``GET /servers/{server_id}`` is
``Servers.on_get_item``).  Paths under ``/v2.1`` are also routed with
Nova's legacy ``/v2.1/{project_id}/...`` prefix (``api.common.RequestScope``
takes the project id out and checks it against the caller's).
"""
from volattach.api.handlers import aggregates
from volattach.api.handlers import availability_zone
from volattach.api.handlers import flavors
from volattach.api.handlers import instance_actions
from volattach.api.handlers import ips
from volattach.api.handlers import keypairs
from volattach.api.handlers import limits
from volattach.api.handlers import migrations
from volattach.api.handlers import os_volumes
from volattach.api.handlers import quota_class_sets
from volattach.api.handlers import quota_sets
from volattach.api.handlers import server_actions
from volattach.api.handlers import server_external_events
from volattach.api.handlers import server_groups
from volattach.api.handlers import server_metadata
from volattach.api.handlers import server_tags
from volattach.api.handlers import servers
from volattach.api.handlers import usage
from volattach.api.handlers import services
from volattach.api.handlers import versions
from volattach.api.handlers import volume_attachments

V21 = "/v2.1"
_SERVER = "/servers/{server_id}"

ROUTES = (
    ("/", versions.Root, None),
    (V21, versions.V21, None),
    # Nova's legacy v2.0 entry (the v2.1 API without microversions)
    ("/v2", versions.V20, None),
    # flavors
    (V21 + "/flavors", flavors.Flavors, None),
    (V21 + "/flavors/detail", flavors.Flavors, "detail"),
    (V21 + "/flavors/{flavor_id}", flavors.Flavors, "item"),
    # os-aggregates
    (V21 + "/os-aggregates", aggregates.Aggregates, None),
    (V21 + "/os-aggregates/{aggregate_id}", aggregates.Aggregates, "item"),
    (V21 + "/os-aggregates/{aggregate_id}/action",
     aggregates.AggregateAction, None),
    # os-availability-zone
    (V21 + "/os-availability-zone", availability_zone.AvailabilityZones,
     None),
    (V21 + "/os-availability-zone/detail",
     availability_zone.AvailabilityZones, "detail"),
    # os-keypairs
    (V21 + "/os-keypairs", keypairs.Keypairs, None),
    (V21 + "/os-keypairs/{name}", keypairs.Keypairs, "item"),
    # limits and os-quota-sets
    (V21 + "/limits", limits.Limits, None),
    (V21 + "/os-quota-sets/{tenant_id}", quota_sets.QuotaSets, None),
    (V21 + "/os-quota-sets/{tenant_id}/detail", quota_sets.QuotaSets,
     "detail"),
    (V21 + "/os-quota-sets/{tenant_id}/defaults", quota_sets.QuotaSets,
     "defaults"),
    (V21 + "/os-quota-class-sets/{class_name}",
     quota_class_sets.QuotaClassSets, None),
    # os-migrations
    (V21 + "/os-migrations", migrations.Migrations, None),
    # os-server-groups
    (V21 + "/os-server-groups", server_groups.ServerGroups, None),
    (V21 + "/os-server-groups/{group_id}", server_groups.ServerGroups,
     "item"),
    # os-services
    (V21 + "/os-services", services.Services, None),
    (V21 + "/os-services/{service_id}", services.Services, "item"),
    # os-simple-tenant-usage
    (V21 + "/os-simple-tenant-usage", usage.Usage, None),
    (V21 + "/os-simple-tenant-usage/{tenant_id}", usage.Usage, "item"),
    # os-volumes: the deprecated volume proxy (below 2.36)
    (V21 + "/os-volumes", os_volumes.OsVolumes, None),
    (V21 + "/os-volumes/detail", os_volumes.OsVolumes, "detail"),
    (V21 + "/os-volumes/{volume_id}", os_volumes.OsVolumes, "item"),
    # os-server-external-events (services tell the API about servers)
    (V21 + "/os-server-external-events",
     server_external_events.ServerExternalEvents, None),
    # servers
    (V21 + "/servers", servers.Servers, None),
    (V21 + "/servers/detail", servers.Servers, "detail"),
    (V21 + _SERVER, servers.Servers, "item"),
    (V21 + _SERVER + "/action", server_actions.ServerAction, None),
    # server metadata and tags (2.26)
    (V21 + _SERVER + "/metadata", server_metadata.ServerMetadata, None),
    (V21 + _SERVER + "/metadata/{key}", server_metadata.ServerMetadata,
     "item"),
    (V21 + _SERVER + "/tags", server_tags.ServerTags, None),
    (V21 + _SERVER + "/tags/{tag}", server_tags.ServerTags, "item"),
    # volume attachments
    (V21 + _SERVER + "/os-volume_attachments",
     volume_attachments.VolumeAttachments, None),
    (V21 + _SERVER + "/os-volume_attachments/{volume_id}",
     volume_attachments.VolumeAttachments, "item"),
    # os-server-ips
    (V21 + _SERVER + "/ips", ips.ServerIps, None),
    (V21 + _SERVER + "/ips/{network_label}", ips.ServerIps, "item"),
    # instance actions
    (V21 + _SERVER + "/os-instance-actions",
     instance_actions.InstanceActions, None),
    (V21 + _SERVER + "/os-instance-actions/{request_id}",
     instance_actions.InstanceActions, "item"),
    # server migrations (2.23): live migrations in progress
    (V21 + _SERVER + "/migrations", migrations.ServerMigrations, None),
    (V21 + _SERVER + "/migrations/{migration_id}",
     migrations.ServerMigrations, "item"),
)


def add_routes(app, compute_api, conf):
    """Add ROUTES to a falcon App; one handler instance per class."""
    handlers = {}
    for path, handler_class, suffix in ROUTES:
        handler = handlers.get(handler_class)
        if handler is None:
            handler = handlers[handler_class] = handler_class(compute_api, conf)
        kwargs = {"suffix": suffix} if suffix else {}
        app.add_route(path, handler, **kwargs)
        if path.startswith(V21 + "/"):
            app.add_route(V21 + "/{project_id}" + path[len(V21):], handler,
                          **kwargs)
