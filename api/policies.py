"""The compute API's policy defaults: Nova's rule names, check strings and
scope types (``oslo.policy.policies`` entry point ``volattach-compute``).

Overrides go in the file of ``[oslo_policy] policy_file`` (policy.yaml).
Where volattach keeps an older answer than Nova's current default, the
description says so.
"""
from oslo_policy import policy

ADMIN = "rule:context_is_admin"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
ANY = "@"
# Nova's keypair rules: an admin, or the user the key belongs to
ADMIN_OR_OWNER_USER = "rule:context_is_admin or user_id:%(user_id)s"
SCOPE = ["project"]

_BASE = [
    policy.RuleDefault("context_is_admin", "role:admin",
                       "Decides what is required for the 'is_admin:True' "
                       "check to succeed."),
    policy.RuleDefault("admin_or_owner",
                       "is_admin:True or project_id:%(project_id)s",
                       "Default rule for most non-Admin APIs."),
    policy.RuleDefault("admin_api", "is_admin:True",
                       "Default rule for most Admin APIs."),
    policy.RuleDefault("project_member_api",
                       "role:member and project_id:%(project_id)s",
                       "Default rule for Project level non admin APIs."),
    policy.RuleDefault("project_reader_api",
                       "role:reader and project_id:%(project_id)s",
                       "Default rule for Project level read only APIs."),
    policy.RuleDefault("project_member_or_admin",
                       "rule:project_member_api or rule:context_is_admin",
                       "Default rule for Project Member or admin APIs."),
    policy.RuleDefault("project_reader_or_admin",
                       "rule:project_reader_api or rule:context_is_admin",
                       "Default rule for Project reader or admin APIs."),
    policy.RuleDefault("service_api",
                       "role:service or service_roles:service",
                       "Default rule for service-to-service APIs (a role "
                       "of the user token or of the service token)."),
    policy.RuleDefault("service_or_admin",
                       "rule:service_api or rule:context_is_admin",
                       "Default rule for service or admin APIs."),
]


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": m, "path": p} for m, p in operations],
        scope_types=SCOPE)


_S = "os_compute_api:servers:%s"
_VA = "os_compute_api:os-volumes-attachments:%s"
_IA = "os_compute_api:os-instance-actions:%s"
_SERVER = "/servers/{server_id}"
_ACTION = _SERVER + "/action (%s)"
_ATT = _SERVER + "/os-volume_attachments"

_RULES = [
    _rule("os_compute_api:os-flavor-manage:list", ANY,
          "List flavors (volattach's name: Nova checks no policy here)",
          [("GET", "/flavors"), ("GET", "/flavors/detail"),
           ("GET", "/flavors/{flavor_id}")]),
    _rule("os_compute_api:os-services:list", ADMIN, "List all running "
          "Compute services in a region.", [("GET", "/os-services")]),
    _rule(_S % "index", PROJECT_READER_OR_ADMIN, "List all servers",
          [("GET", "/servers")]),
    _rule(_S % "detail", PROJECT_READER_OR_ADMIN,
          "List all servers with detailed information",
          [("GET", "/servers/detail")]),
    _rule(_S % "index:get_all_tenants", ADMIN,
          "List all servers for all projects", [("GET", "/servers")]),
    _rule(_S % "detail:get_all_tenants", ADMIN,
          "List all servers with detailed information for all projects",
          [("GET", "/servers/detail")]),
    _rule(_S % "allow_all_filters", ADMIN,
          "Allow all filters when listing servers",
          [("GET", "/servers"), ("GET", "/servers/detail")]),
    _rule(_S % "show", PROJECT_READER_OR_ADMIN, "Show a server",
          [("GET", _SERVER)]),
    _rule(_S % "show:host_status", ADMIN,
          "Show a server with additional host status information",
          [("GET", _SERVER), ("GET", "/servers/detail")]),
    _rule(_S % "create", PROJECT_MEMBER_OR_ADMIN, "Create a server",
          [("POST", "/servers")]),
    _rule(_S % "create:forced_host", ADMIN,
          "Create a server on the specified host and/or node",
          [("POST", "/servers")]),
    _rule(_S % "create:requested_destination", ADMIN,
          "Create a server on the requested compute service host and/or "
          "hypervisor_hostname", [("POST", "/servers")]),
    _rule(_S % "update", PROJECT_MEMBER_OR_ADMIN, "Update a server",
          [("PUT", _SERVER)]),
    _rule(_S % "delete", PROJECT_MEMBER_OR_ADMIN, "Delete a server",
          [("DELETE", _SERVER)]),
    _rule(_S % "start", PROJECT_MEMBER_OR_ADMIN, "Start a server",
          [("POST", _ACTION % "os-start")]),
    _rule(_S % "stop", PROJECT_MEMBER_OR_ADMIN, "Stop a server",
          [("POST", _ACTION % "os-stop")]),
    _rule("os_compute_api:os-extended-server-attributes", ADMIN,
          "Return extended attributes for server",
          [("GET", _SERVER), ("GET", "/servers/detail")]),
    _rule(_S % "reboot", PROJECT_MEMBER_OR_ADMIN, "Reboot a server",
          [("POST", _ACTION % "reboot")]),
    _rule(_S % "rebuild", PROJECT_MEMBER_OR_ADMIN, "Rebuild a server",
          [("POST", _ACTION % "rebuild")]),
    _rule("os_compute_api:os-suspend-server:suspend", PROJECT_MEMBER_OR_ADMIN,
          "Suspend server", [("POST", _ACTION % "suspend")]),
    _rule("os_compute_api:os-suspend-server:resume", PROJECT_MEMBER_OR_ADMIN,
          "Resume suspended server", [("POST", _ACTION % "resume")]),
    _rule("os_compute_api:os-deferred-delete:force", PROJECT_MEMBER_OR_ADMIN,
          "Force delete a server before deferred cleanup",
          [("POST", _ACTION % "forceDelete")]),
    _rule("os_compute_api:os-deferred-delete:restore", PROJECT_MEMBER_OR_ADMIN,
          "Restore a soft deleted server", [("POST", _ACTION % "restore")]),
    _rule("os_compute_api:os-keypairs:index", ADMIN_OR_OWNER_USER,
          "List all keypairs", [("GET", "/os-keypairs")]),
    _rule("os_compute_api:os-keypairs:create", ADMIN_OR_OWNER_USER,
          "Create a keypair", [("POST", "/os-keypairs")]),
    _rule("os_compute_api:os-keypairs:show", ADMIN_OR_OWNER_USER,
          "Show details of a keypair",
          [("GET", "/os-keypairs/{keypair_name}")]),
    _rule("os_compute_api:os-keypairs:delete", ADMIN_OR_OWNER_USER,
          "Delete a keypair", [("DELETE", "/os-keypairs/{keypair_name}")]),
    _rule("os_compute_api:os-pause-server:pause", PROJECT_MEMBER_OR_ADMIN,
          "Pause a server", [("POST", _ACTION % "pause")]),
    _rule("os_compute_api:os-pause-server:unpause", PROJECT_MEMBER_OR_ADMIN,
          "Unpause a paused server", [("POST", _ACTION % "unpause")]),
    _rule("os_compute_api:os-lock-server:lock", PROJECT_MEMBER_OR_ADMIN,
          "Lock a server", [("POST", _ACTION % "lock")]),
    _rule("os_compute_api:os-lock-server:unlock", PROJECT_MEMBER_OR_ADMIN,
          "Unlock a server", [("POST", _ACTION % "unlock")]),
    _rule("os_compute_api:os-lock-server:unlock:unlock_override", ADMIN,
          "Unlock a server, regardless who locked the server",
          [("POST", _ACTION % "unlock")]),
    _rule("os_compute_api:os-shelve:shelve", PROJECT_MEMBER_OR_ADMIN,
          "Shelve server", [("POST", _ACTION % "shelve")]),
    _rule("os_compute_api:os-shelve:shelve_offload", ADMIN,
          "Shelf-offload (remove) server",
          [("POST", _ACTION % "shelveOffload")]),
    _rule("os_compute_api:os-shelve:unshelve", PROJECT_MEMBER_OR_ADMIN,
          "Unshelve (restore) shelved server",
          [("POST", _ACTION % "unshelve")]),
    _rule("os_compute_api:os-shelve:unshelve_to_host", ADMIN,
          "Unshelve (restore) shelve offloaded server to a specific host",
          [("POST", _ACTION % "unshelve")]),
    _rule("os_compute_api:os-console-output", PROJECT_MEMBER_OR_ADMIN,
          "Show console output for a server",
          [("POST", _ACTION % "os-getConsoleOutput")]),
    _rule("os_compute_api:os-admin-actions:reset_state", ADMIN,
          "Reset the state of a given server",
          [("POST", _ACTION % "os-resetState")]),
    _rule("os_compute_api:os-migrate-server:migrate_live", ADMIN,
          "Live migrate a server to a new host without a reboot",
          [("POST", _ACTION % "os-migrateLive")]),
    _rule("os_compute_api:os-migrations:index", ADMIN,
          "List migrations", [("GET", "/os-migrations")]),
    _rule(_S % "migrations:index", ADMIN,
          "Lists in-progress live migrations for a given server",
          [("GET", _SERVER + "/migrations")]),
    _rule(_S % "migrations:show", ADMIN,
          "Show details for an in-progress live migration for a given "
          "server", [("GET", _SERVER + "/migrations/{migration_id}")]),
    _rule(_VA % "index", PROJECT_READER_OR_ADMIN,
          "List volume attachments for an instance", [("GET", _ATT)]),
    _rule(_VA % "show", PROJECT_READER_OR_ADMIN,
          "Show details of a volume attachment",
          [("GET", _ATT + "/{volume_id}")]),
    _rule(_VA % "create", PROJECT_MEMBER_OR_ADMIN,
          "Attach a volume to an instance", [("POST", _ATT)]),
    _rule(_VA % "update", PROJECT_MEMBER_OR_ADMIN,
          "Update a volume attachment (delete_on_termination, 2.85)",
          [("PUT", _ATT + "/{volume_id}")]),
    _rule(_VA % "swap", "rule:service_or_admin",
          "Update a volume attachment with a different volumeId (swap). "
          "Nova's current default is the service role only; volattach "
          "keeps admins allowed.", [("PUT", _ATT + "/{volume_id}")]),
    _rule("os_compute_api:os-server-external-events:create",
          "rule:service_or_admin", "Create one or more external events",
          [("POST", "/os-server-external-events")]),
    _rule(_VA % "delete", PROJECT_MEMBER_OR_ADMIN,
          "Detach a volume from an instance",
          [("DELETE", _ATT + "/{volume_id}")]),
    _rule("os_compute_api:ips:index", PROJECT_READER_OR_ADMIN,
          "List IP addresses that are assigned to a server",
          [("GET", _SERVER + "/ips")]),
    _rule("os_compute_api:ips:show", PROJECT_READER_OR_ADMIN,
          "Show IP addresses details for a network label of a server",
          [("GET", _SERVER + "/ips/{network_label}")]),
    _rule("os_compute_api:os-volumes:list", PROJECT_READER_OR_ADMIN,
          "List volumes (deprecated proxy API, below 2.36)",
          [("GET", "/os-volumes")]),
    _rule("os_compute_api:os-volumes:detail", PROJECT_READER_OR_ADMIN,
          "List volumes with details (deprecated proxy API, below 2.36)",
          [("GET", "/os-volumes/detail")]),
    _rule("os_compute_api:os-volumes:show", PROJECT_READER_OR_ADMIN,
          "Show a volume (deprecated proxy API, below 2.36)",
          [("GET", "/os-volumes/{volume_id}")]),
    _rule("os_compute_api:os-volumes:create", PROJECT_MEMBER_OR_ADMIN,
          "Create a volume (deprecated proxy API, below 2.36)",
          [("POST", "/os-volumes")]),
    _rule("os_compute_api:os-volumes:delete", PROJECT_MEMBER_OR_ADMIN,
          "Delete a volume (deprecated proxy API, below 2.36)",
          [("DELETE", "/os-volumes/{volume_id}")]),
    _rule(_IA % "list", PROJECT_READER_OR_ADMIN,
          "List actions for a server",
          [("GET", _SERVER + "/os-instance-actions")]),
    _rule(_IA % "show", PROJECT_READER_OR_ADMIN,
          "Show action details for a server",
          [("GET", _SERVER + "/os-instance-actions/{request_id}")]),
    _rule(_IA % "events", ADMIN,
          "Add events details in action details for a server",
          [("GET", _SERVER + "/os-instance-actions/{request_id}")]),
    _rule(_IA % "events:details", PROJECT_READER_OR_ADMIN,
          "Add details (host, hostId, details) to events of an action "
          "(2.84); volattach keeps the owner allowed, Nova's default is "
          "admin only.",
          [("GET", _SERVER + "/os-instance-actions/{request_id}")]),
]


_SM = "os_compute_api:server-metadata:%s"
_ST = "os_compute_api:os-server-tags:%s"
_QS = "os_compute_api:os-quota-sets:%s"
_META = _SERVER + "/metadata"
_TAGS = _SERVER + "/tags"
_QSP = "/os-quota-sets/{tenant_id}"

_RULES += [
    _rule(_SM % "index", PROJECT_READER_OR_ADMIN,
          "List all metadata of a server", [("GET", _META)]),
    _rule(_SM % "show", PROJECT_READER_OR_ADMIN,
          "Show metadata for a server", [("GET", _META + "/{key}")]),
    _rule(_SM % "create", PROJECT_MEMBER_OR_ADMIN,
          "Create metadata for a server", [("POST", _META)]),
    _rule(_SM % "update_all", PROJECT_MEMBER_OR_ADMIN,
          "Replace metadata for a server", [("PUT", _META)]),
    _rule(_SM % "update", PROJECT_MEMBER_OR_ADMIN,
          "Update metadata from a server", [("PUT", _META + "/{key}")]),
    _rule(_SM % "delete", PROJECT_MEMBER_OR_ADMIN,
          "Delete metadata from a server", [("DELETE", _META + "/{key}")]),
    _rule(_ST % "index", PROJECT_READER_OR_ADMIN,
          "List all tags for given server", [("GET", _TAGS)]),
    _rule(_ST % "show", PROJECT_READER_OR_ADMIN,
          "Check tag existence on the server", [("GET", _TAGS + "/{tag}")]),
    _rule(_ST % "update", PROJECT_MEMBER_OR_ADMIN,
          "Add a single tag to the server", [("PUT", _TAGS + "/{tag}")]),
    _rule(_ST % "update_all", PROJECT_MEMBER_OR_ADMIN,
          "Replace all tags on specified server with the new set of tags.",
          [("PUT", _TAGS)]),
    _rule(_ST % "delete", PROJECT_MEMBER_OR_ADMIN,
          "Delete a single tag from the specified server",
          [("DELETE", _TAGS + "/{tag}")]),
    _rule(_ST % "delete_all", PROJECT_MEMBER_OR_ADMIN,
          "Delete all the server tags", [("DELETE", _TAGS)]),
    _rule(_QS % "update", ADMIN, "Update the quotas", [("PUT", _QSP)]),
    _rule(_QS % "defaults", ANY, "List default quotas",
          [("GET", _QSP + "/defaults")]),
    _rule(_QS % "show", PROJECT_READER_OR_ADMIN, "Show a quota",
          [("GET", _QSP)]),
    _rule(_QS % "delete", ADMIN, "Revert quotas to defaults",
          [("DELETE", _QSP)]),
    _rule(_QS % "detail", PROJECT_READER_OR_ADMIN,
          "Show the detail of quota", [("GET", _QSP + "/detail")]),
    _rule("os_compute_api:os-quota-class-sets:show", ADMIN,
          "List quotas for specific quota classs",
          [("GET", "/os-quota-class-sets/{quota_class}")]),
    _rule("os_compute_api:os-quota-class-sets:update", ADMIN,
          "Update quotas for specific quota class",
          [("PUT", "/os-quota-class-sets/{quota_class}")]),
    _rule("os_compute_api:limits", ANY,
          "Show rate and absolute limits for the current user project",
          [("GET", "/limits")]),
    _rule("os_compute_api:limits:other_project", ADMIN,
          "Show rate and absolute limits of the project requested",
          [("GET", "/limits")]),
]


def list_rules():
    from volattach.api import policies_placement
    return _BASE + _RULES + policies_placement.rules()
