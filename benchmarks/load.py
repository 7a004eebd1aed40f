"""Load generation: small HTTP clients, fixtures, attach/detach cycles.

Clients are threads with a ``requests.Session`` each (one keep-alive
connection per client where the server allows it).  The sessions ignore the
environment (``trust_env = False``: no proxy, ``.netrc`` or CA-bundle
lookups): the deployment is on loopback, and requests would otherwise scan
``os.environ`` twice per request, some 0.15 ms of client CPU counted in
every latency sample.  Every request made while
measuring becomes a *sample* dict: ``kind``, ``t`` (start, seconds since the
phase began), ``latency`` (seconds), ``status`` (HTTP code) or ``error`` (a
timeout or connection error).
"""
import json
import threading
import time

import requests

DEFAULT_IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
PROJECT_TOKEN = "bench:bench"
ADMIN_TOKEN = "admin:admin:admin"
VOLUME_MV = "3.54"


class Http:
    """One client: ``call`` returns (status, decoded body or None, latency)."""

    def __init__(self, base_url, token, service="compute", timeout=60.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.service = service
        self.timeout = timeout
        self.session = requests.Session()
        self.session.trust_env = False

    def call(self, method, path, body=None, microversion=None, timeout=None, params=None):
        headers = {"X-Auth-Token": self.token, "Accept": "application/json"}
        if microversion:
            headers["OpenStack-API-Version"] = "%s %s" % (self.service, microversion)
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        t0 = time.perf_counter()
        resp = self.session.request(method, self.base_url + path, data=data,
                                    headers=headers, params=params,
                                    timeout=timeout or self.timeout)
        content = resp.content
        latency = time.perf_counter() - t0
        decoded = None
        if content:
            try:
                decoded = json.loads(content)
            except ValueError:
                decoded = content.decode("utf-8", "replace")
        return resp.status_code, decoded, latency

    def close(self):
        self.session.close()


def compute_client(api_url, token=PROJECT_TOKEN, timeout=60.0):
    return Http(api_url + "/v2.1", token, "compute", timeout)


def volume_client(volume_url, token=PROJECT_TOKEN, timeout=60.0):
    project = token.split(":")[1]
    return Http("%s/v3/%s" % (volume_url, project), token, "volume", timeout)


class BenchError(Exception):
    """The deployment did not do what the benchmark needs."""


def _expect(status, body, expected, what):
    if status not in expected:
        raise BenchError("%s: HTTP %s %s" % (what, status, str(body)[:500]))


# -- fixtures ----------------------------------------------------------------

def _parallel(func, items, concurrency):
    """func(item) over items with ``concurrency`` threads; results in order."""
    results = [None] * len(items)
    errors = []
    index = iter(range(len(items)))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next(index, None)
            if i is None or errors:
                return
            try:
                results[i] = func(items[i])
            except Exception as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)
                return

    threads = [threading.Thread(target=worker) for _ in range(max(1, concurrency))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def create_servers(api_url, count, token=PROJECT_TOKEN, prefix="bench", concurrency=4,
                   timeout=120.0):
    """Create ``count`` servers and wait until all are ACTIVE; their ids."""
    local = threading.local()

    def create(i):
        if not hasattr(local, "client"):
            local.client = compute_client(api_url, token)
        status, body, _ = local.client.call(
            "POST", "/servers", {"server": {
                "name": "%s-%d" % (prefix, i), "imageRef": DEFAULT_IMAGE,
                "flavorRef": "1", "networks": "none"}}, microversion="2.37")
        _expect(status, body, (202,), "create server")
        return body["server"]["id"]

    ids = _parallel(create, list(range(count)), concurrency)
    client = compute_client(api_url, token)
    wanted = set(ids)
    deadline = time.monotonic() + timeout
    while True:
        status, body, _ = client.call("GET", "/servers/detail", microversion="2.37",
                                      params={"limit": 1000})
        _expect(status, body, (200,), "list servers")
        states = {s["id"]: (s["status"], s.get("OS-EXT-STS:task_state"))
                  for s in body["servers"] if s["id"] in wanted}
        bad = [i for i, (st, _) in states.items() if st == "ERROR"]
        if bad:
            raise BenchError("servers went to ERROR: %s" % bad[:5])
        if len(states) == len(wanted) and all(
                st == "ACTIVE" and task is None for st, task in states.values()):
            return ids
        if time.monotonic() > deadline:
            raise BenchError("servers not ACTIVE after %ss: %s" % (timeout, states))
        time.sleep(0.2)


def create_volumes(volume_url, count, token=PROJECT_TOKEN, concurrency=4, timeout=120.0):
    """Create ``count`` 1 GB volumes and wait until all are available."""
    local = threading.local()

    def create(i):
        if not hasattr(local, "client"):
            local.client = volume_client(volume_url, token)
        status, body, _ = local.client.call(
            "POST", "/volumes", {"volume": {"size": 1, "name": "bench-%d" % i}},
            microversion=VOLUME_MV)
        _expect(status, body, (202,), "create volume")
        return body["volume"]["id"]

    ids = _parallel(create, list(range(count)), concurrency)
    wait_volumes(volume_url, ids, "available", token=token, timeout=timeout)
    return ids


def volume_statuses(client):
    status, body, _ = client.call("GET", "/volumes/detail", microversion=VOLUME_MV)
    _expect(status, body, (200,), "list volumes")
    return {v["id"]: v["status"] for v in body["volumes"]}


def wait_volumes(volume_url, ids, wanted, token=PROJECT_TOKEN, timeout=120.0,
                 interval=0.2, client=None):
    """Poll the volume list until every volume of ``ids`` is ``wanted``;
    returns {volume id: ``time.perf_counter()`` when first seen so}."""
    client = client or volume_client(volume_url, token)
    ids = set(ids)
    seen = {}
    deadline = time.perf_counter() + timeout
    while True:
        statuses = volume_statuses(client)
        now = time.perf_counter()
        for vid in ids - set(seen):
            if statuses.get(vid) == wanted:
                seen[vid] = now
        if len(seen) == len(ids):
            return seen
        errors = {v: s for v, s in statuses.items() if v in ids and s.startswith("error")}
        if errors:
            raise BenchError("volumes in error: %s" % errors)
        if now > deadline:
            missing = {v: statuses.get(v) for v in ids - set(seen)}
            raise BenchError("volumes not %s after %ss: %s" % (
                wanted, timeout, dict(list(missing.items())[:5])))
        time.sleep(interval)


# -- attach + detach cycles (scenarios B and D) -------------------------------

class _Poller:
    """Poll one volume until it has a status, with a short backoff (2 ms,
    x1.5, at most 50 ms) so that end-to-end latencies are not dominated by
    the polling interval; counts the polls."""

    FIRST, FACTOR, MAX = 0.002, 1.5, 0.05

    def __init__(self, client):
        self.client = client

    def until(self, volume_id, wanted, timeout=60.0):
        polls = 0
        delay = self.FIRST
        deadline = time.perf_counter() + timeout
        while True:
            status, body, _ = self.client.call("GET", "/volumes/%s" % volume_id,
                                               microversion=VOLUME_MV)
            polls += 1
            if status == 200 and body["volume"]["status"] == wanted:
                return time.perf_counter(), polls
            if status == 200 and body["volume"]["status"].startswith("error"):
                raise BenchError("volume %s went to %s" % (volume_id, body["volume"]["status"]))
            if time.perf_counter() > deadline:
                raise BenchError("volume %s not %s after %ss (last %s %s)" % (
                    volume_id, wanted, timeout, status, str(body)[:200]))
            time.sleep(delay)
            delay = min(self.MAX, delay * self.FACTOR)


def one_cycle(api, vol, poller, server_id, volume_id, t_base, microversion="2.101"):
    """Attach (async), wait in-use, list, detach, wait available: a sample."""
    sample = {"kind": "cycle", "server": server_id, "volume": volume_id}
    t0 = time.perf_counter()
    sample["t"] = t0 - t_base
    for attempt in range(20):
        status, body, lat = api.call("POST", "/servers/%s/os-volume_attachments" % server_id,
                                     {"volumeAttachment": {"volumeId": volume_id}},
                                     microversion=microversion)
        if status == 400 and "already attached" in str(body) and attempt < 19:
            # the BDM of this volume's previous cycle is still being destroyed
            sample["retries"] = sample.get("retries", 0) + 1
            time.sleep(0.01)
            continue
        break
    _expect(status, body, (202,), "attach")
    sample["attach_post"] = lat
    t_in_use, polls = poller.until(volume_id, "in-use")
    sample["attach_e2e"] = t_in_use - t0
    status, body, lat = api.call("GET", "/servers/%s/os-volume_attachments" % server_id,
                                 microversion=microversion)
    _expect(status, body, (200,), "list attachments")
    if volume_id not in [a["volumeId"] for a in body["volumeAttachments"]]:
        raise BenchError("volume %s in-use but not in the attachment list" % volume_id)
    sample["list_attachments"] = lat
    t1 = time.perf_counter()
    for attempt in range(20):
        status, body, lat = api.call("DELETE", "/servers/%s/os-volume_attachments/%s"
                                     % (server_id, volume_id), microversion=microversion)
        if status == 409 and attempt < 19:   # connection_info not saved yet
            sample["retries"] = sample.get("retries", 0) + 1
            time.sleep(0.01)
            continue
        break
    _expect(status, body, (202,), "detach")
    sample["detach_delete"] = lat
    t_available, polls2 = poller.until(volume_id, "available")
    sample["detach_e2e"] = t_available - t1
    sample["cycle"] = t_available - t0
    sample["polls"] = polls + polls2
    sample["requests"] = 3 + polls + polls2
    return sample


def run_cycles(api_url, volume_url, pairs, duration=None, cycles=None, progress=None,
               microversion="2.101"):
    """Each pair (server id, [volume ids]) gets one client thread that runs
    cycles back to back, rotating its volumes, until ``duration`` seconds
    have passed or ``cycles`` cycles (in all) have been started.  Returns
    (samples, errors, wall seconds)."""
    samples, errors = [], []
    lock = threading.Lock()
    started = [0]
    t_base = time.perf_counter()
    deadline = t_base + duration if duration else None

    def worker(server_id, volume_ids):
        api = compute_client(api_url)
        vol = volume_client(volume_url)
        poller = _Poller(vol)
        i = 0
        while True:
            with lock:
                if cycles is not None and started[0] >= cycles:
                    break
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                started[0] += 1
            volume_id = volume_ids[i % len(volume_ids)]
            i += 1
            try:
                sample = one_cycle(api, vol, poller, server_id, volume_id, t_base,
                                   microversion)
            except Exception as exc:  # noqa: BLE001 - counted, the run goes on
                with lock:
                    errors.append({"t": time.perf_counter() - t_base, "error": repr(exc)[:500]})
                # leave the pair in a known state before going on
                _recover(api, vol, server_id, volume_id)
                continue
            with lock:
                samples.append(sample)
            if progress is not None:
                progress(1)
        api.close()
        vol.close()

    threads = [threading.Thread(target=worker, args=pair, name="cycle-%d" % n)
               for n, pair in enumerate(pairs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return samples, errors, time.perf_counter() - t_base


def _recover(api, vol, server_id, volume_id):
    """After a failed cycle: wait for the volume to settle, detach it if it
    is in use, and wait until it is available again (best effort)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status, body, _ = vol.call("GET", "/volumes/%s" % volume_id, microversion=VOLUME_MV)
            state = body["volume"]["status"] if status == 200 else None
            if state == "available":
                return
            if state == "in-use":
                api.call("DELETE", "/servers/%s/os-volume_attachments/%s" % (server_id, volume_id))
        except Exception:  # noqa: BLE001 - best effort
            pass
        time.sleep(0.2)


# -- a reader in a loop (scenario A) ---------------------------------------------

class Reader(threading.Thread):
    """GET ``path`` in a loop until stopped; every request is a sample."""

    def __init__(self, api_url, path, t_base, timeout=10.0, pause=0.01,
                 microversion="2.1", kind="reader"):
        super().__init__(name="reader", daemon=True)
        self.client = compute_client(api_url, timeout=timeout)
        self.path = path
        self.t_base = t_base
        self.pause = pause
        self.microversion = microversion
        self.kind = kind
        self.samples = []
        self._stop_event = threading.Event()

    def run(self):
        while not self._stop_event.is_set():
            t0 = time.perf_counter()
            sample = {"kind": self.kind, "t": t0 - self.t_base}
            try:
                status, _, latency = self.client.call("GET", self.path,
                                                      microversion=self.microversion)
                sample.update(status=status, latency=latency)
            except requests.Timeout:
                sample.update(error="timeout", latency=time.perf_counter() - t0)
                # a fresh connection: the timed-out one still has a request queued
                self.client.close()
                self.client.session = requests.Session()
            except requests.RequestException as exc:
                sample.update(error=type(exc).__name__, latency=time.perf_counter() - t0)
                self.client.close()
                self.client.session = requests.Session()
            self.samples.append(sample)
            self._stop_event.wait(self.pause)

    def stop(self):
        self._stop_event.set()
        self.join()
        self.client.close()
