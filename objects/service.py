"""Service: one running daemon (API, conductor, compute) in the services table.

``SERVICE_VERSION`` is the integer every daemon writes into its row.  Bump it
whenever a daemon's behaviour changes in a way another daemon must know
about (a compute RPC version, a new feature), and add a line to
``SERVICE_VERSION_HISTORY``: the API and conductor map the minimum version of
the running computes to the compute RPC version they may send.
tests/unit/test_versions.py fails when the compute RPC API changes without a
new history entry.
"""
import json

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from volattach.objects import base
from volattach import exception

SERVICE_VERSION = 14

SERVICE_VERSION_HISTORY = (
    # Version 0: no service version reported (never sent by volattach)
    {"compute_rpc": "1.0"},
    # Version 1: initial: compute RPC 1.0 (reserve_block_device_name,
    # attach_volume, detach_volume, build_and_run_instance,
    # terminate_instance)
    {"compute_rpc": "1.0"},
    # Version 2: compute RPC 1.1 (swap_volume, assign_device_names,
    # pause_instance, unpause_instance)
    {"compute_rpc": "1.1"},
    # Version 3: compute RPC 1.2 (read-only attachments: attach_volume
    # carries attach_mode; BlockDeviceMapping 1.1).  The API refuses a
    # read-only attach to a server on an older compute (409).
    {"compute_rpc": "1.2"},
    # Version 4: compute RPC 1.3 (live migration: pre_live_migration,
    # live_migration, post_live_migration_at_destination,
    # post_live_migration_at_source, rollback_live_migration_at_destination)
    {"compute_rpc": "1.3"},
    # Version 5: compute RPC 1.4 (reserve_block_device_name takes the
    # server's mappings and creates the BDM in one call back to the
    # conductor: BlockDeviceMapping 1.2's create_if_none_added)
    {"compute_rpc": "1.4"},
    # Version 6: compute RPC 1.5 (get_console_output)
    {"compute_rpc": "1.5"},
    # Version 7: compute RPC 1.6 (suspend_instance, resume_instance,
    # reboot_instance)
    {"compute_rpc": "1.6"},
    # Version 8: compute RPC 1.7 (rebuild_instance)
    {"compute_rpc": "1.7"},
    # Version 9: compute RPC 1.8 (pre_live_migration returns the
    # destination's LiveMigrateData; live_migration takes it)
    {"compute_rpc": "1.8"},
    # Version 10: compute RPC 1.9 (reserve_block_device_name creates the
    # record under the conductor's bdm_uuid)
    {"compute_rpc": "1.9"},
    # Version 11: a compute reports the images its driver can boot in its
    # row (Service 1.1 ``images``) when it registers and on its periodic
    # state report; the API checks an imageRef against them
    # (api/compute/images.py).  Same compute RPC.
    {"compute_rpc": "1.9"},
    # Version 12: compute RPC 1.10 (a HARD reboot_instance and
    # power_on_instance take the server's mappings with refreshed
    # connections and plug the disks again from them)
    {"compute_rpc": "1.10"},
    # Version 13: compute RPC 1.11 (external_instance_event: the events of
    # POST /os-server-external-events; volume-extended grows the disk)
    {"compute_rpc": "1.11"},
    # Version 14: a compute takes the key of an rbd connection from its
    # ``keyring`` (a volume's own read-only Ceph user) into a private,
    # ephemeral libvirt secret; an older one reads keyring files only.
    # The conductor refuses such a connection for an older compute (409)
    # and the scheduler places servers with them on new ones.  Same
    # compute RPC (1.11: version 13's).
    {"compute_rpc": "1.11"},
)

# The first service version whose computes suspend, resume and reboot.
SUSPEND_REBOOT_SERVICE_VERSION = 7
# The first service version whose computes rebuild.
REBUILD_SERVICE_VERSION = 8

# The first service version whose computes honour attach_mode "ro".
READ_ONLY_ATTACH_SERVICE_VERSION = 3
# The first service version whose computes can live-migrate.
LIVE_MIGRATION_SERVICE_VERSION = 4
# The first service version whose computes report the images they can boot.
IMAGES_REPORT_SERVICE_VERSION = 11
# The first service version whose computes reconnect the volumes on a hard
# reboot and a start (compute RPC 1.10); an older one reboots with what it had.
REBOOT_RECONNECT_SERVICE_VERSION = 12
# The first service version whose computes take external events (compute
# RPC 1.11); the API answers an event for a server on an older one 422.
EXTERNAL_EVENTS_SERVICE_VERSION = 13
# The first service version whose computes take an rbd key from the
# connection's ``keyring`` (read-only rbd attachments).
RBD_KEYRING_SERVICE_VERSION = 14


def compute_rpc_for_service_version(version):
    if version is None or version < 0:
        return None
    version = min(version, len(SERVICE_VERSION_HISTORY) - 1)
    return SERVICE_VERSION_HISTORY[version]["compute_rpc"]


@base.VolattachObjectRegistry.register
class Service(base.VolattachPersistentObject, base.VolattachObject):
    # Version 1.0: Initial version
    # Version 1.1: images (the image ids a compute's driver can boot)
    VERSION = "1.1"

    fields = dict(base.VolattachPersistentObject.fields, **{
        "id": fields.IntegerField(),
        "uuid": fields.UUIDField(),
        "host": fields.StringField(),
        "binary": fields.StringField(),
        "topic": fields.StringField(nullable=True),
        "report_count": fields.IntegerField(),
        "disabled": fields.BooleanField(),
        "disabled_reason": fields.StringField(nullable=True),
        "forced_down": fields.BooleanField(),
        "version": fields.IntegerField(),
        "rpc_version": fields.StringField(nullable=True),
        "connector": base.JSONField(nullable=True),
        "images": fields.ListOfStringsField(nullable=True),
        "last_seen_up": fields.DateTimeField(nullable=True),
    })

    # the JSON text columns
    _JSON_COLUMNS = ("connector", "images")

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop("images", None)

    @property
    def reports_images(self):
        """Whether this compute reports the images it can boot: a compute
        of service version IMAGES_REPORT_SERVICE_VERSION or later that
        wrote its list (``images`` is then the whole truth about it)."""
        return (self.obj_attr_is_set("images") and self.images is not None
                and (self.version or 0) >= IMAGES_REPORT_SERVICE_VERSION)

    @classmethod
    def _from_row(cls, context, row):
        obj = base.fill(cls(context), row, skip=cls._JSON_COLUMNS)
        for name in cls._JSON_COLUMNS:
            setattr(obj, name, json.loads(row[name]) if row.get(name) else None)
        obj.obj_reset_changes()
        return obj

    def _values(self, names):
        values = {n: getattr(self, n) for n in names}
        for name in self._JSON_COLUMNS:
            if name in values:
                values[name] = (json.dumps(values[name])
                                if values[name] is not None else None)
        return values

    @classmethod
    @base.remotable
    def get_by_host_and_binary(cls, context, host, binary):
        from volattach.db import api as db_api
        row = db_api.service_get_by_host_and_binary(host, binary)
        return cls._from_row(context, row) if row else None

    @classmethod
    @base.remotable
    def get_by_id(cls, context, service_id):
        from volattach.db import api as db_api
        return cls._from_row(context, db_api.service_get(service_id))

    @classmethod
    @base.remotable
    def get_minimum_version(cls, context, binary):
        from volattach.db import api as db_api
        return db_api.service_get_minimum_version(binary)

    @base.remotable
    def create(self):
        from volattach.db import api as db_api
        if self.obj_attr_is_set("id"):
            raise exception.ObjectActionError(action="create", reason="already created")
        values = self._values([n for n in self.obj_what_changed() if n != "id"])
        values.setdefault("report_count", 0)
        values.setdefault("disabled", False)
        values.setdefault("forced_down", False)
        self._refresh(db_api.service_create(values))

    @base.remotable
    def save(self):
        from volattach.db import api as db_api
        names = [n for n in self.obj_what_changed() if n not in ("id", "created_at")]
        if names:
            self._refresh(db_api.service_update(self.id, self._values(names)))

    @base.remotable
    def heartbeat(self):
        from volattach.db import api as db_api
        db_api.service_heartbeat(self.id)

    @base.remotable
    def destroy(self):
        from volattach.db import api as db_api
        db_api.service_destroy(self.id)

    def _refresh(self, row):
        fresh = self._from_row(self._context, row)
        for name in self.fields:
            setattr(self, name, getattr(fresh, name))
        self.obj_reset_changes()


@base.VolattachObjectRegistry.register
class ServiceList(base.ObjectListBase, base.VolattachObject):
    # Version 1.0: Initial version
    # Version 1.1: Service 1.1
    VERSION = "1.1"

    fields = {"objects": fields.ListOfObjectsField("Service")}

    @classmethod
    @base.remotable
    def get_all(cls, context, binary=None, host=None):
        from volattach.db import api as db_api
        rows = db_api.service_get_all(binary=binary, host=host)
        return cls(context, objects=[Service._from_row(context, r) for r in rows])
