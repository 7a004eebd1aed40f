"""The compute API facade: what the HTTP handlers call (runs in the API
process).

It checks what can be checked cheaply (existence, ownership, states, locks,
the volume's attachability), records the instance action, and hands
workflows to the conductor: called for microversions below 2.101, cast from
2.101.  It never waits on a compute.  One module per resource, as the
handlers in ``volattach.api.handlers``; ``API`` composes them into the one
object the handlers hold.
"""
from volattach.api.compute.external_events import ExternalEventsAPI
from volattach.api.compute.aggregates import AggregatesAPI
from volattach.api.compute.flavors_services import FlavorsAPI
from volattach.api.compute.flavors_services import ServicesAPI
from volattach.api.compute.instance_actions import InstanceActionsAPI
from volattach.api.compute.keypairs import KeypairsAPI
from volattach.api.compute.migrations import MigrationsAPI
from volattach.api.compute.quotas import QuotasAPI
from volattach.api.compute.server_actions import ServerActionsAPI
from volattach.api.compute.server_groups import ServerGroupsAPI
from volattach.api.compute.service_updates import ServiceUpdatesAPI
from volattach.api.compute.server_tags_metadata import ServerTagsMetadataAPI
from volattach.api.compute.servers import ServersAPI
from volattach.api.compute.usage import UsageAPI
from volattach.api.compute.volume_attachments import VolumeAttachmentsAPI


class API(ServersAPI, VolumeAttachmentsAPI, ServerActionsAPI,
          InstanceActionsAPI, FlavorsAPI, ServicesAPI, KeypairsAPI,
          MigrationsAPI, ExternalEventsAPI, ServerGroupsAPI, AggregatesAPI,
          ServiceUpdatesAPI, UsageAPI, ServerTagsMetadataAPI, QuotasAPI):
    """The whole facade (``API(volume_api=None, compute_task_api=None)``:
    the volume client and the conductor's task API by default)."""


__all__ = ["API"]
