"""InstanceGroup and InstanceGroupList: server groups (os-server-groups),
their policy and rules, and the servers created into them
(``scheduler_hints: {"group": ...}``), which the scheduler places by the
policy (``conductor/scheduler.py``)."""
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception

AFFINITY = "affinity"
ANTI_AFFINITY = "anti-affinity"
SOFT_AFFINITY = "soft-affinity"
SOFT_ANTI_AFFINITY = "soft-anti-affinity"
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)
# the policies a host must satisfy; the soft ones only weigh
HARD_POLICIES = (AFFINITY, ANTI_AFFINITY)


@base.VolattachObjectRegistry.register
class InstanceGroup(base.VolattachPersistentObject, base.VolattachObject,
                    ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "name": fields.StringField(nullable=True),
        "project_id": fields.StringField(),
        "user_id": fields.StringField(),
        "policy": fields.StringField(),
        "rules": fields.DictOfIntegersField(default={}),
        "members": fields.ListOfStringsField(default=[]),
    })

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    @property
    def policies(self):
        """The policy as the list shown below 2.64."""
        return [self.policy]

    @property
    def max_server_per_host(self):
        """How many of the group's servers one host may hold: the rule of
        anti-affinity (1 by default), None for the other policies."""
        if self.policy != ANTI_AFFINITY:
            return None
        return int(self.rules.get("max_server_per_host", 1))

    @base.remotable
    def create(self):
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create",
                                              reason="already created")
        values = {n: getattr(self, n) for n in self.obj_what_changed()
                  if n != "members"}
        base.fill(self, db_api.instance_group_create(values))
        self.obj_reset_changes()

    @base.remotable
    def destroy(self):
        from volattach.db import api as db_api
        db_api.instance_group_destroy(self.uuid)

    @classmethod
    @base.remotable
    def get_by_uuid(cls, context, uuid):
        """InstanceGroupNotFound unless there is a group ``uuid``."""
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.instance_group_get(uuid))

    @classmethod
    @base.remotable
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The group the server was created into, or None."""
        from volattach.db import api as db_api
        row = db_api.instance_group_get_by_instance(instance_uuid)
        return None if row is None else cls._from_row(context, row)

    @base.remotable
    def add_members(self, instance_uuids):
        from volattach.db import api as db_api
        db_api.instance_group_add_members(self.uuid, list(instance_uuids))
        self.members = list(self.members) + [
            u for u in instance_uuids if u not in self.members]
        self.obj_reset_changes(["members"])


@base.VolattachObjectRegistry.register
class InstanceGroupList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("InstanceGroup")}

    @classmethod
    @base.remotable
    def get_all(cls, context, project_id=None):
        """Every group, or those of ``project_id``, oldest first."""
        from volattach.db import api as db_api
        return cls(context, objects=[
            InstanceGroup._from_row(context, r)
            for r in db_api.instance_group_get_all(project_id)])
