"""Quotas (os-quota-sets, /limits) and their enforcement on create,
metadata and key pairs, as Nova counts them: live usage, compared with the
project's limits (``quotas`` rows, else ``[quota]`` defaults) and, where an
admin set any, one user's.

Counting and creating are one transaction under the project's lock row
(``db.api.quotas``), so that concurrent creates of one project admit no
more servers than the quota; Nova instead counts, creates and counts
again, deleting what went over.  server_groups and server_group_members
are shown with Nova's defaults and counted by the server group API.
"""
from volattach.conf import CONF
from volattach.db import api as db_api
from volattach import exception

# Nova's quota resources, each with its default ([quota] option, or a fixed
# value for the deprecated nova-network ones)
RESOURCES = ("instances", "cores", "ram", "metadata_items", "injected_files",
             "injected_file_content_bytes", "injected_file_path_bytes",
             "key_pairs", "server_groups", "server_group_members",
             "fixed_ips", "floating_ips", "security_groups",
             "security_group_rules")
_OPTION = {"injected_file_path_bytes": "injected_file_path_length"}
_FIXED_DEFAULTS = {"fixed_ips": -1, "floating_ips": -1,
                   "security_groups": -1, "security_group_rules": -1}
# what one server takes of each counted resource
COUNTED = ("instances", "cores", "ram")
# usage counters of other resources, by name (the server group API adds
# its own); each is ``fn(project_id, user_id) -> int``
EXTRA_COUNTERS = {}
MAX_INT = 0x7FFFFFFF


def defaults(class_name="default"):
    """Every resource's default: the quota class's limit (os-quota-class-
    sets; the class ``default`` holds the defaults of every project), else
    ``[quota]``."""
    values = {r: _FIXED_DEFAULTS[r] if r in _FIXED_DEFAULTS
              else getattr(CONF.quota, _OPTION.get(r, r)) for r in RESOURCES}
    values.update({r: v for r, v in db_api.quota_class_get_all(
        class_name).items() if r in values})
    return values


def _fits(limit, used, wanted):
    return limit < 0 or used + wanted <= limit


class QuotasAPI:
    """The quota part of the facade (no state of its own)."""

    # -- reading ------------------------------------------------------------
    @staticmethod
    def quota_limits(context, project_id, user_id=None):
        """``{resource: limit}`` of the project, or of one user in it
        (a user's unset limit is the project's)."""
        limits = defaults()
        limits.update(db_api.quota_get_all(project_id))
        if user_id:
            limits.update(db_api.quota_get_all(project_id, user_id))
        return limits

    @staticmethod
    def quota_usages(context, project_id, user_id=None):
        """``{resource: in_use}`` (0 for what nothing counts here)."""
        counted = db_api.quota_usages(project_id, user_id or None)
        if not user_id:
            # a project shows the caller's key pairs, as Nova does
            counted["key_pairs"] = db_api.quota_usages(
                project_id, context.user_id)["key_pairs"]
        usages = {r: 0 for r in RESOURCES}
        usages.update(counted)
        for name, counter in EXTRA_COUNTERS.items():
            usages[name] = counter(project_id, user_id)
        return usages

    # -- changing the limits ------------------------------------------------
    def quota_update(self, context, project_id, values, user_id=None,
                     force=False):
        """Set limits; below the current usage is a 400 unless ``force``
        (checked with the usage counted under the project's lock); a
        user's limit may not exceed the project's."""
        project_limits = self.quota_limits(context, project_id)

        def check(usages):
            if force:
                return
            for resource, limit in values.items():
                used = usages.get(resource, 0)
                if resource in EXTRA_COUNTERS:
                    used = EXTRA_COUNTERS[resource](project_id, user_id)
                if limit != -1 and limit < used:
                    raise exception.InvalidInput(
                        message="Quota limit %s for %s must be greater than "
                                "or equal to already used and reserved %s."
                                % (limit, resource, used))
                maximum = project_limits[resource] if user_id else -1
                if maximum != -1 and (limit == -1 or limit > maximum):
                    raise exception.InvalidInput(
                        message="Quota limit %s for %s must be less than or "
                                "equal to %s." % (limit, resource, maximum))
        db_api.quota_set_all(project_id, values, user_id or None, check=check)

    @staticmethod
    def quota_delete(context, project_id, user_id=None):
        db_api.quota_destroy_all(project_id, user_id or None)

    @staticmethod
    def quota_class_get(context, class_name):
        return defaults(class_name)

    @staticmethod
    def quota_class_update(context, class_name, values):
        db_api.quota_class_set_all(class_name, values)

    # -- enforcement ----------------------------------------------------------
    def check_metadata_quota(self, context, project_id, metadata):
        limit = self.quota_limits(context, project_id)["metadata_items"]
        if 0 <= limit < len(metadata or {}):
            raise exception.MetadataLimitExceeded(allowed=limit)

    def metadata_limit(self, context, project_id):
        return self.quota_limits(context, project_id)["metadata_items"]

    def check_key_pairs_quota(self, context, user_id):
        limit = self.quota_limits(context, context.project_id)["key_pairs"]
        if limit >= 0 and db_api.quota_usages(
                context.project_id, user_id)["key_pairs"] >= limit:
            raise exception.KeypairLimitExceeded()

    def instance_admitter(self, context, flavor, min_count, max_count):
        """``admit(project_usages, user_usages)`` for
        ``objects.Instance.create_many``: how many servers of ``flavor``
        (``min_count`` to ``max_count``) the quotas let the caller create,
        or TooManyInstances with Nova's message."""
        project_limits = self.quota_limits(context, context.project_id)
        user_limits = db_api.quota_get_all(context.project_id,
                                           context.user_id)
        per_server = {"instances": 1, "cores": flavor.vcpus,
                      "ram": flavor.memory_mb}

        def admit(project_usages, user_usages):
            scopes = [(project_limits, project_usages)]
            if user_limits:
                scopes.append((dict(project_limits, **user_limits),
                               user_usages))

            def fits(n):
                return [r for r in COUNTED for limits, usages in scopes
                        if not _fits(limits[r], usages[r], per_server[r] * n)]
            for n in range(max_count, min_count - 1, -1):
                if not fits(n):
                    return n
            overs = list(dict.fromkeys(fits(min_count)))
            limits, usages = scopes[-1] if any(
                not _fits(scopes[-1][0][r], scopes[-1][1][r],
                          per_server[r] * min_count)
                for r in overs) else scopes[0]
            raise exception.TooManyInstances(
                overs=", ".join(overs),
                req=", ".join(str(per_server[r] * min_count) for r in overs),
                used=", ".join(str(usages[r]) for r in overs),
                allowed=", ".join(str(limits[r]) for r in overs))
        return admit
