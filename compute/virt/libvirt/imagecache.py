"""The compute's cache of Glance images, as Nova's libvirt image cache.

Images are downloaded once per host into ``[libvirt] instances_path /
[image_cache] subdirectory_name`` (``_base``), one file per image id, and
guests boot from a qcow2 overlay on them.  A download streams into a
temporary file beside its final name while hashing it with the image's
``os_hash_algo``; only when every byte arrived and the hash is
``os_hash_value`` is the file renamed into place, so a wrong hash, a
download that stops halfway, a full disk or an image of 0 bytes leave
nothing in the cache.  One lock per image id: two builds of one image on
one compute download it once.  The cache survives a restart (it is a
directory), and ``remove_unused`` removes the images no guest of this host
uses once they were last used ``remove_unused_original_minimum_age_seconds``
ago (Nova's image cache manager).
"""
import hashlib
import logging
import os
import threading
import time
import uuid

from volattach import exception

LOG = logging.getLogger(__name__)

BOOTABLE_FORMATS = ("raw", "qcow2")
KERNEL_FORMATS = {"kernel_id": "aki", "ramdisk_id": "ari"}
PART = ".part-"


class ImageCache:
    def __init__(self, base_dir, client, clock=time.time):
        self.base_dir = base_dir
        self.client = client
        self._clock = clock
        self._locks = {}
        self._guard = threading.Lock()

    def _lock(self, image_id):
        with self._guard:
            return self._locks.setdefault(image_id, threading.Lock())

    def path(self, image_id):
        return os.path.join(self.base_dir, image_id)

    def fetch(self, image):
        """The cached file of ``image`` (Glance's record of it),
        downloaded first when it is not cached; ``VirtDriverError`` naming
        the cause when it cannot be."""
        image_id = image["id"]
        path = self.path(image_id)
        with self._lock(image_id):
            if os.path.exists(path):
                os.utime(path)      # last used: the cache manager's age
                return path
            os.makedirs(self.base_dir, exist_ok=True)
            part = "%s%s%s" % (path, PART, uuid.uuid4().hex[:8])
            try:
                self._download(image, part)
                os.rename(part, path)
            except BaseException:
                try:
                    os.unlink(part)
                except FileNotFoundError:
                    pass
                raise
            LOG.info("image %s downloaded into the cache (%d bytes)",
                     image_id, os.path.getsize(path))
            return path

    def _download(self, image, part):
        from volattach.image import glance

        image_id = image["id"]

        def fail(reason):
            raise exception.VirtDriverError(
                operation="download image %s" % image_id, reason=reason)

        if image.get("status") != "active":
            fail("the image is %s, not active" % image.get("status"))
        size = image.get("size")
        if not size:
            fail("the image has no data (0 bytes)")
        algo, expected = image.get("os_hash_algo"), image.get("os_hash_value")
        try:
            hasher = hashlib.new(algo) if algo else None
        except ValueError:
            fail("unknown os_hash_algo %r" % algo)
        received = 0
        try:
            with open(part, "wb") as f:
                for chunk in self.client.download(image_id):
                    f.write(chunk)
                    received += len(chunk)
                    if hasher is not None:
                        hasher.update(chunk)
                f.flush()
                os.fsync(f.fileno())
        except glance.ImageServiceError as exc:
            fail(str(exc))
        except OSError as exc:
            fail("cannot write %s: %s" % (part, exc.strerror or exc))
        if received != size:
            fail("received %d of its %d bytes" % (received, size))
        if hasher is not None and hasher.hexdigest() != expected:
            fail("its %s hash is %s, Glance's os_hash_value is %s"
                 % (algo, hasher.hexdigest(), expected))

    def remove_unused(self, in_use, max_age):
        """Remove the cached images not in ``in_use`` (ids) last used more
        than ``max_age`` seconds ago, and temporary files of downloads
        that died with their process as old; the ids removed."""
        removed = []
        try:
            names = os.listdir(self.base_dir)
        except FileNotFoundError:
            return removed
        now = self._clock()
        for name in names:
            image_id = name.split(PART, 1)[0]
            if image_id in in_use and PART not in name:
                continue
            path = os.path.join(self.base_dir, name)
            with self._lock(image_id):
                try:
                    if now - os.stat(path).st_mtime < max_age:
                        continue
                    os.unlink(path)
                except FileNotFoundError:
                    continue
            if PART not in name:
                removed.append(image_id)
                LOG.info("image %s removed from the cache: unused", image_id)
        return removed
