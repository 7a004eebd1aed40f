"""Aggregate and AggregateList: host aggregates (os-aggregates), their
hosts and metadata; the ``availability_zone`` key of the metadata is the
zone of the aggregate's hosts (``volattach.availability_zones``).  The
checks that keep a host in one zone run in the database layer, in the
transaction that writes (``db.api.aggregates``)."""
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception


@base.VolattachObjectRegistry.register
class Aggregate(base.VolattachPersistentObject, base.VolattachObject,
                ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "name": fields.StringField(),
        "hosts": fields.ListOfStringsField(default=[]),
        "metadata": fields.DictOfStringsField(default={}),
    })

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    def _refresh(self, row):
        base.fill(self, row)
        self.obj_reset_changes()
        return self

    @property
    def availability_zone(self):
        return self.metadata.get("availability_zone")

    @base.remotable
    def create(self):
        """AggregateNameExists when the name is taken."""
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create",
                                              reason="already created")
        metadata = self.metadata if self.obj_attr_is_set("metadata") else {}
        self._refresh(db_api.aggregate_create(self.name, metadata))

    @base.remotable
    def update(self, name=None, metadata=None, action="update"):
        """Rename and/or change metadata (None deletes a key); a new zone is
        refused with the exception of ``action`` ("update": the PUT,
        "update_meta": set_metadata)."""
        from volattach.db import api as db_api
        error = (exception.InvalidAggregateActionUpdateMeta
                 if action == "update_meta"
                 else exception.InvalidAggregateActionUpdate)
        self._refresh(db_api.aggregate_update(self.id, name, metadata, error))

    @base.remotable
    def add_host(self, host):
        from volattach.db import api as db_api
        self._refresh(db_api.aggregate_host_add(self.id, host))

    @base.remotable
    def delete_host(self, host):
        from volattach.db import api as db_api
        self._refresh(db_api.aggregate_host_delete(self.id, host))

    @base.remotable
    def destroy(self):
        from volattach.db import api as db_api
        db_api.aggregate_destroy(self.id)

    @classmethod
    @base.remotable
    def get_by_id(cls, context, aggregate_id):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.aggregate_get(aggregate_id))


@base.VolattachObjectRegistry.register
class AggregateList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("Aggregate")}

    @classmethod
    @base.remotable
    def get_all(cls, context):
        from volattach.db import api as db_api
        return cls(context, objects=[Aggregate._from_row(context, r)
                                     for r in db_api.aggregate_get_all()])
