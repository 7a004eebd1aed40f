"""Server groups (os-server-groups): create, list, show, delete, and the
``group`` scheduler hint of server create (the group must exist and be
visible to the caller; the servers join it as members)."""
from volattach.api.compute import base
from volattach import exception
from volattach import group_policy
from volattach import objects
from volattach.objects import instance_group as group_obj


class ServerGroupsAPI(base.FacadeBase):

    def server_group_create(self, context, name, policy, rules=None):
        """A new group of the caller's project (400: rules on a policy other
        than anti-affinity, as Nova)."""
        if rules and policy != group_obj.ANTI_AFFINITY:
            raise exception.InvalidInput(
                message="Only anti-affinity policy supports rules.")
        group = objects.InstanceGroup(
            context, name=name, policy=policy,
            rules={k: int(v) for k, v in (rules or {}).items()},
            project_id=context.project_id, user_id=context.user_id)
        group.create()
        return group

    def server_group_get(self, context, group_uuid):
        return objects.InstanceGroup.get_by_uuid(context, group_uuid)

    def server_group_list(self, context, all_projects=False):
        return objects.InstanceGroupList.get_all(
            context, None if all_projects else context.project_id)

    def server_group_delete(self, context, group):
        group.destroy()

    def server_group_ids(self, context, instance):
        """The uuids of the groups ``instance`` is in (one at most)."""
        group = objects.InstanceGroup.get_by_instance_uuid(context,
                                                           instance.uuid)
        return [group.uuid] if group is not None else []

    def group_for_create(self, context, group_uuid):
        """The group of a create's ``group`` hint: 400 when there is none
        the caller may use (Nova's InstanceGroupNotFound, a 400 there)."""
        try:
            group = objects.InstanceGroup.get_by_uuid(context, group_uuid)
        except exception.InstanceGroupNotFound as exc:
            raise exception.InvalidInput(message=exc.format_message())
        if not context.is_admin and group.project_id != context.project_id:
            raise exception.InvalidInput(
                message=exception.InstanceGroupNotFound(
                    group_uuid=group_uuid).format_message())
        return group

    def check_group_destination(self, context, instance, host):
        """A live migration to ``host`` that the server's group's hard
        policy forbids: NoValidHost (Nova's scheduler answer; 400 here, at
        once).  The conductor checks again under the group's lock."""
        group = objects.InstanceGroup.get_by_instance_uuid(context,
                                                           instance.uuid)
        if group is None or group.policy not in group_obj.HARD_POLICIES:
            return
        hosts = {}
        for uuid in group.members:
            try:
                hosts[uuid] = objects.Instance.get_by_uuid(
                    context.elevated(), uuid).host
            except exception.InstanceNotFound:
                continue
        occupied = group_policy.occupied_hosts(hosts, leaving=(instance.uuid,))
        if not group_policy.allowed(group, [host], occupied):
            raise exception.NoValidHostRequest(
                reason="The destination %s does not satisfy the server "
                       "group %s policy %s." % (host, group.uuid, group.policy))
