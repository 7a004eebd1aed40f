"""BlockDeviceMapping: one disk of a server; for volumes, the link between a
server, a Cinder volume and its Cinder attachment."""
import json

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception


ATTACH_MODES = ("ro", "rw")
# the mode of a volume attachment when nobody asks for another
DEFAULT_ATTACH_MODE = "rw"


class AttachModeField(fields.AutoTypedField):
    AUTO_TYPE = fields.Enum(valid_values=ATTACH_MODES)


@base.VolattachObjectRegistry.register
class BlockDeviceMapping(base.VolattachPersistentObject, base.VolattachObject):
    # Version 1.0: Initial version
    # Version 1.1: attach_mode (ro/rw; "rw" for a volume mapping stored
    #              without one, None for local disks)
    # Version 1.2: create_if_none_added() (compute RPC 1.4's
    #              reserve_block_device_name); same fields as 1.1
    # Version 1.3: destroy_if_attachment() (the conductor's detach); same
    #              fields as 1.1
    # Version 1.4: save_if_attachment() (the conductor's swap and offload);
    #              same fields as 1.1
    # Version 1.5: abandon_reservation() (the conductor's attach rollback);
    #              same fields as 1.1
    VERSION = "1.5"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "instance_uuid": fields.UUIDField(),
        "source_type": fields.StringField(nullable=True),
        "destination_type": fields.StringField(nullable=True),
        "boot_index": fields.IntegerField(nullable=True),
        "device_name": fields.StringField(nullable=True),
        "volume_id": fields.StringField(nullable=True),
        "attachment_id": fields.StringField(nullable=True),
        "connection_info": fields.SensitiveStringField(nullable=True),
        "delete_on_termination": fields.BooleanField(default=False),
        "tag": fields.StringField(nullable=True),
        "volume_size": fields.IntegerField(nullable=True),
        "volume_type": fields.StringField(nullable=True),
        "disk_bus": fields.StringField(nullable=True),
        "device_type": fields.StringField(nullable=True),
        "guest_format": fields.StringField(nullable=True),
        "image_id": fields.StringField(nullable=True),
        "snapshot_id": fields.StringField(nullable=True),
        "no_device": fields.BooleanField(default=False),
        "attach_mode": AttachModeField(nullable=True),
    })

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop("attach_mode", None)

    @property
    def is_volume(self):
        return self.destination_type == "volume"

    @property
    def is_root(self):
        return self.boot_index == 0

    def get_connection_info(self):
        return json.loads(self.connection_info) if self.connection_info else None

    def set_connection_info(self, info):
        self.connection_info = json.dumps(info) if info is not None else None

    @classmethod
    def _from_row(cls, context, row):
        return cls(context)._refresh(row)

    @classmethod
    @base.remotable
    def get_by_volume_and_instance(cls, context, volume_id, instance_uuid):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.bdm_get_by_volume_and_instance(
            volume_id, instance_uuid))

    @classmethod
    @base.remotable
    def abandon_reservation(cls, context, instance_uuid, bdm_uuid):
        """Give up on record ``bdm_uuid`` of ``instance_uuid``, whose reserve
        got no answer: destroy it if it was made, and have any later
        creation of it refused (``ReservationAbandoned``).  True when a
        record was destroyed (``db.api.bdm_abandon_reservation``)."""
        from volattach.db import api as db_api
        return db_api.bdm_abandon_reservation(instance_uuid, bdm_uuid)

    @base.remotable
    def create(self):
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create", reason="already created")
        self._refresh(db_api.bdm_create(self._create_values()))

    @base.remotable
    def create_if_none_added(self, known_ids):
        """Create this mapping unless its instance has one whose id is not in
        ``known_ids`` (added since the caller listed them).  True when
        created; False, with nothing written, otherwise."""
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create", reason="already created")
        row = db_api.bdm_create_unless_new_mappings(self._create_values(), known_ids)
        if row is None:
            return False
        self._refresh(row)
        return True

    def _create_values(self):
        values = {n: getattr(self, n) for n in self.obj_what_changed() if n != "id"}
        for name in ("delete_on_termination", "no_device"):
            values.setdefault(name, False)
        return values

    def _changes(self):
        """The changed fields a save writes (never the identity)."""
        return {n: getattr(self, n) for n in self.obj_what_changed()
                if n not in ("id", "uuid", "created_at")}

    @base.remotable
    def save(self):
        from volattach.db import api as db_api
        values = self._changes()
        if values:
            self._refresh(db_api.bdm_update_returning(self.id, values))

    @base.remotable
    def save_if_attachment(self, attachment_id):
        """``save`` only while the record holds ``attachment_id`` (what the
        caller read before changing it): True when saved; False when a
        concurrent swap or offload moved it to another attachment, and then
        this object is what the record holds now, its changes dropped.
        ``BDMNotFound`` when a detach or a delete took the record."""
        from volattach.db import api as db_api
        saved, row = db_api.bdm_update_if_attachment(
            self.id, attachment_id, self._changes())
        self._refresh(row)
        return saved

    @base.remotable
    def destroy(self):
        from volattach.db import api as db_api
        db_api.bdm_destroy(self.id)

    @base.remotable
    def destroy_if_attachment(self, attachment_id):
        """Destroy this mapping only while it holds ``attachment_id``: True
        when it is gone (now or before); False when it holds another
        attachment, and then this object is what the record holds now
        (see ``db.api.bdm_destroy_if_attachment``)."""
        from volattach.db import api as db_api
        row = db_api.bdm_destroy_if_attachment(self.id, attachment_id)
        if row is None:
            return True
        self._refresh(row)
        return False

    def _refresh(self, row):
        base.fill(self, row)
        if self.attach_mode is None and self.destination_type == "volume":
            self.attach_mode = DEFAULT_ATTACH_MODE
            self.obj_reset_changes(["attach_mode"])
        return self


@base.VolattachObjectRegistry.register
class BlockDeviceMappingList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    # Version 1.1: BlockDeviceMapping 1.1
    # Version 1.2: BlockDeviceMapping 1.2
    # Version 1.3: BlockDeviceMapping 1.3
    # Version 1.4: BlockDeviceMapping 1.4
    # Version 1.5: BlockDeviceMapping 1.5
    VERSION = "1.5"

    fields = {"objects": fields.ListOfObjectsField("BlockDeviceMapping")}

    @classmethod
    @base.remotable
    def get_by_instance_uuid(cls, context, instance_uuid):
        from volattach.db import api as db_api
        return cls._from_rows(context, db_api.bdm_get_by_instance_uuids([instance_uuid]))

    @classmethod
    @base.remotable
    def get_by_instance_uuids(cls, context, instance_uuids):
        from volattach.db import api as db_api
        return cls._from_rows(context, db_api.bdm_get_by_instance_uuids(instance_uuids))

    @classmethod
    @base.remotable
    def get_by_volume(cls, context, volume_id):
        from volattach.db import api as db_api
        return cls._from_rows(context, db_api.bdm_get_by_volume(volume_id))

    @classmethod
    def _from_rows(cls, context, rows):
        return cls(context, objects=[BlockDeviceMapping._from_row(context, r) for r in rows])

    def volumes(self):
        return [b for b in self.objects if b.is_volume]


def volume_attachment_rows(instance_uuid):
    """``(project_id, rows)``: a server's project and its volume mappings as
    read-only rows (the attributes of a mapping that the attachment list
    shows, ``db.api.instance_volume_attachments``), not objects.

    For the compute API's GET os-volume_attachments, which only renders
    them: building an Instance and a BlockDeviceMapping per row cost more
    than the database read.  InstanceNotFound when there is no such server."""
    from volattach.db import api as db_api
    return db_api.instance_volume_attachments(instance_uuid)
