"""Guest device names (the kernel's disk naming, /dev/vda, /dev/vdb, ...):
the names of a new server's disks, assigned by the API at create time
before the server is on any host (and by the conductor for an unshelve
when the receiving compute is too old to name them itself), and the
suffixes the virt drivers use when a compute names an attached volume."""

ROOT_DEVICE = "/dev/vda"

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def device_suffix(index):
    """0 -> a, 25 -> z, 26 -> aa (the kernel's disk naming)."""
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = _LETTERS[rem] + name
    return name


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
