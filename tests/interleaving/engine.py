"""A seeded scheduler of concurrent operations on shared servers and
volumes, and the invariants checked once they have settled.

One run (``Run``) repeats steps: it draws a batch of 2 to ``width``
operations from ``random.Random(seed)`` (attach at 2.100, 2.101 and 2.105
ro/rw, detach, swap, server delete, shelve, offload, unshelve, live
migrate, multi-create with a multiattach volume, volume delete) on a small
pool of servers and volumes, sends them at once from threads (a barrier
releases them together), waits until nothing is in flight (bounded), and
checks the invariants:

- every volume's status follows from its attachments (``in-use`` with at
  least one, ``available`` with none, never a transitional status);
- every attachment of the volume service belongs to a live server that has
  a block-device record naming it, and every record names a live
  attachment;
- every connected attachment is on its server's host;
- no server is left in a task state (or BUILD, MIGRATING);
- a ``reconcile --dry-run`` pass (grace 0) finds nothing;
- no request answered 5xx.

The plan of a step depends only on the seed and on the settled state
before it, so a failing seed replays the same batches; the timing inside
a batch is left to the threads.  Deployment-agnostic: it speaks HTTP to
the compute API and the volume service and calls ``reconcile_dry_run`` (a
callable returning the findings as strings) of whoever drives it.
"""
import collections
import dataclasses
import random
import threading
import time
import uuid

from tests.integration import client as clients

PROJECT_TOKEN = "alice:demo"
ADMIN_TOKEN = "admin:demo:admin"
SETTLING_SERVER_STATUSES = {"BUILD", "MIGRATING", "REBUILD", "RESIZE",
                            "DELETED"}
SETTLED_VOLUME_STATUSES = {"available", "in-use", "error"}
OPERATIONS = ("attach_sync", "attach_async", "attach_ro", "attach_rw",
              "detach", "swap", "delete_server", "shelve", "offload",
              "unshelve", "live_migrate", "multi_create", "delete_volume")
# later operations: a run asks for them (operations=...), so that the
# recorded seeds of OPERATIONS keep replaying the same interleavings
WITH_REBUILD = OPERATIONS + ("rebuild",)


@dataclasses.dataclass
class Counts:
    """What a run did (printed at the end of each test)."""
    operations: int = 0
    interleavings: int = 0          # batches sent concurrently
    invariant_checks: int = 0
    setup_requests: int = 0
    statuses: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    server_errors: int = 0
    by_operation: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)

    def line(self):
        codes = ", ".join("%s %d" % kv for kv in sorted(self.statuses.items()))
        return ("operations %d, interleavings %d, invariant checks %d, "
                "setup requests %d, 5xx %d (statuses: %s)" % (
                    self.operations, self.interleavings,
                    self.invariant_checks, self.setup_requests,
                    self.server_errors, codes))

    def operations_line(self):
        return ", ".join("%s %s: %d" % (name, status, n) for (name, status), n
                         in sorted(self.by_operation.items()))


class Clients(threading.local):
    """One HTTP session per thread and token."""

    def __init__(self, api_url, volume_url):
        self.api = clients.ComputeClient(api_url, PROJECT_TOKEN)
        self.admin = clients.ComputeClient(api_url, ADMIN_TOKEN)
        self.volumes = clients.VolumeClient(volume_url, ADMIN_TOKEN,
                                            microversion="3.54")


@dataclasses.dataclass
class Snapshot:
    """The settled state, as the two APIs show it."""
    servers: dict          # id -> server (detail)
    bdms: dict             # server id -> [os-volume_attachments rows at 2.89]
    volumes: dict          # id -> volume (detail)
    attachments: list      # volume service attachments (detail)

    def attached_volumes(self, server_id):
        return [b["volumeId"] for b in self.bdms.get(server_id, ())]

    def root_volume(self, server_id):
        server = self.servers.get(server_id) or {}
        return not server.get("image")


class Run:
    """One seeded run against one deployment."""

    def __init__(self, api_url, volume_url, seed, reconcile_dry_run,
                 servers=3, volumes=5, width=4, settle_timeout=30.0,
                 stop_on_violation=True, log=print, operations=OPERATIONS):
        self.seed = seed
        self.operations = operations
        self.rng = random.Random(seed)
        self.reconcile_dry_run = reconcile_dry_run
        self.width = width
        self.n_servers = servers
        self.n_volumes = volumes
        self.settle_timeout = settle_timeout
        self.stop_on_violation = stop_on_violation
        self.log = log
        self.clients = Clients(api_url, volume_url)
        self.counts = Counts()
        self.violations = []       # (step, plan, text)
        self.history = []          # (step, plan, [(op, status)])
        self.multiattach_type = None
        self.step_no = 0
        self._lock = threading.Lock()
        self.tag = uuid.uuid4().hex[:6]
        self._focus_server = self._focus_volume = None

    # -- requests -------------------------------------------------------

    def _count(self, status, what, setup=False):
        with self._lock:
            if setup:
                self.counts.setup_requests += 1
            self.counts.statuses[status] += 1
            if status >= 500:
                self.counts.server_errors += 1
                self.violations.append((self.step_no, what,
                                        "answered %s" % status))

    def _setup(self, call, *args, **kwargs):
        status, body, headers = call(*args, **kwargs)
        self._count(status, "%s%r" % (call.__name__, args), setup=True)
        return status, body

    # -- the pool -------------------------------------------------------

    def prepare(self):
        admin_volumes = self.clients.volumes
        status, body = self._setup(
            admin_volumes.create_volume_type,
            "multiattach-%s-%s" % (self.tag, self.seed),
            {"multiattach": "<is> True"})
        assert status == 200, body
        self.multiattach_type = body["volume_type"]["id"]
        self.replenish(self.snapshot())

    def _new_server(self):
        status, body = self._setup(
            self.clients.api.create_server,
            name="il-%s-%d" % (self.tag, self.counts.setup_requests),
            microversion="2.37")
        assert status == 202, body

    def _new_volume(self, multiattach=False):
        fields = {}
        if multiattach:
            # bootable: multi_create boots servers from it
            fields["volume_type"] = self.multiattach_type
            fields["imageRef"] = clients.DEFAULT_IMAGE
        status, body = self._setup(
            self.clients.volumes.create_volume, size=1,
            name="il-%s-%s" % (self.tag, "multi" if multiattach else "v"),
            **fields)
        assert status == 202, body

    def _is_multiattach(self, volume):
        return bool(volume.get("multiattach"))

    def replenish(self, snap):
        """Bring the pool back to its size after deletes; wait until the
        new ones are ready."""
        missing = self.n_servers - len(snap.servers)
        for _ in range(max(0, missing)):
            self._new_server()
        volumes = list(snap.volumes.values())
        if not any(self._is_multiattach(v) for v in volumes):
            self._new_volume(multiattach=True)
        plain = [v for v in volumes if not self._is_multiattach(v)]
        for _ in range(max(0, self.n_volumes - 1 - len(plain))):
            self._new_volume()
        if missing > 0 or len(plain) < self.n_volumes - 1:
            return self.settle()
        return snap

    # -- observing ------------------------------------------------------

    def snapshot(self):
        api, volumes = self.clients.admin, self.clients.volumes
        status, body, _ = api.list_servers(detail=True, microversion="2.1")
        assert status == 200, body
        servers = {s["id"]: s for s in body["servers"]
                   if s["name"].startswith("il-%s" % self.tag)
                   or s["name"].startswith("ilm-%s" % self.tag)}
        bdms = {}
        for server_id in servers:
            status, body, _ = api.list_volume_attachments(
                server_id, microversion="2.89")
            if status == 404:
                continue            # deleted meanwhile
            assert status == 200, body
            bdms[server_id] = body["volumeAttachments"]
        status, body, _ = volumes.list_volumes(detail=True)
        assert status == 200, body
        vols = {v["id"]: v for v in body["volumes"]
                if (v.get("name") or "").startswith("il-%s" % self.tag)}
        status, body, _ = volumes.request(
            "GET", volumes._path("/attachments/detail"), microversion="3.54")
        assert status == 200, body
        atts = [a for a in body["attachments"] if a["volume_id"] in vols]
        return Snapshot(servers, bdms, vols, atts)

    def _unsettled(self, snap):
        busy = []
        for server in snap.servers.values():
            task = server.get("OS-EXT-STS:task_state")
            if task or server["status"] in SETTLING_SERVER_STATUSES:
                busy.append("server %s %s/%s" % (server["id"],
                                                 server["status"], task))
        for volume in snap.volumes.values():
            if volume["status"] not in SETTLED_VOLUME_STATUSES:
                busy.append("volume %s %s" % (volume["id"], volume["status"]))
        return busy

    def settle(self):
        """Wait until nothing is in flight (two calm snapshots in a row);
        a violation when ``settle_timeout`` passes first."""
        deadline = time.monotonic() + self.settle_timeout
        calm = 0
        while True:
            snap = self.snapshot()
            busy = self._unsettled(snap)
            calm = 0 if busy else calm + 1
            if calm >= 2:
                return snap
            if time.monotonic() >= deadline:
                self.violations.append(
                    (self.step_no, "settle",
                     "still in flight after %ss: %s" % (self.settle_timeout,
                                                        "; ".join(busy))))
                return None
            time.sleep(0.2)

    # -- the invariants -------------------------------------------------

    def check(self, snap):
        """Every invariant on a settled snapshot; returns the failures."""
        found = []
        by_volume = collections.defaultdict(list)
        for att in snap.attachments:
            by_volume[att["volume_id"]].append(att)
        for vid, volume in snap.volumes.items():
            atts = by_volume.get(vid, [])
            status = volume["status"]
            if status == "in-use" and not any(
                    a["status"] == "attached" for a in atts):
                found.append("volume %s in-use with attachments %s" % (
                    vid, [(a["id"], a["status"]) for a in atts]))
            elif status == "available" and atts:
                found.append("volume %s available with attachments %s" % (
                    vid, [(a["id"], a["status"]) for a in atts]))
            elif status not in ("in-use", "available"):
                found.append("volume %s is %s" % (vid, status))
        records = {}
        for server_id, rows in snap.bdms.items():
            for row in rows:
                records[row.get("attachment_id")] = (server_id, row)
        attachments = {a["id"]: a for a in snap.attachments}
        for att in snap.attachments:
            server_id = att.get("instance")
            if server_id not in snap.servers:
                found.append("attachment %s (%s) of volume %s belongs to "
                             "server %s, which is gone" % (
                                 att["id"], att["status"], att["volume_id"],
                                 server_id))
            elif att["id"] not in records:
                found.append("attachment %s (%s) of volume %s has no "
                             "block-device record on server %s" % (
                                 att["id"], att["status"], att["volume_id"],
                                 server_id))
        for attachment_id, (server_id, row) in records.items():
            att = attachments.get(attachment_id)
            if att is None:
                found.append("server %s has a record of volume %s naming "
                              "attachment %s, which is gone" % (
                                  server_id, row["volumeId"], attachment_id))
            elif (att["volume_id"] != row["volumeId"]
                  or att.get("instance") != server_id):
                found.append("record %s of server %s (volume %s) and "
                             "attachment %s (server %s, volume %s) differ" % (
                                 row.get("bdm_uuid"), server_id,
                                 row["volumeId"], attachment_id,
                                 att.get("instance"), att["volume_id"]))
        for vid, volume in snap.volumes.items():
            # a connected attachment is on its server's host (an offloaded
            # server's have no host)
            for att in volume.get("attachments") or ():
                server = snap.servers.get(att.get("server_id"))
                if server is None or not att.get("host_name"):
                    continue
                host = server.get("OS-EXT-SRV-ATTR:host")
                if att["host_name"] != host:
                    found.append("attachment %s of volume %s is on host %s, "
                                 "its server %s on %s" % (
                                     att.get("attachment_id"), vid,
                                     att["host_name"], server["id"], host))
        for server in snap.servers.values():
            if server.get("OS-EXT-STS:task_state"):
                found.append("server %s left in task state %s" % (
                    server["id"], server["OS-EXT-STS:task_state"]))
        ours = set(snap.volumes) | set(snap.servers)
        for finding in self.reconcile_dry_run():
            # the deployment may be shared: only this run's volumes
            if any(name in finding for name in ours):
                found.append("reconcile --dry-run: %s" % finding)
        with self._lock:
            self.counts.invariant_checks += 1
        return found

    # -- the operations -------------------------------------------------

    def _plan_one(self, snap):
        """(name, description, callable) of one operation on ``snap``."""
        rng = self.rng
        servers = sorted(snap.servers)
        volumes = sorted(snap.volumes)
        available = [v for v in volumes
                     if snap.volumes[v]["status"] == "available"]
        multi = [v for v in volumes if self._is_multiattach(snap.volumes[v])]
        attached = sorted((s, v) for s in servers
                          for v in snap.attached_volumes(s)
                          if not (snap.root_volume(s)
                                  and self._root(snap, s) == v))
        name = rng.choice(self.operations)
        server = rng.choice(servers) if servers else None
        if self._focus_server in snap.servers and rng.random() < 0.6:
            server = self._focus_server
        if name.startswith("attach"):
            pick = available if available and rng.random() < 0.7 else volumes
            volume = rng.choice(pick) if pick else None
            if self._focus_volume in snap.volumes and rng.random() < 0.5:
                volume = self._focus_volume
            if server is None or volume is None:
                return None
            return self._attach_op(name, server, volume)
        if name in ("detach", "swap"):
            if not attached:
                return None
            server, volume = rng.choice(attached)
            mine = [a for a in attached if a[0] == self._focus_server]
            if mine and rng.random() < 0.6:
                server, volume = rng.choice(mine)
            if name == "detach":
                return (name, "detach(%s, %s)" % (server, volume),
                        lambda c: c.api.detach_volume(server, volume,
                                                      microversion="2.1"))
            candidates = [v for v in available if v not in multi] or volumes
            new = rng.choice(candidates)
            body = {"volumeAttachment": {"volumeId": new}}
            return (name, "swap(%s, %s -> %s)" % (server, volume, new),
                    lambda c: _swap_during_migration(c, server, volume, body))
        if name == "delete_volume":
            volume = rng.choice(volumes) if volumes else None
            if self._focus_volume in snap.volumes and rng.random() < 0.5:
                volume = self._focus_volume
            if volume is None:
                return None
            return (name, "delete_volume(%s)" % volume,
                    lambda c: c.volumes.delete_volume(volume))
        if name == "multi_create":
            if not multi:
                return None
            volume = rng.choice(multi)
            mode = rng.choice(["ro", "rw"])
            count = rng.choice([2, 3])
            bdm = [{"boot_index": 0, "uuid": volume, "source_type": "volume",
                    "destination_type": "volume", "attach_mode": mode}]
            return (name, "multi_create(%d, %s, %s)" % (count, volume, mode),
                    lambda c: c.api.create_server(
                        name="ilm-%s" % self.tag, image_ref="",
                        microversion="2.105", min_count=count,
                        max_count=count, block_device_mapping_v2=bdm))
        if server is None:
            return None
        if name == "delete_server":
            return (name, "delete_server(%s)" % server,
                    lambda c: c.api.delete_server(server))
        if name == "live_migrate":
            body = {"os-migrateLive": {"host": None,
                                       "block_migration": "auto"}}
            return (name, "live_migrate(%s)" % server,
                    lambda c: c.admin.request(
                        "POST", "/servers/%s/action" % server, body,
                        microversion="2.25"))
        action = {"shelve": {"shelve": None},
                  "offload": {"shelveOffload": None},
                  "unshelve": {"unshelve": None},
                  # a volume-backed server's root was made from this image
                  "rebuild": {"rebuild": {"imageRef": clients.DEFAULT_IMAGE}},
                  }[name]
        client = "admin" if name == "offload" else "api"
        return (name, "%s(%s)" % (name, server),
                lambda c: getattr(c, client).request(
                    "POST", "/servers/%s/action" % server, action,
                    microversion="2.1"))

    def _root(self, snap, server_id):
        for row in snap.bdms.get(server_id, ()):
            if row.get("device") in ("/dev/vda", "/dev/sda"):
                return row["volumeId"]
        return None

    def _attach_op(self, name, server, volume):
        version, fields = {
            "attach_sync": ("2.100", {}),
            "attach_async": ("2.101", {}),
            "attach_ro": ("2.105", {"attach_mode": "ro"}),
            "attach_rw": ("2.105", {"attach_mode": "rw"}),
        }[name]
        return (name, "%s(%s, %s)" % (name, server, volume),
                lambda c: c.api.attach_volume(server, volume,
                                              microversion=version, **fields))

    def plan(self, snap):
        """A batch of 2 to ``width`` operations; most of them aim at one
        server and one volume of the batch, to make them race."""
        size = self.rng.randint(2, self.width)
        servers, volumes = sorted(snap.servers), sorted(snap.volumes)
        self._focus_server = self.rng.choice(servers) if servers else None
        self._focus_volume = self.rng.choice(volumes) if volumes else None
        batch = []
        for _ in range(size * 3):
            if len(batch) == size:
                break
            op = self._plan_one(snap)
            if op is not None:
                batch.append(op)
        return batch

    def send(self, batch):
        """Every operation of ``batch`` at once from its own thread."""
        barrier = threading.Barrier(len(batch))
        results = [None] * len(batch)

        def worker(index, op):
            name, text, call = op
            try:
                barrier.wait(10)
                status, body, _ = call(self.clients)
            except Exception as exc:  # noqa: BLE001 - recorded as violation
                results[index] = (text, "raised %r" % exc)
                with self._lock:
                    self.violations.append((self.step_no, text,
                                            "raised %r" % exc))
                return
            results[index] = (text, status)
            self._count(status, "%s -> %s" % (text, body))
            with self._lock:
                self.counts.by_operation[(name, status)] += 1

        threads = [threading.Thread(target=worker, args=(i, op), daemon=True)
                   for i, op in enumerate(batch)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        with self._lock:
            self.counts.operations += len(batch)
            self.counts.interleavings += 1
        return results

    # -- driving --------------------------------------------------------

    def step(self, snap):
        """One batch; returns the next settled snapshot or None when the
        run cannot go on (nothing settles)."""
        self.step_no += 1
        batch = self.plan(snap)
        if len(batch) < 2:
            return snap
        results = self.send(batch)
        self.history.append((self.step_no, results))
        settled = self.settle()
        if settled is None:
            return None
        for text in self.check(settled):
            self.violations.append((self.step_no,
                                    " || ".join(str(r) for r in results),
                                    text))
        return self.replenish(settled)

    def race(self, make_batch, rounds):
        """``rounds`` times: a fresh server and volume (``make_batch(
        snapshot, server, volume)`` gives the batch to send on them),
        then settle and check, as a step of ``run`` does."""
        self.prepare()
        snap = self.settle()
        for _ in range(rounds):
            if snap is None:
                break
            self.step_no += 1
            known = set(snap.servers)
            self._new_server()
            self._new_volume()
            snap = self.settle()
            if snap is None:
                break
            server = sorted(set(snap.servers) - known)[0]
            volume = sorted(v for v, body in snap.volumes.items()
                            if body["status"] == "available"
                            and not self._is_multiattach(body))[0]
            results = self.send(make_batch(self, snap, server, volume))
            settled = self.settle()
            if settled is None:
                break
            found = self.check(settled)
            for text in found:
                self.violations.append(
                    (self.step_no, " || ".join(str(r) for r in results),
                     text))
            if found and self.stop_on_violation:
                break
            snap = settled
        return self

    def run(self, steps=None, duration=None):
        """``steps`` batches, or batches until ``duration`` seconds pass."""
        self.prepare()
        snap = self.settle()
        started = time.monotonic()
        while snap is not None:
            if steps is not None and self.step_no >= steps:
                break
            if duration is not None and time.monotonic() - started >= duration:
                break
            before = len(self.violations)
            snap = self.step(snap)
            if len(self.violations) > before:
                self.log(self.describe_violations(self.violations[before:]))
                if self.stop_on_violation:
                    break
        return self

    def describe_violations(self, violations=None):
        lines = []
        for step, what, text in (self.violations if violations is None
                                 else violations):
            lines.append("seed %s step %s: %s\n    after: %s" % (
                self.seed, step, text, what))
        return "\n".join(lines)


def _swap_during_migration(c, server, volume, body):
    """The compute swap as the volume service drives it: the source is
    marked migrating first (os-reset_status), since the compute API refuses
    a swap outside a volume migration (OSSN-0094); a refused swap clears
    the mark again."""
    mark = c.volumes._path("/volumes/%s/action" % volume)
    c.volumes.request("POST", mark, {"os-reset_status": {
        "migration_status": "migrating"}})      # a 404 if deleted meanwhile
    result = c.admin.request(
        "PUT", "/servers/%s/os-volume_attachments/%s" % (server, volume),
        body, microversion="2.1")
    if result[0] != 202:
        c.volumes.request("POST", mark, {"os-reset_status": {
            "migration_status": "none"}})
    return result
