"""What the conductor's workflows share: ``TaskBase``, the shape of one run
of a workflow (Nova's conductor task: ``execute`` runs ``_execute``, whose
steps record how to undo themselves, and on failure ``rollback`` undoes
those steps, newest first), the instance-action event around a workflow,
the compute version a server's volumes need, and ``retry_transient`` for
the steps that may run again.

How a task records its steps (``TaskBase``):

* ``_did(what, undo, ...)``: a step that completed; its undo goes on the
  task's stack.
* ``with _attempt(what, undo, ..., unknown=ERRORS) as step``: a step whose
  outcome an error may leave unknown (an RPC call with no answer, a create
  that may have happened without one): its undo is recorded when the body
  completes AND when it raises one of ``unknown``; any other error means
  the step did not happen and records nothing.  The body may name a
  better undo once it knows more (``step.undo_by``: the record the
  reserve answered with, the attachment id the create returned).
* ``_commit_steps()``: past this point the workflow only goes forward (a
  volume unplugged, a guest moved): a later failure undoes nothing before.
* ``rollback(error)`` pops the stack and runs each undo; one that fails is
  logged and the others still run.  A task extends ``rollback`` to record
  the failure (instance-action event, notification) after the undos.

At DEBUG the task logs its story: its start and end, each recorded step
(with its undo), the rollback and each undo it runs; the RPC and volume
calls of the steps log themselves (``volattach.rpc``,
``volume_client.cinder``).

A restart of the database or of the volume service (or a request that one
of them refused with 503 meanwhile) must not leave a workflow half done.
Each has ONE retry layer, the one that knows what may be sent again:

* the volume service: the Cinder client
  (``volattach/volume_client/cinder.py``), for up to
  ``[cinder] retry_seconds`` (30 s by default).  It alone knows whether a
  request reached the service: it sends again what never left, an
  idempotent method and a state-setting action (os-complete,
  os-roll_detaching), and never sends ``attachment_create`` twice blindly
  (it asks whether a create cut off unanswered happened).  The tasks call
  it directly; when it gives up (CinderConnectionFailed), the workflow
  fails and rolls back (an attach then looks for the attachment its
  create may have made);
* the conductor's database: ``retry_transient`` (``volattach.transient``),
  around every step that is safe to run twice (a read, an idempotent
  write), the steps of a rollback included, for up to
  ``TRANSIENT_RETRY_SECONDS`` (30 s): only the tasks know which steps
  those are (the database layer only waits, 3 s, for a connection it
  could not get, where nothing was sent).

Calls of a compute are not retried (their host-local work is not known to
be idempotent): ``volattach.rpc`` already sends again a message the broker
could not route (a broker restart), and a call with no answer in time (the
call monitor notices a lost message within ``[DEFAULT]
rpc_call_monitor_timeout``) fails the workflow, which rolls back, undoing
what the compute may have done all the same (the attach unplugs; the
reserve's record is found by its uuid).  The one compute call asked again
is a detach with no answer (``detach.DetachVolumeTask``): its host-local
work is idempotent."""
import collections
import contextlib
import functools
import logging
import socket
import threading

from oslo_utils import excutils

from volattach import objects
from volattach import exception
from volattach.conductor import scheduler
from volattach.transient import retry_transient

LOG = logging.getLogger(__name__)


class Event:
    """Records one instance-action event around a workflow step, on the
    host where it runs: the server's compute, or this conductor's host when
    the server is on none (os-instance-actions shows it from 2.62).  Its
    start and finish wait out a database restart (``retry_transient``: a
    finish writes the same values again; a start whose COMMIT was lost
    unanswered may, rarely, leave a second event row)."""

    def __init__(self, context, instance_uuid, name, host=None):
        self.event = retry_transient(
            objects.InstanceActionEvent.event_start,
            context, instance_uuid, name, host=host or socket.gethostname())

    def success(self):
        retry_transient(self.event.finish)

    def failure(self, error):
        retry_transient(self.event.finish, error=error)

    @classmethod
    def failed(cls, event, context, instance_uuid, name, error):
        """Fail ``event``, or, when the step failed before it had a host to
        start its event on (scheduling), an event ``name`` on this host."""
        (event or cls(context, instance_uuid, name)).failure(error)


def carries_key(info):
    """Whether a connection hands the compute a key (an rbd ``keyring``:
    the volume's own read-only Ceph user)."""
    return bool(info) and bool(info.get("keyring"))


def min_version_for(context, instance):
    """The compute service version a host needs for ``instance``'s volumes:
    read-only ones need computes that honour attach_mode, those whose
    connection carries a key computes that take it."""
    from volattach.objects import service as service_obj
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
    ro = [b for b in bdms if b.is_volume and b.attach_mode == "ro"]
    if any(carries_key(b.get_connection_info()) for b in ro):
        return service_obj.RBD_KEYRING_SERVICE_VERSION
    if ro:
        return service_obj.READ_ONLY_ATTACH_SERVICE_VERSION
    return None


def check_compute_takes_key(context, host, info):
    """ComputeTooOldForFeature (409) when ``info`` carries a key and
    ``host``'s compute is older than the computes that take one (it would
    look for a keyring file the volume service no longer writes)."""
    from volattach.objects import service as service_obj
    if not carries_key(info):
        return
    service = retry_transient(objects.Service.get_by_host_and_binary,
                              context.elevated(), host, "volattach-compute")
    if service is None or (service.version
                           < service_obj.RBD_KEYRING_SERVICE_VERSION):
        raise exception.ComputeTooOldForFeature(
            host=host, feature="read-only rbd attachments (the volume's key "
                               "in the connection)")


def schedule(context, instance, task_state="scheduling"):
    """A compute host for ``instance``: in its availability zone, new
    enough for its volumes (``min_version_for``), able to boot its image;
    for a member of a server group, as its policy allows, chosen and
    recorded under the group's lock while the server is in ``task_state``
    (an unshelve: "unshelving")."""
    group = objects.InstanceGroup.get_by_instance_uuid(context, instance.uuid)
    if group is not None:
        placed = scheduler.place_group_members(
            context, group, [instance], instance.availability_zone,
            min_version_for(context, instance), instance.image_ref,
            task_state=task_state)
        if instance.uuid not in placed:
            raise exception.UnexpectedTaskState(
                expected=task_state, actual="changed meanwhile")
        return placed[instance.uuid]
    return scheduler.select_host(context, instance.availability_zone,
                                 min_version_for(context, instance),
                                 image_ref=instance.image_ref)


def execute_cast(task):
    """Run ``task`` for a caller that waits for no answer (an RPC cast):
    its failure is rolled back, logged and recorded (instance-action
    event, notification) by the task itself, and not raised again to
    oslo.messaging, which would log it a second time."""
    try:
        task.execute()
    except Exception:
        LOG.debug("%s of %s ended in a failure, rolled back",
                  type(task).__name__, task.instance.uuid)


# (request id, server, task) of the tasks this conductor began, newest last
_BEGUN = collections.OrderedDict()
_BEGUN_LOCK = threading.Lock()
BEGUN_MAX = 10000


def _events_recorded(instance_uuid, request_id, names):
    """True when the action of ``request_id`` on the server holds an event
    named in ``names``."""
    from volattach.db import api as db_api
    action = retry_transient(db_api.action_get_by_request_id, instance_uuid,
                             request_id)
    if not action:
        return False
    return any(e["event"] in names for e in retry_transient(
        db_api.action_events_get, action["id"]))


class Step:
    """The undo of one step of a task: ``what`` it does (for the log) and
    the call that does it."""

    __slots__ = ("what", "undo")

    def __init__(self, what, undo):
        self.what = what
        self.undo = undo

    def undo_by(self, what, fn, *args, **kwargs):
        """Undo this step with ``fn(*args, **kwargs)`` instead."""
        self.what = what
        self.undo = functools.partial(fn, *args, **kwargs)


class TaskBase:
    """One run of one workflow, built per request with its arguments and
    the conductor's collaborators: ``compute_rpcapi`` (the computes' RPC
    client), ``volume_api`` (the Cinder client) and ``connectors``
    (``conductor.connectors.HostConnectors``).

    ``execute()`` runs ``_execute()``; when it raises, ``rollback(error)``
    undoes the recorded steps (newest first) and the error is raised again.
    ``_on_success()`` runs after ``_execute`` returned, outside the
    rollback's reach (recording the event: a step that fails there must
    not undo a workflow that is done).
    """

    # The instance-action events this task starts: a request whose action
    # already holds one of them was delivered before (``_first_delivery``).
    EVENTS = ()

    def __init__(self, context, instance, *, compute_rpcapi, volume_api,
                 connectors):
        self.context = context
        self.instance = instance
        self.compute_rpcapi = compute_rpcapi
        self.volume_api = volume_api
        self.connectors = connectors
        self._undo = []

    def _debug(self, text, *args):
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("%s of %s: " + text, type(self).__name__,
                      getattr(self.instance, "uuid", "-"), *args)

    def execute(self):
        self._debug("start")
        if not self._first_delivery():
            return None
        try:
            result = self._execute()
        except Exception as error:
            with excutils.save_and_reraise_exception():
                self.rollback(error)
        self._on_success()
        self._debug("done")
        return result

    def _execute(self):
        raise NotImplementedError()

    def _first_delivery(self):
        """False for a request delivered again (RabbitMQ hands a message
        once more when its acknowledgement was lost: at-least-once): this
        conductor began it already (``_BEGUN``, which also holds back a
        second copy arriving while the first runs), or the request's
        instance action holds an event of this task (another conductor
        began it).  That delivery is dropped with an INFO line: the first
        one does the work, records its event and answers for it."""
        names = type(self).EVENTS
        request_id = getattr(self.context, "request_id", None)
        if not names or not isinstance(request_id, str) or not request_id:
            return True
        key = (request_id, self.instance.uuid, type(self).__name__)
        with _BEGUN_LOCK:
            again = key in _BEGUN
            _BEGUN[key] = True
            while len(_BEGUN) > BEGUN_MAX:
                _BEGUN.popitem(last=False)
        if not again:
            again = _events_recorded(self.instance.uuid, request_id, names)
        if again:
            LOG.info("%s of server %s (request %s) delivered again: it began "
                     "already; this delivery is dropped", type(self).__name__,
                     self.instance.uuid, request_id)
        return not again

    def _on_success(self):
        pass

    def rollback(self, error):
        """Undo the recorded steps, newest first.  An undo that fails is
        logged and the others still run."""
        self._debug("rolling back %d step(s) after %s: %s", len(self._undo),
                    type(error).__name__, str(error).split("\n", 1)[0])
        while self._undo:
            step = self._undo.pop()
            self._debug("rollback: %s", step.what)
            try:
                step.undo()
            except Exception:
                LOG.exception("%s of %s: could not %s during rollback",
                              type(self).__name__, self.instance.uuid,
                              step.what)

    def _did(self, what, undo, *args, **kwargs):
        """Record a completed step: ``undo(*args, **kwargs)`` undoes it."""
        step = Step(what, functools.partial(undo, *args, **kwargs))
        self._undo.append(step)
        self._debug("step done (undo: %s)", what)
        return step

    @contextlib.contextmanager
    def _attempt(self, what, undo, *args, unknown=(Exception,), **kwargs):
        """Around a step whose outcome one of ``unknown`` leaves open: its
        undo is recorded when the body completes or raises one of those
        (undoing a step that did not happen must be harmless); another
        error records nothing.  Yields the ``Step``."""
        step = Step(what, functools.partial(undo, *args, **kwargs))
        try:
            yield step
        except unknown as error:
            self._undo.append(step)
            self._debug("step outcome unknown (%s) (undo: %s)",
                        type(error).__name__, step.what)
            raise
        self._undo.append(step)
        self._debug("step done (undo: %s)", step.what)

    def _commit_steps(self):
        """The steps so far are final: a later failure undoes none of them."""
        self._debug("steps committed: no rollback past this point")
        self._undo.clear()

    # -- steps and undos several workflows share ---------------------------

    def _connector(self, host, device_name=None, attach_mode=None):
        return self.connectors.get(self.context, host, device_name,
                                   attach_mode)

    def _connection_info(self, volume_id, attachment, multiattach=None):
        """The connection_info of ``attachment`` (an attachment_update's
        or attachment_get's answer) as the compute gets it: with
        ``multiattach`` True when the volume is multiattach, as Nova's
        compute sets it from the volume before connecting (Cinder's
        drivers do not put it in the connection; the libvirt driver
        writes ``<shareable/>`` for it).  The compute makes no volume
        service call, so every place that hands it a connection takes it
        from here.  ``multiattach``: the volume's flag when the caller
        already has it (an attach: the API read the volume); None reads
        the volume (one GET of the volume service)."""
        info = dict(attachment.get("connection_info") or {})
        info.pop("multiattach", None)
        if multiattach is None:
            multiattach = self.volume_api.get(
                self.context, volume_id).get("multiattach")
        if multiattach:
            info["multiattach"] = True
        return info

    def _fresh_volumes_for_new_boot(self):
        """The keyword arguments of a compute call that boots the guest on
        its host again (a HARD reboot, a start, the unshelve of a server
        shelved on its host): the volumes plugged again from fresh
        connections, as Nova's hard reboot regenerates the guest from its
        block_device_info.  Each attachment is updated with the compute's
        connector (as unshelve connects) and the records keep the
        connection the volume service answers now, so a storage address
        that moved since the attach (a Ceph monitor, an NBD export) is the
        one the new boot uses.  A compute older than compute RPC 1.10 is
        not asked (empty: it boots with what it had).  Otherwise
        ``bdms`` (the records) and ``previous_connection_info`` ({bdm
        uuid: its connection before})."""
        if not self.compute_rpcapi.reconnects_on_reboot(self.instance.host):
            return {}
        bdms = retry_transient(
            objects.BlockDeviceMappingList.get_by_instance_uuid,
            self.context, self.instance.uuid)
        previous = {b.uuid: b.get_connection_info() for b in bdms
                    if b.is_volume and b.connection_info}
        self._connect_volumes(self.instance.host, bdms)
        return {"bdms": bdms, "previous_connection_info": previous}

    def _connect_volumes(self, host, bdms):
        """attachment_update of every reserved volume BDM with ``host``'s
        connector (build and unshelve); saves the connection_info, only
        while the record holds the attachment it was read with: a swap of
        a shelved-offloaded server that began before the unshelve may have
        moved the record to another volume meanwhile, and that volume's
        record must not get this one's connection (InstanceInvalidState:
        the unshelve fails and can be tried again)."""
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                attachment_id = bdm.attachment_id
                attachment = self.volume_api.attachment_update(
                    self.context, attachment_id,
                    self._connector(host, bdm.device_name, bdm.attach_mode),
                    mountpoint=bdm.device_name)
                bdm.set_connection_info(
                    self._connection_info(bdm.volume_id, attachment))
                if not retry_transient(bdm.save_if_attachment, attachment_id):
                    raise exception.InstanceInvalidState(
                        method="connect the volumes of",
                        instance_uuid=bdm.instance_uuid,
                        attr="attachment of record %s" % bdm.id,
                        state=bdm.attachment_id)

    def _complete_volumes(self, bdms):
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                self.volume_api.attachment_complete(self.context,
                                                    bdm.attachment_id)

    def _delete_attachment(self, attachment_id):
        """Delete an attachment (an undo): one already gone is fine."""
        try:
            self.volume_api.attachment_delete(self.context, attachment_id)
        except exception.VolumeAttachmentNotFound:
            pass

    def _check_server_kept(self, method):
        """Raise unless the server still exists and is not being deleted
        (read again: a delete may have started since the API's checks)."""
        fresh = retry_transient(objects.Instance.get_by_uuid, self.context,
                                self.instance.uuid)
        if fresh.task_state == "deleting":
            raise exception.InstanceInvalidState(
                method=method, instance_uuid=self.instance.uuid,
                attr="task_state", state=fresh.task_state)

    def _reset_task_state(self, task_state):
        """Put the server's task state back to None (an undo), only while
        it is still ``task_state``."""
        self.instance.task_state = None
        retry_transient(self.instance.save, expected_task_state=[task_state])
