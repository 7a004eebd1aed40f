"""Which imageRefs a server can boot: Glance's images when an image service
is configured (``[glance]``, ``GlanceImages``), else the images the
computes report (``ReportedImages``).

With Glance, as Nova checks: an image Glance does not have, or that the
caller may not see (a private image of another project, a shared one the
caller's project did not accept), is 400 "Image X could not be found.";
one that is not ``active`` is 400 "Image X is not active."; Glance not
answering is 503.  Every compute can boot any Glance image (the libvirt
driver downloads it), so the computes report no list then.

Without an image service:  Each compute reports, in its services row, the
ids of the images its virt driver can boot (``Service.images``: the
libvirt driver's ``[libvirt] image_dir`` directories, the fake driver's
``[compute] fake_images``), when it registers and again on its periodic
state report when they changed.  The API reads those rows through objects
and never a directory of its own host: an API host of its own has none.

``ReportedImages.check`` accepts an imageRef that an up compute reports
(the conductor's scheduler then places the server on such a compute);
otherwise it answers 400 "Image X could not be found." (Nova's message),
with one exception: while an up compute reports no list (a compute older
than service version 11, ``IMAGES_REPORT_SERVICE_VERSION``, during a
rolling upgrade, or a driver that cannot tell), the imageRef is accepted
and the build decides: a compute without the image fails it, and the
server goes to ERROR with a fault naming the image (the libvirt driver's
"image ... not found under [libvirt] image_dir").  The same holds when no
compute is up at all (the build then finds no host): an API that starts
before its computes have registered refuses no valid image.

The union of what the up computes report is remembered for ``ttl``
seconds (``servicegroup.UP_CACHE_SECONDS``) to spare a services-table read
per create and rebuild of a reported image.  Every other answer comes from
a fresh read: an image a compute has just reported is never refused from
the cache, nor an image let through because of a compute that has since
reported its list.  What remains is the compute's own delay: an image put
into a compute's directory is reported at its next state report
(``report_interval``).
"""
import logging
import threading
import time

from volattach.compute import rpcapi as compute_rpcapi
from volattach import context as volattach_context
from volattach import exception
from volattach import objects
from volattach import servicegroup
from volattach.conf import CONF
from volattach.image import glance

LOG = logging.getLogger(__name__)


def _admin(context):
    return (context.elevated() if context is not None
            else volattach_context.get_admin_context())


def _not_found(image_ref):
    return exception.InvalidInput(
        message="Image %s could not be found." % image_ref)


class _Union:
    """The images reported by the up computes read at ``read_at``;
    ``complete`` when every up compute reported a list."""

    def __init__(self, images, complete, read_at):
        self.images = images
        self.complete = complete
        self.read_at = read_at

    def allows(self, image_ref):
        return image_ref in self.images or not self.complete


class ReportedImages:
    """The imageRef check of the compute API (one per facade)."""

    def __init__(self, ttl=servicegroup.UP_CACHE_SECONDS, clock=time.monotonic):
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._union = None

    def check(self, context, image_ref, host=None):
        """Raise ``InvalidInput`` (400, "Image X could not be found.") when
        no up compute can boot ``image_ref`` (see the module docstring for
        when any is accepted); with ``host`` (a rebuild, which stays on the
        server's host), when that host's compute reports its images
        without this one."""
        if not image_ref:
            return
        if host is not None:
            service = objects.Service.get_by_host_and_binary(
                _admin(context), host, compute_rpcapi.BINARY)
            if (service is not None and service.reports_images
                    and image_ref not in service.images):
                raise _not_found(image_ref)
        union = self._union
        if (union is not None and self._clock() - union.read_at < self.ttl
                and image_ref in union.images):
            return
        union = self._read(context)
        if not union.allows(image_ref):
            raise _not_found(image_ref)

    def _read(self, context):
        now = self._clock()
        images, up, complete = set(), 0, True
        for service in objects.ServiceList.get_all(_admin(context),
                                                   binary=compute_rpcapi.BINARY):
            if not servicegroup.is_up(service):
                continue
            up += 1
            if service.reports_images:
                images.update(service.images)
            else:
                complete = False
        union = _Union(frozenset(images), complete and up > 0, now)
        with self._lock:
            self._union = union
        return union

    def clear(self):
        with self._lock:
            self._union = None


class GlanceImages:
    """The imageRef check of the compute API when Glance is configured."""

    def __init__(self, client=None):
        self.client = client or glance.GlanceClient(CONF)

    def check(self, context, image_ref, host=None):
        if not image_ref:
            return
        try:
            image = self.client.show(image_ref)
            member = None
            if (context is not None and not context.is_admin
                    and image.get("visibility") == "shared"
                    and image.get("owner") != context.project_id):
                member = self.client.member_status(image_ref,
                                                   context.project_id)
        except glance.ImageNotFound:
            raise _not_found(image_ref)
        except glance.ImageServiceError as exc:
            LOG.warning("imageRef %s: %s", image_ref, exc)
            raise exception.ImageServiceUnavailable()
        if context is not None and not glance.visible_to(
                image, context.project_id, context.is_admin, member):
            raise _not_found(image_ref)
        if image.get("status") != "active":
            raise exception.InvalidInput(
                message="Image %s is not active." % image_ref)

    def clear(self):
        pass


def image_check():
    """The check this configuration calls for."""
    if glance.configured(CONF):
        return GlanceImages()
    return ReportedImages()
