"""What a guest boots from: its kernel, initramfs, command line and root
disk, from ``[libvirt] image_dir`` or from Glance.

An imageRef that names a directory of ``[libvirt] image_dir`` boots as it
always did: direct kernel boot of its ``kernel`` and ``initramfs`` with a
small sparse raw root disk.  Otherwise, when Glance is configured
(``[glance]``), the image comes from Glance through the host's image cache
(``imagecache.py``): its ``disk_format`` must be raw or qcow2, and the root
disk is a qcow2 overlay on the cached image, as Nova's ``qcow2`` image
backend makes it.  An image with ``kernel_id`` and ``ramdisk_id`` (Nova's
AMI-style properties: images of disk_format aki and ari) boots those by
direct kernel boot with its ``os_command_line``; one without boots from its
disk.  The ids a guest's files come from are written to ``base_images`` in
its directory, for the cache manager, and what it boots from to
``boot.json``: a later domain definition of the same guest (a hard reboot,
a power on) boots the same files again without asking Glance, so it does
not depend on Glance being up or on the image still being there.
"""
import collections
import json
import os
import subprocess

from volattach.compute.virt.libvirt import images
from volattach.compute.virt.libvirt import imagecache
from volattach import exception

ROOT_DISK_BYTES = 1024 * 1024
DEFAULT_CMDLINE = "console=ttyS0"
BASE_IMAGES_FILE = "base_images"
BOOT_FILE = "boot.json"

BootSource = collections.namedtuple(
    "BootSource", "kernel initrd cmdline root root_format")


def _fail(image_ref, reason):
    raise exception.VirtDriverError(operation="boot image %s" % image_ref,
                                    reason=reason)


def from_image_dir(image_dir, idir):
    cmdline = DEFAULT_CMDLINE
    if os.path.exists(os.path.join(image_dir, "cmdline")):
        with open(os.path.join(image_dir, "cmdline")) as f:
            cmdline = f.read().strip()
    root = os.path.join(idir, "disk")
    if not os.path.exists(root):
        with open(root, "wb") as f:
            f.truncate(ROOT_DISK_BYTES)
    return BootSource(os.path.join(image_dir, "kernel"),
                      os.path.join(image_dir, "initramfs"), cmdline, root,
                      "raw")


def _show(client, image_ref):
    from volattach.image import glance
    try:
        return client.show(image_ref)
    except glance.ImageNotFound:
        _fail(image_ref, "image %s not found in Glance" % image_ref)
    except glance.ImageServiceError as exc:
        _fail(image_ref, str(exc))


def _booted_before(idir):
    """The BootSource ``boot.json`` recorded, while its files are there."""
    try:
        with open(os.path.join(idir, BOOT_FILE)) as f:
            source = BootSource(**json.load(f))
    except (OSError, ValueError, TypeError):
        return None
    if all(path is None or os.path.exists(path)
           for path in (source.kernel, source.initrd, source.root)):
        return source
    return None


def from_glance(image_ref, idir, client, cache):
    source = _booted_before(idir)
    if source is not None:
        return source
    image = _show(client, image_ref)
    fmt = image.get("disk_format")
    if fmt not in imagecache.BOOTABLE_FORMATS:
        _fail(image_ref, "its disk_format is %r: only %s can be booted"
              % (fmt, " and ".join(imagecache.BOOTABLE_FORMATS)))
    used = [image_ref]
    files = {}
    for prop, want in imagecache.KERNEL_FORMATS.items():
        ref = image.get(prop)
        if not ref:
            continue
        part = _show(client, ref)
        if part.get("disk_format") != want:
            _fail(image_ref, "its %s %s has disk_format %r, not %r"
                  % (prop, ref, part.get("disk_format"), want))
        files[prop] = cache.fetch(part)
        used.append(ref)
    base = cache.fetch(image)
    root = os.path.join(idir, "disk")
    if not os.path.exists(root):
        tmp = root + ".tmp"
        try:
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                            "-F", fmt, "-b", base, tmp],
                           check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as exc:
            _fail(image_ref, "qemu-img create of its overlay failed: %s"
                  % exc.stderr.strip())
        os.rename(tmp, root)
    with open(os.path.join(idir, BASE_IMAGES_FILE), "w") as f:
        json.dump(used, f)
    source = BootSource(files.get("kernel_id"), files.get("ramdisk_id"),
                        image.get("os_command_line") or DEFAULT_CMDLINE,
                        root, "qcow2")
    with open(os.path.join(idir, BOOT_FILE), "w") as f:
        json.dump(source._asdict(), f)
    return source


def prepare(instance, idir, client=None, cache=None):
    """The guest's ``BootSource``, its files made in ``idir``;
    ``VirtDriverError`` naming the cause when its image cannot be had."""
    image_dir = images.image_path(instance.image_ref)
    if image_dir is not None:
        return from_image_dir(image_dir, idir)
    if client is None or not instance.image_ref:
        _fail(instance.image_ref,
              "image %r not found under [libvirt] image_dir"
              % instance.image_ref)
    return from_glance(instance.image_ref, idir, client, cache)


def images_in_use(instances_path):
    """The image ids the guests of this host boot from (their
    ``base_images`` files)."""
    used = set()
    try:
        names = os.listdir(instances_path)
    except FileNotFoundError:
        return used
    for name in names:
        try:
            with open(os.path.join(instances_path, name,
                                   BASE_IMAGES_FILE)) as f:
                used.update(json.load(f))
        except (OSError, ValueError):
            continue
    return used
