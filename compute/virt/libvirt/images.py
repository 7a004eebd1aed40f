"""Images without an image service: every directory ``<image id>/`` under
``[libvirt] image_dir`` holding ``kernel`` (and ``initramfs``, optionally
``cmdline``) is a bootable image; see tools/build-test-image.sh.  The
compute reports ``list_images()`` in its services row (the compute API
checks imageRefs against what the computes report, never a directory of
its own host)."""
import os

from volattach.conf import CONF


def image_path(image_id, image_dir=None):
    """The directory of ``image_id``, or None when there is no such
    image."""
    base = image_dir or CONF.libvirt.image_dir
    if (not base or not image_id or "/" in image_id
            or image_id.startswith(".")):
        return None
    path = os.path.join(base, image_id)
    if os.path.isfile(os.path.join(path, "kernel")):
        return path
    return None


def list_images(image_dir=None):
    """The ids of the bootable images under ``image_dir`` (default
    ``[libvirt] image_dir``), sorted: none when it is unset or missing.
    One listdir and a stat per entry (the compute calls it on every state
    report); another OSError (a directory it may not read) is raised."""
    base = image_dir or CONF.libvirt.image_dir
    if not base:
        return []
    try:
        names = os.listdir(base)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n for n in names if image_path(n, base) is not None)
