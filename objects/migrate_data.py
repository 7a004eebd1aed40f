"""LiveMigrateData: what a live migration's destination tells its source
(the result of ``pre_live_migration``, the argument of ``live_migration``,
compute RPC 1.8), as Nova's LibvirtLiveMigrateData does: how the source's
hypervisor reaches the destination's, and where the guest's files and
volumes are there.  Nothing in it is stored."""
from oslo_versionedobjects import fields

from volattach.objects import base


@base.VolattachObjectRegistry.register
class LiveMigrateData(base.VolattachObject):
    # Version 1.0: Initial version
    VERSION = "1.0"

    fields = {
        # the hypervisor URI the source's libvirt migrates the guest to
        "connect_uri": fields.StringField(nullable=True),
        # the destination address of the migration stream (None: the
        # hypervisor's choice)
        "target_connect_addr": fields.StringField(nullable=True),
        # the guest's directory on the destination
        "instance_dir": fields.StringField(nullable=True),
        # guest device (vdb...) -> the volume's <disk> on the destination,
        # with the connection of its new attachment
        "disks": fields.DictOfStringsField(default={}),
    }
