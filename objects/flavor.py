"""Flavor: the size of a server (read-only here; seeded by the migration)."""
from oslo_versionedobjects import fields

from volattach.objects import base


@base.VolattachObjectRegistry.register
class Flavor(base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {
        "id": fields.IntegerField(),
        "flavorid": fields.StringField(),
        "name": fields.StringField(),
        "vcpus": fields.IntegerField(),
        "memory_mb": fields.IntegerField(),
        "root_gb": fields.IntegerField(),
        "ephemeral_gb": fields.IntegerField(),
        "swap": fields.IntegerField(),
        "rxtx_factor": fields.FloatField(),
        "is_public": fields.BooleanField(),
        "disabled": fields.BooleanField(),
        "description": fields.StringField(nullable=True),
    }

    @classmethod
    def _from_row(cls, context, row):
        obj = cls(context)
        return base.fill(obj, row)

    @classmethod
    @base.remotable
    def get_by_flavor_id(cls, context, flavorid):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.flavor_get_by_flavor_id(flavorid))

    @classmethod
    @base.remotable
    def get_all(cls, context):
        from volattach.db import api as db_api
        return [cls._from_row(context, r) for r in db_api.flavor_get_all()]
