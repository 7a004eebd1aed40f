"""Instance: a server, its states and where it runs."""
import base64
import json

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach.objects import flavor as flavor_obj
from volattach import exception

# vm_state values (Nova's)
ACTIVE = "active"
BUILDING = "building"
STOPPED = "stopped"
PAUSED = "paused"
SUSPENDED = "suspended"
RESIZED = "resized"
SOFT_DELETED = "soft-delete"
DELETED = "deleted"
ERROR = "error"
SHELVED = "shelved"
SHELVED_OFFLOADED = "shelved_offloaded"

# power_state values (Nova's)
NOSTATE = 0
RUNNING = 1
PAUSED_POWER = 3
SHUTDOWN = 4
SUSPENDED_POWER = 7


@base.VolattachObjectRegistry.register
class Instance(base.VolattachPersistentObject, base.VolattachObject):
    # Version 1.0: Initial version
    # Version 1.1: user_data
    VERSION = "1.1"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "project_id": fields.StringField(),
        "user_id": fields.StringField(),
        "display_name": fields.StringField(nullable=True),
        "display_description": fields.StringField(nullable=True),
        "hostname": fields.StringField(nullable=True),
        "host": fields.StringField(nullable=True),
        "node": fields.StringField(nullable=True),
        "vm_state": fields.StringField(),
        "task_state": fields.StringField(nullable=True),
        "power_state": fields.IntegerField(),
        "flavor": fields.ObjectField("Flavor"),
        "image_ref": fields.StringField(nullable=True),
        "key_name": fields.StringField(nullable=True),
        "locked": fields.BooleanField(),
        "locked_by": fields.StringField(nullable=True),
        "locked_reason": fields.StringField(nullable=True),
        "availability_zone": fields.StringField(nullable=True),
        "reservation_id": fields.StringField(nullable=True),
        "launch_index": fields.IntegerField(),
        "access_ip_v4": fields.StringField(nullable=True),
        "access_ip_v6": fields.StringField(nullable=True),
        "config_drive": fields.StringField(nullable=True),
        "user_data": fields.StringField(nullable=True),
        "metadata": fields.DictOfStringsField(),
        "fault": base.JSONField(nullable=True),
        "shelved_at": fields.DateTimeField(nullable=True),
        "launched_at": fields.DateTimeField(nullable=True),
        "terminated_at": fields.DateTimeField(nullable=True),
        "deleted_at": fields.DateTimeField(nullable=True),
        "deleted": fields.BooleanField(),
    })

    _JSON_COLUMNS = ("metadata", "fault")

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop("user_data", None)

    # ``availability_zone`` holds what the server is pinned to, Nova's
    # request spec zone: a zone, "zone:host" when an admin forced a host, or
    # ":host" for a forced host once the zone is unpinned (2.104).
    @property
    def pinned_availability_zone(self):
        """The zone the server is pinned to, or None."""
        value = self.availability_zone if self.obj_attr_is_set(
            "availability_zone") else None
        return (value or "").split(":", 1)[0] or None

    @property
    def forced_host(self):
        """The host an admin forced ("zone:host"), or None."""
        value = self.availability_zone if self.obj_attr_is_set(
            "availability_zone") else None
        if not value or ":" not in value:
            return None
        return value.split(":", 1)[1] or None

    def pin_availability_zone(self, zone):
        """Pin to ``zone`` (None: unpin), keeping a forced host."""
        host = self.forced_host
        self.availability_zone = ("%s:%s" % (zone or "", host) if host
                                  else zone)

    @property
    def user_data_bytes(self):
        """The user data decoded (what a config drive holds), or None."""
        if not self.obj_attr_is_set("user_data") or self.user_data is None:
            return None
        return base64.b64decode(self.user_data)

    @classmethod
    def _from_row(cls, context, row):
        obj = cls(context)
        base.fill(obj, row, skip=("flavor", "metadata", "fault", "deleted"))
        # the flavor column holds the Flavor's fields as written by _to_values
        obj.flavor = flavor_obj.Flavor._from_row(context, json.loads(row["flavor"]))
        metadata = row.get("metadata")
        # "{}" (most servers) needs no JSON decoder
        obj.metadata = json.loads(metadata) if metadata and metadata != "{}" else {}
        obj.fault = json.loads(row["fault"]) if row.get("fault") else None
        obj.deleted = bool(row["deleted"])
        obj.obj_reset_changes(recursive=True)
        return obj

    def _to_values(self, names):
        values = {}
        for name in names:
            value = getattr(self, name)
            if name == "flavor":
                value = json.dumps(value.obj_to_primitive()["volattach_object.data"])
            elif name in self._JSON_COLUMNS:
                value = json.dumps(value) if value is not None else None
            elif name == "deleted":
                continue
            values[name] = value
        return values

    @classmethod
    @base.remotable
    def get_by_uuid(cls, context, uuid, read_deleted=False):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.instance_get_by_uuid(uuid, read_deleted))

    @classmethod
    def get_by_uuid_with_bdms(cls, context, uuid):
        """``(instance, BlockDeviceMappingList)`` of a server that is not
        deleted, read in one database statement.

        For the compute API, which reads a server and its mappings on every
        volume request.  Not remotable (computes never call it, and a new
        remotable method would change the object's version fingerprint)."""
        from volattach.db import api as db_api
        from volattach.objects import block_device
        row, bdm_rows = db_api.instance_get_with_bdms(uuid)
        return (cls._from_row(context, row),
                block_device.BlockDeviceMappingList._from_rows(context, bdm_rows))

    @base.remotable
    def create(self):
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create", reason="already created")
        names = [n for n in self.obj_what_changed() if n not in ("id", "deleted")]
        row = db_api.instance_create(self._to_values(names))
        self._refresh(row)

    @classmethod
    def create_many(cls, instances, admit, tags=()):
        """Create ``instances`` (new objects of one project and user) in
        one transaction under the project's quota lock; ``admit(project,
        user)`` gets the counted usages and returns how many to create (or
        raises).  Returns the created ones, refreshed.  Not remotable: the
        API's create calls it (``api/compute/quotas.py``)."""
        from volattach.db import api as db_api
        if not instances:
            return []
        first = instances[0]
        values = [i._to_values([n for n in i.obj_what_changed()
                                if n not in ("id", "deleted")])
                  for i in instances]
        rows = db_api.instance_create_many(values, first.project_id,
                                           first.user_id, admit, tags=tags)
        created = instances[:len(rows)]
        for instance, row in zip(created, rows):
            instance._refresh(row)
        return created

    @base.remotable
    def save(self, expected_task_state=None, expected_vm_state=None):
        """Write the changed fields; expected states make it a compare-and-swap."""
        from volattach.db import api as db_api
        changes = self.obj_what_changed()
        if self.obj_attr_is_set("flavor") and self.flavor.obj_what_changed():
            changes.add("flavor")
        names = [n for n in changes if n not in ("id", "uuid", "deleted", "created_at")]
        if not names and expected_task_state is None and expected_vm_state is None:
            return
        row = db_api.instance_update(self.uuid, self._to_values(names),
                                     expected_task_state=expected_task_state,
                                     expected_vm_state=expected_vm_state)
        self._refresh(row)

    @base.remotable
    def destroy(self):
        from volattach.db import api as db_api
        row = db_api.instance_destroy(self.uuid)
        self._refresh(row)

    def _refresh(self, row):
        fresh = self._from_row(self._context, row)
        for name in self.fields:
            setattr(self, name, getattr(fresh, name))
        self.obj_reset_changes(recursive=True)


@base.VolattachObjectRegistry.register
class InstanceList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("Instance")}

    @classmethod
    @base.remotable
    def get_by_filters(cls, context, filters, limit=None, marker=None, sort_dir="desc"):
        from volattach.db import api as db_api
        rows = db_api.instance_get_all(filters, limit=limit, marker=marker,
                                       sort_dir=sort_dir)
        return cls(context, objects=[Instance._from_row(context, r) for r in rows])
