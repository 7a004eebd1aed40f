"""KeyPair and KeyPairList: a user's public keys by name (os-keypairs), as
the API imports, generates, lists, shows and deletes them and checks a
server's ``key_name``."""
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception


@base.VolattachObjectRegistry.register
class KeyPair(base.VolattachPersistentObject, base.VolattachObject,
              ovo_base.VersionedObjectDictCompat):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "name": fields.StringField(),
        "user_id": fields.StringField(),
        "fingerprint": fields.StringField(nullable=True),
        "public_key": fields.StringField(nullable=True),
        "type": fields.StringField(),
    })

    @classmethod
    def _from_row(cls, context, row):
        return base.fill(cls(context), row)

    @base.remotable
    def create(self):
        """Store this key pair; KeyPairExists when its user has one by
        that name."""
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create",
                                              reason="already created")
        values = {n: getattr(self, n) for n in self.obj_what_changed()}
        base.fill(self, db_api.key_pair_create(values))
        self.obj_reset_changes()

    @classmethod
    @base.remotable
    def get_by_name(cls, context, user_id, name):
        """KeypairNotFound unless ``user_id`` has a key pair ``name``."""
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.key_pair_get(user_id, name))

    @classmethod
    @base.remotable
    def destroy_by_name(cls, context, user_id, name):
        """KeypairNotFound unless ``user_id`` has a key pair ``name``."""
        from volattach.db import api as db_api
        db_api.key_pair_destroy(user_id, name)


@base.VolattachObjectRegistry.register
class KeyPairList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {"objects": fields.ListOfObjectsField("KeyPair")}

    @classmethod
    @base.remotable
    def get_by_user(cls, context, user_id):
        """The user's key pairs in name order."""
        from volattach.db import api as db_api
        return cls(context, objects=[
            KeyPair._from_row(context, r)
            for r in db_api.key_pair_get_all_by_user(user_id)])
