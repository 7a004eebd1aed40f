"""GET /limits: the project's absolute limits and what it uses of them
(``rate`` is always empty, as in Nova); an admin may ask for another
project with ``?tenant_id=``.  2.36 drops the network limits, 2.39
maxImageMeta, 2.57 the personality ones."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import limits as schemas

_NAMES = (("ram", "maxTotalRAMSize"), ("instances", "maxTotalInstances"),
          ("cores", "maxTotalCores"), ("key_pairs", "maxTotalKeypairs"),
          ("floating_ips", "maxTotalFloatingIps"),
          ("metadata_items", "maxServerMeta"),
          ("metadata_items", "maxImageMeta"),
          ("injected_files", "maxPersonality"),
          ("injected_file_content_bytes", "maxPersonalitySize"),
          ("security_groups", "maxSecurityGroups"),
          ("security_group_rules", "maxSecurityGroupRules"),
          ("server_groups", "maxServerGroups"),
          ("server_group_members", "maxServerGroupMembers"))
_USED = (("ram", "totalRAMUsed"), ("cores", "totalCoresUsed"),
         ("instances", "totalInstancesUsed"),
         ("floating_ips", "totalFloatingIpsUsed"),
         ("security_groups", "totalSecurityGroupsUsed"),
         ("server_groups", "totalServerGroupsUsed"))
_FILTERED_2_36 = ("floating_ips", "security_groups", "security_group_rules")
_FILTERED_2_57 = _FILTERED_2_36 + ("injected_files",
                                   "injected_file_content_bytes")


class Limits(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.QUERY,
                                          common.query(req))
        policy.authorize(ctx, "os_compute_api:limits",
                         {"project_id": ctx.project_id})
        project_id = ctx.project_id
        tenant_id = common.last(query, "tenant_id")
        if tenant_id:
            policy.authorize(ctx, "os_compute_api:limits:other_project",
                             {"project_id": tenant_id})
            project_id = tenant_id
        filtered = (_FILTERED_2_57 if mv.matches("2.57") else
                    _FILTERED_2_36 if mv.matches("2.36") else ())
        limits = self.compute.quota_limits(ctx, project_id)
        usages = self.compute.quota_usages(ctx, project_id)
        absolute = {name: limits[r] for r, name in _NAMES
                    if r not in filtered
                    and not (name == "maxImageMeta" and mv.matches("2.39"))}
        absolute.update({name: usages.get(r, 0) for r, name in _USED
                         if r not in filtered})
        common.send(resp, {"limits": {"rate": [], "absolute": absolute}})
