"""InstanceExternalEvent: one event another service posted about a server
(``POST /os-server-external-events``), as it travels from the API to the
compute that owns the server (compute RPC 1.11) or to the conductors
(``volume-reimaged``, conductor task API 1.9).  Nothing in it is stored.

``data`` carries what the receiver needs and may not fetch itself: a
compute makes no volume-service calls, so a ``volume-extended`` event
brings the volume's new size (``data["new_size"]``, GiB, read by the API).
"""
from oslo_versionedobjects import fields

from volattach.objects import base

# by the microversion that brought them (Nova's names)
NETWORK_EVENTS = ("network-changed", "network-vif-plugged",
                  "network-vif-unplugged", "network-vif-deleted")
VOLUME_EXTENDED = "volume-extended"
POWER_UPDATE = "power-update"
ACCELERATOR_REQUEST_BOUND = "accelerator-request-bound"
VOLUME_REIMAGED = "volume-reimaged"
EVENT_NAMES = NETWORK_EVENTS + (VOLUME_EXTENDED, POWER_UPDATE,
                                ACCELERATOR_REQUEST_BOUND, VOLUME_REIMAGED)
EVENT_STATUSES = ("failed", "completed", "in-progress")
# the events whose ``tag`` names what they are about (Nova's TAG_REQUIRED)
TAG_REQUIRED = (VOLUME_EXTENDED, POWER_UPDATE, ACCELERATOR_REQUEST_BOUND)
# power-update's tags
POWER_ON = "POWER_ON"
POWER_OFF = "POWER_OFF"


@base.VolattachObjectRegistry.register
class InstanceExternalEvent(base.VolattachObject):
    # Version 1.0: Initial version: the events of Nova's 1.5
    VERSION = "1.0"

    fields = {
        "instance_uuid": fields.UUIDField(),
        "name": fields.EnumField(valid_values=EVENT_NAMES),
        "status": fields.EnumField(valid_values=EVENT_STATUSES),
        "tag": fields.StringField(nullable=True),
        "data": fields.DictOfStringsField(default={}),
    }

    @property
    def key(self):
        return "%s-%s" % (self.name, self.tag) if self.tag else self.name
