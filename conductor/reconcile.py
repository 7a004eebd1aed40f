"""Drift repair: one reconciliation pass over attachments, block-device
records and volume statuses.

A daemon killed between two steps of attach, detach or swap (or a volume
service that lost a request) leaves drift behind that no workflow will come
back for.  One pass of ``reconcile`` finds it and repairs it:

``orphan_attachment``
    a Cinder attachment of a server this deployment knows (live or deleted)
    that no block-device record points at: a reservation whose record was
    never written or already destroyed, the new attachment of a swap that
    died, the attachment of a deleted server.  Repair: delete the
    attachment (the volume service derives the volume's status again).
    Attachments without a server, or of servers unknown to this database (a
    Cinder shared with another cloud), are never touched; nor is a live
    server's ``attached`` attachment made with the legacy ``os-attach``
    (flagged ``legacy`` or with empty ``connection_info``): those never get
    a block-device record.
``orphan_bdm``
    a volume record whose ``attachment_id`` is gone from Cinder (checked
    again with a GET before the repair), is still None (the attach died
    after reserving the device), or that belongs to a deleted server.
    Repair: delete its attachment if there is one, destroy the record.
``stuck_volume``
    a volume ``reserved``/``attaching``/``detaching`` with no workflow left
    on it.  An attachment still ``reserved``/``attaching`` under a record of
    a server that is idle (no task state, not building, not in error) is an
    attach that died: it is rolled back (unplugged on the compute when a
    compute RPC client is given, best effort; attachment deleted; record
    destroyed).  A ``detaching`` volume that still has an ``attached``
    attachment is a detach that did not finish: left pending by a compute
    that did not answer (``conductor/tasks/detach.py``), or cut short by a
    daemon killed before the unplug.  The pass finishes the detach the user
    asked for (see "Finishing a detach" below) or, when it cannot tell
    which one it was, rolls it back (``os-roll_detaching``: back to in-use,
    the detach can be asked again).  Any other status is reset to what the
    volume's remaining attachments imply (``os-reset_status``, admin).

Finishing a detach.  The ``detaching`` volume's ``attached`` attachments
that have a record of a live server are the candidates.  A candidate whose
server's newest volume action (``os-instance-actions``) is a swap is a swap
that died: rolled back, never detached.  One whose newest volume action is
a detach is the detach the user asked for; with several (a multiattach
volume), the one whose event says the detach is pending on this volume
(``detach.PENDING_MARK``).  When exactly one remains, the pass asks the
server's compute to unplug it and waits for its answer
(``detach.unplug``: best effort is not enough, the guest must no longer
use the disk before the attachment goes), then releases the record as
the detach task does (``volume_release.release_volume_record``): the
volume ends ``available`` (or in-use by its other attachments) and the
record is gone.  A server on no host (offloaded) has nothing to unplug.
While the compute does not answer (its service down, or no answer to the
calls), or without a compute RPC client (``volattach-manage ... --no-unplug``),
the item is skipped with the reason and the next pass tries again; a
server busy with another workflow (a task state) is skipped too.  A
compute that refuses the unplug (a driver error) gets the detach rolled
back to in-use, as the detach task does.  When no candidate remains (no
detach action, or several without the mark), the detach is rolled back.

Nothing changed less than ``grace_seconds`` ago is touched: an attach, detach
or swap may still be running on it.  The age of an attachment is taken from
its ``created_at``/``updated_at``/``attached_at`` when the volume service
shows them, else from its volume's ``updated_at``/``created_at`` (every
reservation and connection bumps that; real Cinder's attachment view has no
creation time, volattach-volume's view keeps Cinder's keys); the age of a
record from its ``updated_at``/``created_at``; of a volume from its
``updated_at``.  Every candidate is checked again just before its repair
(the record re-read, the attachment fetched), so a pass racing a workflow or
another pass does no harm: repairs are idempotent (a 404 on delete counts as
done, destroying a destroyed record is a no-op).

Every repair is logged at WARNING and, when it concerns a server, recorded
as a failed ``conductor_reconcile`` event (with the drift's text) under one
``reconcile`` instance action per server and pass.  ``dry_run`` only
reports.  The conductor runs a pass every ``[conductor] reconcile_interval``
seconds (see ``PeriodicReconciler``); ``volattach-manage attachments
reconcile`` runs one by hand.
"""
import dataclasses
import datetime
import logging
import socket
import threading
import uuid

from volattach import objects
from volattach.conductor.tasks import detach
from volattach.db import api as db_api
from volattach.db.models import utcnow
from volattach import conf as volattach_conf
from volattach import context as volattach_context
from volattach import exception
from volattach.objects import instance_action
from volattach import volume_release
from volattach import volume_states

LOG = logging.getLogger(__name__)

ORPHAN_ATTACHMENT = "orphan_attachment"
ORPHAN_BDM = "orphan_bdm"
STUCK_VOLUME = "stuck_volume"
KINDS = (ORPHAN_ATTACHMENT, ORPHAN_BDM, STUCK_VOLUME)

# outcomes of an item
REPAIRED = "repaired"
WOULD_REPAIR = "would repair"       # dry run
SKIPPED = "skipped"                 # younger than the grace period, or busy
FAILED = "failed"

EVENT = "conductor_reconcile"
STUCK_STATUSES = ("reserved", "attaching", "detaching")
INCOMPLETE_ATTACHMENT_STATUSES = ("reserved", "attaching")
# vm states whose volumes belong to a workflow or to the server's delete
_BUSY_VM_STATES = ("building", "error")


@dataclasses.dataclass
class Item:
    kind: str
    volume_id: str | None
    instance_uuid: str | None
    attachment_id: str | None
    found: str
    action: str
    outcome: str = SKIPPED
    error: str | None = None


@dataclasses.dataclass
class Report:
    dry_run: bool = False
    items: list = dataclasses.field(default_factory=list)

    def add(self, item):
        self.items.append(item)
        return item

    def of(self, outcome=None, kind=None):
        return [i for i in self.items
                if (outcome is None or i.outcome == outcome)
                and (kind is None or i.kind == kind)]

    @property
    def found(self):
        return self.items

    @property
    def repaired(self):
        return self.of(REPAIRED)

    @property
    def skipped(self):
        return self.of(SKIPPED)

    @property
    def failed(self):
        return self.of(FAILED)

    def counts(self):
        counts = {"found": len(self.items)}
        for outcome in (REPAIRED, WOULD_REPAIR, SKIPPED, FAILED):
            counts[outcome] = len(self.of(outcome))
        return counts

    def summary(self):
        return ", ".join("%s %d" % (k, v) for k, v in self.counts().items())


def _parse_time(value):
    """A datetime (naive UTC) from an ISO 8601 string or a datetime."""
    if not value:
        return None
    if isinstance(value, datetime.datetime):
        parsed = value
    else:
        try:
            parsed = datetime.datetime.fromisoformat(
                str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return parsed


def newest(*values):
    """The most recent of the timestamps given (None when none parses)."""
    times = [t for t in (_parse_time(v) for v in values) if t is not None]
    return max(times) if times else None


def attachment_changed_at(attachment, volume):
    """When ``attachment`` last changed, as well as the views tell."""
    own = newest(attachment.get("updated_at"), attachment.get("created_at"),
                 attachment.get("attached_at"))
    of_volume = newest((volume or {}).get("updated_at"),
                       (volume or {}).get("created_at"))
    return newest(own, of_volume)


def _is_young(changed_at, now, grace_seconds):
    if changed_at is None:
        return False
    return (now - changed_at).total_seconds() < grace_seconds


class _Pass:
    """State of one pass: the snapshot, the caches, the report."""

    def __init__(self, context, volume_api, grace_seconds, dry_run,
                 compute_rpcapi, now):
        self.context = context
        self.volume_api = volume_api
        self.grace = grace_seconds
        self.dry_run = dry_run
        self.compute_rpcapi = compute_rpcapi
        self.now = now or utcnow()
        self.report = Report(dry_run=dry_run)
        self._instances = {}
        # one instance action per server and pass
        self.event_context = volattach_context.get_admin_context(
            request_id="req-reconcile-" + str(uuid.uuid4()))
        self.touched_volumes = set()

    # -- reads ----------------------------------------------------------------

    def instance(self, instance_uuid):
        """The instance row (deleted ones too), or None if unknown."""
        if instance_uuid not in self._instances:
            try:
                self._instances[instance_uuid] = db_api.instance_get_by_uuid(
                    instance_uuid, read_deleted=True)
            except exception.InstanceNotFound:
                self._instances[instance_uuid] = None
        return self._instances[instance_uuid]

    @staticmethod
    def is_deleted(instance):
        return instance is None or bool(instance.get("deleted"))

    @staticmethod
    def is_busy(instance):
        return (instance is not None and not instance.get("deleted")
                and (instance.get("task_state") is not None
                     or instance.get("vm_state") in _BUSY_VM_STATES))

    # -- recording ------------------------------------------------------------

    def skip(self, item, why):
        item.outcome = SKIPPED
        item.error = why
        return self.report.add(item)

    def repair(self, item, do_repair):
        """Run ``do_repair`` (unless dry run), log, record the event."""
        self.report.add(item)
        if item.volume_id:
            self.touched_volumes.add(item.volume_id)
        if self.dry_run:
            item.outcome = WOULD_REPAIR
            return item
        try:
            done = do_repair()
        except Exception as error:  # one failed repair must not stop the pass
            item.outcome = FAILED
            item.error = str(error) or error.__class__.__name__
            LOG.exception("reconcile: could not repair %s (%s): %s",
                          item.kind, item.found, item.action)
            return item
        if done is False:
            item.outcome = SKIPPED
            item.error = item.error or "changed since the snapshot"
            return item
        item.outcome = REPAIRED
        LOG.warning("reconcile: repaired %s: %s; %s (volume %s, server %s, "
                    "attachment %s)", item.kind, item.found, item.action,
                    item.volume_id, item.instance_uuid, item.attachment_id)
        self._record_event(item)
        return item

    def _record_event(self, item):
        if not item.instance_uuid or self.instance(item.instance_uuid) is None:
            return
        try:
            event = objects.InstanceActionEvent.event_start(
                self.event_context, item.instance_uuid, EVENT,
                host=socket.gethostname())
            event.finish(error="%s: %s; %s" % (item.kind, item.found,
                                                item.action))
        except Exception:
            LOG.exception("reconcile: could not record the event of %s on %s",
                          item.kind, item.instance_uuid)

    # -- repairs --------------------------------------------------------------

    def delete_attachment(self, attachment_id):
        try:
            self.volume_api.attachment_delete(self.context, attachment_id)
        except exception.VolumeAttachmentNotFound:
            pass

    def destroy_bdm(self, bdm_row):
        db_api.bdm_destroy(bdm_row["id"])

    def bdm_unchanged(self, bdm_row):
        """The record still exists with the same attachment and volume."""
        for row in db_api.bdm_get_by_volume(bdm_row["volume_id"]):
            if row["id"] == bdm_row["id"]:
                return (row["attachment_id"] == bdm_row["attachment_id"]
                        and row["instance_uuid"] == bdm_row["instance_uuid"])
        return False

    def attachment_has_bdm(self, attachment):
        return any(row["attachment_id"] == attachment["id"]
                   for row in db_api.bdm_get_by_volume(attachment["volume_id"]))

    def unplug(self, instance_row, bdm_row):
        """Best effort: ask the compute to unplug a half-attached volume."""
        if self.compute_rpcapi is None or not instance_row.get("host"):
            return
        try:
            instance = objects.Instance.get_by_uuid(self.context,
                                                    instance_row["uuid"])
            bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                self.context, bdm_row["volume_id"], instance_row["uuid"])
            self.compute_rpcapi.detach_volume(self.context, instance, bdm)
        except Exception as error:
            LOG.warning("reconcile: unplug of volume %s from %s failed (%s); "
                        "rolling back the attachment anyway",
                        bdm_row["volume_id"], instance_row["uuid"], error)


def reconcile(context, volume_api, grace_seconds, dry_run=False,
              compute_rpcapi=None, now=None, log_summary=True):
    """One pass: find the drift, repair what is older than ``grace_seconds``
    (nothing with ``dry_run``); returns the ``Report``, whose summary is
    logged unless the caller prints it (``log_summary``)."""
    run = _Pass(context, volume_api, grace_seconds, dry_run, compute_rpcapi,
                now)
    # Cinder first, then the records: an attachment created after the
    # listing is simply not seen; a record pointing at it is young.
    attachments = volume_api.attachment_list(context, detail=True,
                                             all_tenants=True)
    volumes = {v["id"]: v for v in volume_api.list_volumes(
        context, detail=True, all_tenants=True)}
    bdms = db_api.bdm_get_all_volume_bdms()
    by_attachment = {b["attachment_id"]: b for b in bdms if b["attachment_id"]}
    attachments_by_id = {a["id"]: a for a in attachments}

    _orphan_attachments(run, attachments, volumes, by_attachment)
    _orphan_and_incomplete_bdms(run, bdms, attachments_by_id, volumes)
    _stuck_volumes(run, volumes)
    if log_summary:
        LOG.info("reconcile pass (grace %ss%s): %s", grace_seconds,
                 ", dry run" if dry_run else "", run.report.summary())
    return run.report


def is_legacy_attached(attachment):
    """An ``attached`` attachment made with the legacy ``os-attach`` (flagged
    ``legacy``, or without ``connection_info``): it never has a block-device
    record, so a live server's one is not an orphan."""
    if attachment.get("status") != "attached":
        return False
    return bool(attachment.get("legacy")) or not attachment.get("connection_info")


def _orphan_attachments(run, attachments, volumes, by_attachment):
    for att in attachments:
        if att["id"] in by_attachment:
            continue
        instance_uuid = att.get("instance") or att.get("instance_uuid")
        if not instance_uuid:
            continue                    # not a server's attachment
        instance = run.instance(instance_uuid)
        if instance is None:
            continue                    # a server of another cloud
        if is_legacy_attached(att) and not run.is_deleted(instance):
            continue                    # os-attach: never has a record
        volume = volumes.get(att["volume_id"])
        item = Item(ORPHAN_ATTACHMENT, att["volume_id"], instance_uuid,
                    att["id"],
                    "attachment %s (%s) of %sserver %s has no block-device "
                    "record" % (att["id"], att.get("status"),
                                "deleted " if run.is_deleted(instance) else "",
                                instance_uuid),
                    "delete the attachment")
        if _is_young(attachment_changed_at(att, volume), run.now, run.grace):
            run.skip(item, "younger than the grace period")
            continue

        def repair(att=att):
            if run.attachment_has_bdm(att):
                return False
            run.delete_attachment(att["id"])
        run.repair(item, repair)


def _orphan_and_incomplete_bdms(run, bdms, attachments_by_id, volumes):
    for bdm in bdms:
        if not bdm.get("volume_id"):
            continue
        instance = run.instance(bdm["instance_uuid"])
        changed = newest(bdm.get("updated_at"), bdm.get("created_at"))
        young = _is_young(changed, run.now, run.grace)
        attachment = attachments_by_id.get(bdm["attachment_id"])
        base = dict(volume_id=bdm["volume_id"],
                    instance_uuid=bdm["instance_uuid"],
                    attachment_id=bdm["attachment_id"])
        if run.is_deleted(instance):
            item = Item(ORPHAN_BDM, found="record %s of deleted server %s"
                        % (bdm["uuid"], bdm["instance_uuid"]),
                        action="delete its attachment, destroy the record",
                        **base)
            if young:
                run.skip(item, "younger than the grace period")
                continue

            def repair(bdm=bdm):
                if bdm["attachment_id"]:
                    run.delete_attachment(bdm["attachment_id"])
                run.destroy_bdm(bdm)
            run.repair(item, repair)
            continue
        if bdm["attachment_id"] is None or attachment is None:
            if bdm["attachment_id"] is None:
                found = ("record %s of volume %s has no attachment"
                         % (bdm["uuid"], bdm["volume_id"]))
                if run.is_busy(instance):
                    # a build or unshelve names devices before it reserves
                    run.skip(Item(ORPHAN_BDM, found=found,
                                  action="destroy the record", **base),
                             "server %s is %s/%s" % (
                                 instance["uuid"], instance["vm_state"],
                                 instance["task_state"]))
                    continue
            else:
                found = ("record %s points at attachment %s, which the "
                         "volume service does not have"
                         % (bdm["uuid"], bdm["attachment_id"]))
            item = Item(ORPHAN_BDM, found=found, action="destroy the record",
                        **base)
            if young:
                run.skip(item, "younger than the grace period")
                continue

            def repair(bdm=bdm):
                if not run.bdm_unchanged(bdm):
                    return False
                if bdm["attachment_id"]:
                    try:
                        run.volume_api.attachment_get(run.context,
                                                      bdm["attachment_id"])
                        return False    # it exists after all
                    except exception.VolumeAttachmentNotFound:
                        pass
                run.destroy_bdm(bdm)
            run.repair(item, repair)
            continue
        if attachment.get("status") in INCOMPLETE_ATTACHMENT_STATUSES:
            item = Item(STUCK_VOLUME,
                        found="attachment %s is still %s: the attach of "
                              "volume %s to %s did not finish"
                              % (attachment["id"], attachment["status"],
                                 bdm["volume_id"], bdm["instance_uuid"]),
                        action="roll the attach back (unplug, delete the "
                               "attachment, destroy the record)", **base)
            if run.is_busy(instance):
                run.skip(item, "server %s is %s/%s" % (
                    instance["uuid"], instance["vm_state"],
                    instance["task_state"]))
                continue
            volume = volumes.get(bdm["volume_id"])
            if young or _is_young(attachment_changed_at(attachment, volume),
                                  run.now, run.grace):
                run.skip(item, "younger than the grace period")
                continue

            def repair(bdm=bdm, instance=instance):
                if not run.bdm_unchanged(bdm):
                    return False
                current = run.volume_api.attachment_get(run.context,
                                                        bdm["attachment_id"])
                if current.get("status") not in INCOMPLETE_ATTACHMENT_STATUSES:
                    return False
                run.unplug(instance, bdm)
                run.delete_attachment(bdm["attachment_id"])
                run.destroy_bdm(bdm)
            run.repair(item, repair)


def _stuck_volumes(run, volumes):
    if not run.dry_run and run.touched_volumes:
        # the repairs above moved statuses: look again
        volumes = {v["id"]: v for v in run.volume_api.list_volumes(
            run.context, detail=True, all_tenants=True)}
    for volume in volumes.values():
        if volume.get("status") not in STUCK_STATUSES:
            continue
        if run.dry_run and volume["id"] in run.touched_volumes:
            continue                    # the repairs above would move it
        status = volume["status"]
        base = dict(volume_id=volume["id"], instance_uuid=None,
                    attachment_id=None)
        attachments = run.volume_api.attachment_list(
            run.context, volume_id=volume["id"], detail=True,
            all_tenants=True)
        statuses = [a.get("status") for a in attachments]
        attached = [a for a in attachments if a.get("status") == "attached"]
        busy = None
        if status == "detaching" and attached:
            item, action, busy = _unfinished_detach(run, volume, attached)
        else:
            derived = _derived_status(statuses)
            if derived == status:
                continue                # reported above (skipped/busy)
            if len(attachments) == 1:
                base["instance_uuid"] = attachments[0].get("instance")
                base["attachment_id"] = attachments[0]["id"]
            item = Item(STUCK_VOLUME,
                        found="volume %s is %s; its attachments (%s) make it %s"
                              % (volume["id"], status,
                                 ", ".join(statuses) or "none", derived),
                        action="reset the status to %s" % derived, **base)

            def action(volume=volume, derived=derived, status=status):
                current = run.volume_api.get(run.context, volume["id"])
                if current["status"] != status:
                    return False
                run.volume_api.reset_volume_status(
                    run.context, volume["id"], status=derived,
                    attach_status="attached" if derived == volume_states.IN_USE
                    else "detached")
        if _is_young(newest(volume.get("updated_at"), volume.get("created_at")),
                     run.now, run.grace):
            run.skip(item, "younger than the grace period")
            continue
        if busy:
            run.skip(item, busy)
            continue
        run.repair(item, action)


def _volume_action_of(run, instance_uuid, volume_id):
    """``(action, pending)`` of the server's newest volume action (detach or
    swap; None when it has none): ``pending`` when its detach event says
    the detach of ``volume_id`` is pending."""
    for action in db_api.actions_get(instance_uuid):
        if action["action"] not in (instance_action.DETACH_VOLUME,
                                    instance_action.SWAP_VOLUME):
            continue
        pending = any(
            (event.get("details") or "").startswith(
                detach.PENDING_MARK + volume_id)
            for event in db_api.action_events_get(action["id"]))
        return action["action"], pending
    return None, False


def _unfinished_detach(run, volume, attached):
    """``(item, action, busy)`` for a ``detaching`` volume with ``attached``
    attachments: finish the detach the user asked for, or roll it back
    (module docstring, "Finishing a detach").  ``busy``: why the item is
    skipped this pass (None: repair it)."""
    volume_id = volume["id"]
    candidates = []
    for att in attached:
        instance_uuid = att.get("instance") or att.get("instance_uuid")
        instance = run.instance(instance_uuid) if instance_uuid else None
        if run.is_deleted(instance):
            continue
        bdm = next((b for b in db_api.bdm_get_by_volume(volume_id)
                    if b["attachment_id"] == att["id"]), None)
        if bdm is None:
            continue
        kind, pending = _volume_action_of(run, instance_uuid, volume_id)
        if kind == instance_action.DETACH_VOLUME:
            candidates.append((att, instance, bdm, pending))
    if len(candidates) > 1:
        candidates = [c for c in candidates if c[3]]
    if len(candidates) != 1:
        item = Item(STUCK_VOLUME, volume_id, attached[0].get("instance"),
                    attached[0]["id"],
                    "volume %s is detaching with no detach running"
                    % volume_id, "roll_detaching (back to in-use)")
        return item, (lambda: run.volume_api.roll_detaching(
            run.context, volume_id)), None
    att, instance, bdm, pending = candidates[0]
    host = instance.get("host")
    item = Item(STUCK_VOLUME, volume_id, instance["uuid"], att["id"],
                "volume %s is detaching from %s with no detach running%s"
                % (volume_id, instance["uuid"],
                   " (pending on an unreachable compute)" if pending else ""),
                "finish the detach (%srelease the attachment and the "
                "record)" % ("unplug on %s, " % host if host else ""))
    busy = None
    if run.is_busy(instance):
        busy = "server %s is %s/%s" % (instance["uuid"], instance["vm_state"],
                                       instance["task_state"])
    elif host and run.compute_rpcapi is None:
        busy = ("finishing the detach needs the unplug on %s (no compute "
                "RPC: --no-unplug)" % host)

    def finish():
        current = run.volume_api.get(run.context, volume_id)
        if current.get("status") != "detaching" or not run.bdm_unchanged(bdm):
            return False
        record = objects.BlockDeviceMapping.get_by_volume_and_instance(
            run.context, volume_id, instance["uuid"])
        server = objects.Instance.get_by_uuid(run.context, instance["uuid"])
        if server.host and run.compute_rpcapi is None:
            item.error = "the server is on %s now: needs its unplug" % (
                server.host)
            return False
        if server.host:
            try:
                detach.unplug(run.context, run.compute_rpcapi, server, record)
            except detach.ComputeUnreachable as error:
                item.error = "%s; the next pass tries again" % error
                return False
            except exception.ServiceUnavailable:
                raise       # the database or the broker away: failed
            except exception.VolattachException as error:
                # a refusal of the compute: back to in-use, as the detach
                # task does
                run.volume_api.roll_detaching(run.context, volume_id)
                item.action = ("roll_detaching (back to in-use): %s refused "
                               "the unplug: %s" % (server.host, error))
                return True
        volume_release.release_volume_record(run.context, run.volume_api,
                                             record, volume_id=volume_id)
        return True
    return item, finish, busy


def _derived_status(attach_statuses):
    return volume_states.status_from_attachments(attach_statuses)


# -- the periodic pass in the conductor ---------------------------------------

def admin_context(conf=None, request_id=None):
    """The context of a pass: the service's admin context.  Under ``[cinder]
    auth_strategy = noauth`` (volattach-all's embedded default) it carries
    its own noauth token, ``<user>:<project>:<roles>``, as any noauth
    caller's does; under keystone it has none, and the Cinder client
    authenticates with the ``[cinder]`` service credentials."""
    conf = volattach_conf.CONF if conf is None else conf
    context = volattach_context.get_admin_context(request_id=request_id)
    if conf.cinder.auth_strategy == "noauth":
        context.auth_token = "%s:%s:%s" % (context.user_id, context.project_id,
                                           ",".join(context.roles))
    return context


def is_leader(context, host):
    """Whether this conductor runs the periodic pass: the conductor that is
    up with the lowest service id (a lease on the services table, no extra
    schema).  Two conductors may disagree for a heartbeat or so; the repairs
    are idempotent, so that costs at most a duplicate event."""
    from volattach import servicegroup
    services = [s for s in objects.ServiceList.get_all(
        context, binary="volattach-conductor") if servicegroup.is_up(s)]
    if not services:
        return True
    return min(services, key=lambda s: s.id).host == host


class PeriodicReconciler:
    """A daemon thread running ``reconcile`` every ``interval`` seconds
    (0: never) on the leading conductor."""

    def __init__(self, host, volume_api, compute_rpcapi, interval,
                 grace_seconds):
        self.host = host
        self.volume_api = volume_api
        self.compute_rpcapi = compute_rpcapi
        self.interval = interval
        self.grace_seconds = grace_seconds
        self._stop = threading.Event()
        self._thread = None
        self.last_report = None

    def start(self):
        if not self.interval:
            LOG.info("periodic attachment reconciliation disabled")
            return
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="reconcile-attachments")
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.run_once()

    def run_once(self):
        context = admin_context()
        try:
            if not is_leader(context, self.host):
                LOG.debug("reconcile: another conductor leads")
                return None
            self.last_report = reconcile(
                context, self.volume_api, self.grace_seconds,
                compute_rpcapi=self.compute_rpcapi)
            return self.last_report
        except exception.VolattachException as error:
            # the volume service unreachable, no credentials to call it:
            # one line per pass, the next pass tries again
            LOG.warning("reconcile pass failed: %s", error)
            return None
        except Exception:
            LOG.exception("reconcile pass failed")
            return None

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
