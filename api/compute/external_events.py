"""External events (POST /os-server-external-events): what the facade does
with the events other services post about servers, as Nova's API does.

Each event is answered on its own (``code``, ``status``): 404 for a server
that does not exist, 400 for a missing ``tag`` where the event needs one,
422 for a server on no host, on a compute older than service version 13
(compute RPC 1.11) or while the compute RPC is capped below 1.11 (an older
compute still runs), or, for volume-reimaged, with no conductor that takes
conductor task API 1.9.  The accepted ones go on in one message per
destination: one cast per compute host with the events of its servers
(1,000 events of one host are one message), and one fanout cast to the
conductors with the volume-reimaged events, which wake the rebuild that
waits for them (``conductor.instance_events``).

Instance actions, as Nova records them: ``extend_volume`` for
volume-extended, ``start``/``stop`` for power-update (an unknown power tag
is logged and dropped, as Nova does); the compute records the outcome as
the action's event.  Computes make no volume-service calls: the API reads
the size of each extended volume (once per volume) and sends it with the
event; a volume it cannot read fails that event's action here.
"""
import logging

from volattach import context as volattach_context
from volattach import objects
from volattach.api.compute import base
from volattach.compute import rpcapi as compute_rpcapi
from volattach.objects import external_event as event_obj
from volattach.objects import service as service_obj

LOG = logging.getLogger(__name__)

EXTEND_VOLUME = "extend_volume"        # Nova's instance action names
POWER_ACTIONS = {event_obj.POWER_ON: "start", event_obj.POWER_OFF: "stop"}


def _failed(response, code):
    response["status"] = "failed"
    response["code"] = code


_RPCAPI = []


def shared_compute_rpcapi():
    """The process's compute RPC client of the facade (built once: it
    caches its version cap)."""
    if not _RPCAPI:
        _RPCAPI.append(compute_rpcapi.ComputeAPI())
    return _RPCAPI[0]


class ExternalEventsAPI(base.FacadeBase):

    _compute_rpcapi = None      # a test's own client

    @property
    def compute_rpcapi(self):
        return self._compute_rpcapi or shared_compute_rpcapi()

    def external_instance_event(self, context, body_events):
        """Answer and dispatch ``body_events`` (validated dicts); returns
        (the events with their code and status, whether all succeeded)."""
        admin = context.elevated()
        uuids = sorted({e["server_uuid"] for e in body_events})
        instances = {i.uuid: i for i in objects.InstanceList.get_by_filters(
            admin, {"uuids": uuids})}
        computes = {s.host: s.version or 0 for s in objects.ServiceList.get_all(
            admin, binary=compute_rpcapi.BINARY)}
        conductor_takes_events = self.compute_task_api.can_send(
            "external_instance_event")

        response_events, accepted = [], []
        for body_event in body_events:
            response = dict(body_event)
            response_events.append(response)
            event = objects.InstanceExternalEvent(
                instance_uuid=body_event["server_uuid"],
                name=body_event["name"],
                status=body_event.get("status", "completed"),
                tag=body_event.get("tag"), data={})
            instance = instances.get(event.instance_uuid)
            if instance is None:
                LOG.debug("dropping event %s for unknown server %s",
                          event.key, event.instance_uuid)
                _failed(response, 404)
            elif event.name in event_obj.TAG_REQUIRED and event.tag is None:
                LOG.debug("event %s for %s has no tag: dropped", event.name,
                          event.instance_uuid)
                _failed(response, 400)
            elif not instance.host:
                LOG.debug("no host for server %s: event %s dropped",
                          event.instance_uuid, event.key)
                _failed(response, 422)
            elif (event.name == event_obj.VOLUME_REIMAGED
                  and not conductor_takes_events):
                LOG.info("no conductor takes events yet: %s for %s dropped",
                         event.key, event.instance_uuid)
                _failed(response, 422)
            elif (event.name != event_obj.VOLUME_REIMAGED
                  and not self._takes_events(instance.host, computes)):
                LOG.info("compute %s cannot take events yet: %s for %s "
                         "dropped", instance.host, event.key,
                         event.instance_uuid)
                _failed(response, 422)
            else:
                LOG.info("creating event %s for server %s on %s", event.key,
                         event.instance_uuid, instance.host)
                response["status"] = "completed"
                response["code"] = 200
                accepted.append((event, instance, response))
        if accepted:
            self._dispatch_events(context, accepted)
        return response_events, all(r["code"] == 200 for r in response_events)

    def _takes_events(self, host, computes):
        """Whether ``host``'s compute can be sent events: its service
        version is 13 or later, and the compute RPC, capped at the oldest
        running compute (``[upgrade_levels] compute = auto``), reaches
        1.11: while a rolling upgrade still runs an older compute, no
        compute is sent events."""
        return (computes.get(host, 0)
                >= service_obj.EXTERNAL_EVENTS_SERVICE_VERSION
                and self.compute_rpcapi.can_send_version(host, "1.11"))

    def _dispatch_events(self, context, accepted):
        """Record the instance actions and send the accepted events: one
        cast per compute host, one fanout cast to the conductors."""
        sizes = self._extended_volume_sizes(context, [
            e.tag for e, _, _ in accepted
            if e.name == event_obj.VOLUME_EXTENDED])
        by_host, to_conductors = {}, []
        for event, instance, response in accepted:
            if event.name == event_obj.VOLUME_REIMAGED:
                to_conductors.append((event, response))
                continue
            if not self._start_event_action(context, event, sizes):
                continue
            instances, events, responses = by_host.setdefault(
                instance.host, ({}, [], []))
            instances[instance.uuid] = instance
            events.append(event)
            responses.append(response)
        for host, (instances, events, responses) in by_host.items():
            self._send_events(host, responses, self.compute_rpcapi.
                       external_instance_event, context,
                       list(instances.values()), events, host)
        if to_conductors:
            self._send_events("the conductors", [r for _, r in to_conductors],
                       self.compute_task_api.external_instance_event,
                       context, [e for e, _ in to_conductors])

    @staticmethod
    def _send_events(where, responses, cast, *args):
        """A cast that cannot be sent (the bus is down) fails its events
        (422) instead of the request: nothing raises."""
        try:
            cast(*args)
        except Exception as error:
            LOG.warning("events could not be sent to %s: %s", where, error)
            for response in responses:
                _failed(response, 422)

    def _extended_volume_sizes(self, context, volume_ids):
        """volume id -> its size (GiB) or the error reading it.  Read as
        the compute service (``[cinder]`` credentials, as the reconcile
        pass): the poster may be a service user of another project."""
        sizes = {}
        service = volattach_context.get_admin_context(context.request_id)
        for volume_id in dict.fromkeys(volume_ids):
            try:
                sizes[volume_id] = self.volume_api.get(service, volume_id)[
                    "size"]
            except Exception as error:
                LOG.warning("volume-extended of %s: the volume could not be "
                            "read: %s", volume_id, error)
                sizes[volume_id] = error
        return sizes

    @staticmethod
    def _start_event_action(context, event, sizes):
        """Record the event's instance action (Nova's); whether the event
        goes on to its compute."""
        if event.name == event_obj.VOLUME_EXTENDED:
            objects.InstanceAction.action_start(context, event.instance_uuid,
                                                EXTEND_VOLUME)
            size = sizes[event.tag]
            if isinstance(size, Exception):
                objects.InstanceActionEvent.event_start(
                    context, event.instance_uuid,
                    "compute_extend_volume").finish(size)
                return False
            event.data = {"new_size": str(size)}
        elif event.name == event_obj.POWER_UPDATE:
            action = POWER_ACTIONS.get(event.tag)
            if action is None:
                LOG.warning("invalid power state %s: event %s for %s "
                            "skipped", event.tag, event.key,
                            event.instance_uuid)
                return False
            objects.InstanceAction.action_start(context, event.instance_uuid,
                                                action)
        return True

