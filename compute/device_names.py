"""Guest device names for the disks of a new server (assigned at create time,
before the server is on any host; volume attaches later ask the compute)."""
from volattach.compute.virt.fake import device_suffix

ROOT_DEVICE = "/dev/vda"


def assign(bdm_dicts, prefix="/dev/vd"):
    """Fill ``device_name`` of every mapping that has none: the boot disk is
    /dev/vda, the others take the next free names in order."""
    used = {b["device_name"] for b in bdm_dicts if b.get("device_name")}
    for bdm in sorted(bdm_dicts, key=lambda b: (b.get("boot_index") is None
                                                or b.get("boot_index") < 0,
                                                b.get("boot_index") or 0)):
        if bdm.get("device_name"):
            continue
        if bdm.get("boot_index") == 0 and ROOT_DEVICE not in used:
            bdm["device_name"] = ROOT_DEVICE
        else:
            index = 1
            while prefix + device_suffix(index) in used:
                index += 1
            bdm["device_name"] = prefix + device_suffix(index)
        used.add(bdm["device_name"])
    return bdm_dicts
