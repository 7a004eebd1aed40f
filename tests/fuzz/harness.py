"""What the fuzz tests share: the strategies built from the project's
schemas, the fixture objects (a server with a volume attached, a free
volume) and the check that a refused request stored nothing.

``State.fingerprint`` is what a refused request must not change: the
project's servers and their task states, every attachment of the volume
service, the volumes and their statuses, the block-device records of the
fixture servers.  ``Tally`` counts requests and 5xx answers (printed by
each test)."""
import base64
import collections
import os
import random
import threading
import time
import uuid

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis_jsonschema import from_schema

from tests.integration import client as clients

EXAMPLES = int(os.environ.get("VOLATTACH_FUZZ_EXAMPLES", "12"))
PROJECT_TOKEN = "alice:demo"
ADMIN_TOKEN = "admin:demo:admin"
SETTLE_TIMEOUT = 30


def fuzz_settings(examples=None):
    return settings(max_examples=examples or EXAMPLES, deadline=None,
                    derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


_text = st.text(alphabet=st.characters(codec="utf-8",
                                       exclude_categories=("Cs",)),
                max_size=30)
CUSTOM_FORMATS = {
    "name": st.from_regex(r"\A[a-zA-Z0-9][a-zA-Z0-9 ._-]{0,30}[a-zA-Z0-9]\Z"),
    "base64": st.binary(max_size=60).map(
        lambda b: base64.b64encode(b).decode()),
    "uuid": st.uuids().map(str),
    "regex": st.sampled_from(["a", "^x.*", "[0-9]+", "srv"]),
}


def valid(schema):
    return from_schema(schema, custom_formats=CUSTOM_FORMATS)


# What one database takes and the other refuses, or what no column holds:
# NUL and other control characters, lone surrogates (JSON's "\ud800"),
# strings beyond a column's 255 characters, integers at and beyond the
# edges of a 32-bit and a 64-bit column.
hostile_text = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=20),
    st.text(alphabet=st.characters(max_codepoint=0x9f,
                                   categories=("Cc",)), min_size=1,
            max_size=5),
    st.sampled_from(["a\x00b", "\x00", "\ud800", "x\udfff", "\udc80y",
                     "\x01\x1f\x7f\x9f", "\u200b\ufeff", "%", "_", "%_\\",
                     "x" * 255, "x" * 256, "\u00e9" * 256, "x" * 4096]))
def unstorable(text):
    """Whether ``text`` holds what PostgreSQL or the drivers refuse."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


boundary_integers = st.sampled_from([
    2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, 2 ** 63,
    -2 ** 63 - 1, 2 ** 64, "2147483648", "9223372036854775808",
    "-2147483649"])

_garbage_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), boundary_integers,
    st.sampled_from([2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, -1, 0]),
    st.floats(allow_nan=False), _text, hostile_text,
    st.sampled_from(["", " ", "x" * 300, "x" * 70000, "\u0000", "../..",
                     "99999999999999999999", "-1", "1e400", "null",
                     "/dev/" + "a" * 300, "\ud7ff" * 10]),
    st.lists(st.integers(), max_size=3), st.dictionaries(_text, _text,
                                                         max_size=2))


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        copy[head] = _replace(value[head], rest, new)
        return copy
    copy = list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _drop(value, path):
    if not path:
        return value
    if len(path) == 1:
        copy = dict(value) if isinstance(value, dict) else list(value)
        del copy[path[0]]
        return copy
    return _replace(value, path[:-1], _drop(_get(value, path[:-1]),
                                            path[-1:]))


def _get(value, path):
    for key in path:
        value = value[key]
    return value


@st.composite
def mutated(draw, schema):
    """A valid body with one thing broken: a value replaced by garbage, a
    key dropped, an unknown key added."""
    body = draw(valid(schema))
    paths = list(_paths(body))
    path = draw(st.sampled_from(paths))
    kind = draw(st.sampled_from(["replace", "drop", "extra"]))
    target = _get(body, path)
    if kind == "drop" and path:
        return _drop(body, path)
    if kind == "extra" and isinstance(target, dict):
        key = draw(st.one_of(_text, hostile_text))
        return _replace(body, path, dict(target, **{key or "x":
                                                     draw(_garbage_leaf)}))
    return _replace(body, path, draw(_garbage_leaf))


def bodies(schema):
    return st.one_of(valid(schema), mutated(schema))


class Tally:
    """Requests sent and 5xx answers, per test and over the tier."""
    total = collections.Counter()

    def __init__(self, name):
        self.name = name
        self.counts = collections.Counter()
        self.server_errors = []

    def record(self, what, status, body=None):
        self.counts["requests"] += 1
        self.counts[status] += 1
        Tally.total["requests"] += 1
        if isinstance(status, int) and status >= 500:
            Tally.total["5xx"] += 1
            self.server_errors.append((what, status, str(body)[:300]))

    def line(self):
        return "fuzz %s: requests %d, 5xx %d (%s)" % (
            self.name, self.counts["requests"], len(self.server_errors),
            ", ".join("%s %d" % (k, v) for k, v in sorted(
                self.counts.items(), key=str) if k != "requests"))


class State:
    """The deployment's fixture objects, its fingerprint, and settling."""

    def __init__(self, deployment):
        self.api = clients.ComputeClient(deployment.api_url, PROJECT_TOKEN)
        self.admin = clients.ComputeClient(deployment.api_url, ADMIN_TOKEN)
        self.volumes = clients.VolumeClient(deployment.volume_url,
                                            ADMIN_TOKEN)
        self.lock = threading.Lock()
        self.server = self._server()
        self.attached = self._volume()
        status, body, _ = self.api.attach_volume(self.server, self.attached)
        assert status == 200, body
        self.volumes.wait_for_volume_status(self.attached, "in-use")
        self.free = self._volume()

    def _server(self):
        status, body, _ = self.api.create_server(
            name="fz-%s" % uuid.uuid4().hex[:6], microversion="2.37")
        assert status == 202, body
        server_id = body["server"]["id"]
        self.api.wait_for_server_status(server_id, "ACTIVE")
        return server_id

    def _volume(self):
        status, body, _ = self.volumes.create_volume(size=1, name="fz")
        assert status == 202, body
        self.volumes.wait_for_volume_status(body["volume"]["id"],
                                            "available")
        return body["volume"]["id"]

    def substitute(self, rng_seed):
        """A function putting the fixture ids into a generated body."""
        rng = random.Random(rng_seed)
        ids = {"imageRef": [clients.DEFAULT_IMAGE],
               "flavorRef": ["1"],
               "volumeId": [self.free, self.attached],
               "volume_uuid": [self.free, self.attached],
               "volume_id": [self.free, self.attached],
               "instance_uuid": [self.server],
               "uuid": [self.free]}

        def walk(value):
            if isinstance(value, dict):
                return {k: (rng.choice(ids[k]) if k in ids
                            and isinstance(v, str) and rng.random() < 0.7
                            else walk(v)) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value
        return walk

    def _drop_unknown_attachments(self):
        """Delete the attachments that no server's record names: made
        straight on the volume service (POST /attachments)."""
        known = set()
        for server_id, *_ in self.fingerprint()["servers"]:
            code, body, _ = self.admin.list_volume_attachments(
                server_id, microversion="2.89")
            known |= {row.get("attachment_id")
                      for row in (body or {}).get("volumeAttachments", [])}
        for attachment_id, _ in self.fingerprint()["attachments"]:
            if attachment_id not in known:
                self.volumes.request(
                    "DELETE",
                    self.volumes._path("/attachments/%s" % attachment_id),
                    microversion="3.27")

    def fingerprint(self):
        status, body, _ = self.admin.list_servers(detail=True,
                                                  microversion="2.26")
        assert status == 200, body
        servers = sorted((s["id"], s["status"],
                          s.get("OS-EXT-STS:task_state"),
                          tuple(sorted(s["metadata"].items())),
                          tuple(s["tags"]))
                         for s in body["servers"])
        status, body, _ = self.volumes.list_volumes(detail=True)
        assert status == 200, body
        volumes = sorted((v["id"], v["status"]) for v in body["volumes"])
        status, body, _ = self.volumes.request(
            "GET", self.volumes._path("/attachments"), microversion="3.54")
        assert status == 200, body
        attachments = sorted((a["id"], a["status"])
                             for a in body["attachments"])
        status, body, _ = self.admin.list_volume_attachments(
            self.server, microversion="2.89")
        records = sorted((b["volumeId"], b.get("attachment_id"),
                          b.get("device"), b.get("tag"))
                         for b in (body or {}).get("volumeAttachments", []))
        return {"servers": servers, "volumes": volumes,
                "attachments": attachments, "records": records}

    def settle(self, timeout=SETTLE_TIMEOUT):
        """Wait (bounded) until no server has a task state and no volume a
        transitional status; returns the fingerprint."""
        deadline = time.monotonic() + timeout
        while True:
            fp = self.fingerprint()
            busy = ([s for s in fp["servers"] if s[2] or s[1] == "BUILD"]
                    + [v for v in fp["volumes"]
                       if v[1] not in ("available", "in-use", "error")])
            if not busy or time.monotonic() >= deadline:
                return fp
            time.sleep(0.1)

    def restore(self):
        """After an accepted request: the fixture server back to ACTIVE
        with only its volume, the free volume detached, new objects gone."""
        self.settle(timeout=3)
        self._drop_unknown_attachments()
        fp = self.settle()
        for server_id, status, *_ in fp["servers"]:
            if server_id != self.server:
                self.admin.delete_server(server_id)
        code, body, _ = self.admin.show_server(self.server)
        status = body["server"]["status"] if code == 200 else None
        if status in ("SHELVED", "SHELVED_OFFLOADED"):
            self.admin.request("POST", "/servers/%s/action" % self.server,
                               {"unshelve": None})
        elif status == "PAUSED":
            self.admin.request("POST", "/servers/%s/action" % self.server,
                               {"unpause": None})
        elif status == "SHUTOFF":
            self.admin.request("POST", "/servers/%s/action" % self.server,
                               {"os-start": None})
        self.admin.request("POST", "/servers/%s/action" % self.server,
                           {"unlock": None})
        self.admin.request("PUT", "/servers/%s/metadata" % self.server,
                           {"metadata": {}})
        self.admin.request("DELETE", "/servers/%s/tags" % self.server,
                           microversion="2.26")
        self.settle()
        code, body, _ = self.admin.list_volume_attachments(self.server)
        for row in (body or {}).get("volumeAttachments", []):
            if row["volumeId"] != self.attached:
                self.admin.detach_volume(self.server, row["volumeId"])
        fp = self.settle()
        for volume_id, status in fp["volumes"]:
            if volume_id not in (self.free, self.attached) \
                    and status == "available":
                self.volumes.delete_volume(volume_id)
        return self.settle()
