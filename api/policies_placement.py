"""Policy defaults of where servers go (issue 34): server groups,
aggregates, availability zones, usage, services' updates.
Nova's rule names and check strings; ``api.policies.list_rules`` adds
them to the rest."""
from volattach.api import policies as p

_SG = "os_compute_api:os-server-groups:%s"
_AGG = "os_compute_api:os-aggregates:%s"
_AGG_ACTION = "/os-aggregates/{aggregate_id}/action (%s)"


def rules():
    return [
        p._rule(_SG % "create", p.PROJECT_MEMBER_OR_ADMIN,
                "Create a new server group",
                [("POST", "/os-server-groups")]),
        p._rule(_SG % "delete", p.PROJECT_MEMBER_OR_ADMIN,
                "Delete a server group",
                [("DELETE", "/os-server-groups/{server_group_id}")]),
        p._rule(_SG % "index", p.PROJECT_READER_OR_ADMIN,
                "List all server groups", [("GET", "/os-server-groups")]),
        p._rule(_SG % "index:all_projects", p.ADMIN,
                "List all server groups for all projects",
                [("GET", "/os-server-groups")]),
        p._rule(_SG % "show", p.PROJECT_READER_OR_ADMIN,
                "Show details of a server group",
                [("GET", "/os-server-groups/{server_group_id}")]),
        p._rule(_AGG % "set_metadata", p.ADMIN,
                "Create or replace metadata for an aggregate",
                [("POST", _AGG_ACTION % "set_metadata")]),
        p._rule(_AGG % "add_host", p.ADMIN, "Add a host to an aggregate",
                [("POST", _AGG_ACTION % "add_host")]),
        p._rule(_AGG % "create", p.ADMIN, "Create an aggregate",
                [("POST", "/os-aggregates")]),
        p._rule(_AGG % "remove_host", p.ADMIN,
                "Remove a host from an aggregate",
                [("POST", _AGG_ACTION % "remove_host")]),
        p._rule(_AGG % "update", p.ADMIN, "Update name and/or availability "
                "zone for an aggregate",
                [("PUT", "/os-aggregates/{aggregate_id}")]),
        p._rule(_AGG % "index", p.ADMIN, "List all aggregates",
                [("GET", "/os-aggregates")]),
        p._rule(_AGG % "delete", p.ADMIN, "Delete an aggregate",
                [("DELETE", "/os-aggregates/{aggregate_id}")]),
        p._rule(_AGG % "show", p.ADMIN, "Show details for an aggregate",
                [("GET", "/os-aggregates/{aggregate_id}")]),
        p._rule("os_compute_api:os-availability-zone:list", p.ANY,
                "List availability zone information without host "
                "information", [("GET", "/os-availability-zone")]),
        p._rule("os_compute_api:os-availability-zone:detail", p.ADMIN,
                "List detailed availability zone information with host "
                "information", [("GET", "/os-availability-zone/detail")]),
        p._rule("os_compute_api:os-simple-tenant-usage:show",
                p.PROJECT_READER_OR_ADMIN,
                "Show usage statistics for a specific tenant",
                [("GET", "/os-simple-tenant-usage/{tenant_id}")]),
        p._rule("os_compute_api:os-simple-tenant-usage:list", p.ADMIN,
                "List per tenant usage statistics for all tenants",
                [("GET", "/os-simple-tenant-usage")]),
        p._rule("os_compute_api:os-services:update", p.ADMIN,
                "Update a Compute service.",
                [("PUT", "/os-services/{service_id}")]),
        p._rule("os_compute_api:os-services:delete", p.ADMIN,
                "Delete a Compute service.",
                [("DELETE", "/os-services/{service_id}")]),
    ]
