"""Volume drivers of the libvirt driver, one module per
``driver_volume_type`` (as Nova's ``nova/virt/libvirt/volume/``):
``nbd`` (the file backend's exports), ``rbd`` (Ceph) and ``iscsi``
(QEMU's libiscsi).  Each turns a connection_info into the ``<disk>``
QEMU opens itself (``base``) and prepares the host on connect.  An
unknown type is a VirtDriverError that names it (the attach fails and
rolls back; its instance action event says why)."""
from volattach.compute.virt.libvirt.volume import base
from volattach.compute.virt.libvirt.volume import iscsi
from volattach.compute.virt.libvirt.volume import nbd
from volattach.compute.virt.libvirt.volume import rbd
from volattach import exception

connection_data = base.connection_data
disk_alias = base.disk_alias
VolumeDriver = base.VolumeDriver
NBDVolumeDriver = nbd.NBDVolumeDriver
RBDVolumeDriver = rbd.RBDVolumeDriver
ISCSIVolumeDriver = iscsi.ISCSIVolumeDriver

VOLUME_DRIVERS = {
    "nbd": NBDVolumeDriver,
    "rbd": RBDVolumeDriver,
    "iscsi": ISCSIVolumeDriver,
}


def volume_driver(connection_info, host=None):
    """The driver of ``connection_info``'s ``driver_volume_type``;
    ``host``: the libvirt ``Host`` (needed to connect rbd volumes)."""
    kind = (connection_info or {}).get("driver_volume_type")
    cls = VOLUME_DRIVERS.get(kind)
    if cls is None:
        raise exception.VirtDriverError(
            operation="connect",
            reason="volume type %r is not supported by the libvirt driver "
                   "(supported: %s)" % (kind, ", ".join(sorted(
                       VOLUME_DRIVERS))))
    return cls(host)
