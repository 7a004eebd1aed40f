"""The conductor's object endpoints for a compute of the same process.

In ``volattach-all`` the computes share the process with the conductor;
their object calls (``BlockDeviceMapping.create``, a services row's save...)
went over the in-process bus to the conductor's ``ConductorManager``: a
message, a listener thread, an executor thread and a reply slot for what
is one database call.  ``LocalIndirection`` is the ``indirection_api`` such
a compute uses instead: it calls the same manager in the caller's thread.
What the calls carry crosses as it would on the wire (the RPC serializer,
then a copy equal to a JSON round trip: ``rpc.inproc.wire_copy``), so that
neither side holds the other's objects, and the manager runs with the
database (``objects_base.indirection(None)``), as the conductor's own
threads do.  A refusal comes back as the exception the manager raised.

A compute daemon never loads this module: its object calls go to a
conductor over RabbitMQ (``conductor.rpcapi.ConductorAPI``).
"""
from volattach.conductor import manager as conductor_manager
from volattach.objects import base as objects_base
from volattach import rpc
from volattach.rpc import inproc


class LocalIndirection:
    """``ConductorAPI``'s three object methods, served in-process."""

    def __init__(self, manager=None):
        self._manager = manager or conductor_manager.ConductorManager()
        self._serializer = rpc.RequestContextSerializer()

    def _send(self, context, values):
        """``context`` and ``values`` (a dict of arguments) as the manager
        would receive them from the bus."""
        serializer = self._serializer
        wire = inproc.wire_copy({
            "context": serializer.serialize_context(context),
            "values": {k: serializer.serialize_entity(context, v)
                       for k, v in values.items()}})
        received = serializer.deserialize_context(wire["context"])
        return received, {k: serializer.deserialize_entity(received, v)
                          for k, v in wire["values"].items()}

    def _answer(self, context, result):
        serializer = self._serializer
        return serializer.deserialize_entity(context, inproc.wire_copy(
            serializer.serialize_entity(context, result)))

    def _call(self, context, method, **values):
        received, arguments = self._send(context, values)
        with objects_base.indirection(None):    # the conductor's database
            result = getattr(self._manager, method)(received, **arguments)
        return self._answer(context, result)

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        return self._call(context, "object_class_action_versions",
                          objname=objname, objmethod=objmethod,
                          object_versions=object_versions, args=args,
                          kwargs=kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        return self._call(context, "object_action", objinst=objinst,
                          objmethod=objmethod, args=args, kwargs=kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        return self._call(context, "object_backport_versions",
                          objinst=objinst, object_versions=object_versions)
