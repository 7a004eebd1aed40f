"""Conformance of volattach's volume service with a real Cinder 29.0.0.

ONE scenario (``run_scenario``) drives the attachments API over HTTP with
the same small client against both services: volume types, a plain and a
multiattach volume, reserve / update / complete / delete, list and show,
the second-reservation rules, read-only attachments and the error cases of
cinder-attachments-api.md.  Each step records:

* the step name, method, path template (ids are named, never literal) and
  microversion;
* the status code and the ``OpenStack-API-Version`` response header;
* the body's keys at every level, as paths (``attachment.connection_info.
  access_mode``, ``volume.attachments[].server_id``; the contents of
  ``metadata`` and ``extra_specs`` are user data and are not walked);
* for the steps where clients parse the error message, the message with
  the scenario's ids replaced by their names;
* a few values clients branch on (number of attachments listed, whether
  ``cinder-volume`` is up);
* after the step, read back with GET: the status of the volume it touched
  and of the attachment it touched (``gone`` after a 404), that attachment's
  ``attach_mode`` and ``connection_info.access_mode``.

The two records are compared step by step.  A difference passes only where
``ALLOWED_DIFFERENCES`` lists it (the places where volattach deliberately
goes further than Cinder 29, each with its reason), and every entry of that
table must still be needed: a table entry that no longer matches a
difference fails too, so the table stays the exact list of deviations.
``VOLATTACH_STATE_TABLE`` also checks volattach's record on its own against
the state table of the reference, so two equally wrong services cannot pass.

Real Cinder runs from its own virtualenv (``tests/conformance/conftest.py``);
volattach's volume service runs in this process on a temporary SQLite
database.
"""
import fnmatch
import json
import time
import uuid

import pytest
import requests

from tests import utils
from tests.conformance import real_cinder as real_cinder_mod

pytestmark = pytest.mark.conformance

PROJECT_ID = real_cinder_mod.PROJECT_ID
MV = "3.54"

CONNECTOR = {"initiator": "iqn.1993-08.org.debian:01:cad181614cec",
             "ip": "127.0.0.1", "platform": "x86_64", "host": "compute-1",
             "os_type": "linux", "multipath": False, "mountpoint": "/dev/vdb",
             "mode": "rw"}
CONNECTOR_2 = dict(CONNECTOR, host="compute-2")
SERVICE_ROLE = {"X-Service-Roles": "service"}

# Keys whose values are user data: their own keys are not compared.
OPAQUE_KEYS = ("metadata", "extra_specs")


# -- the client ---------------------------------------------------------------

class Client:
    """A tiny Cinder v3 client over requests: one session, explicit
    microversion per call, the body decoded when there is one."""

    def __init__(self, root_url, token, project_id=PROJECT_ID):
        self.base = "%s/v3/%s" % (root_url.rstrip("/"), project_id)
        self.token = token
        self.session = requests.Session()
        self.session.trust_env = False

    def request(self, method, path, version=MV, body=None, headers=None,
                params=None, timeout=30):
        all_headers = {"X-Auth-Token": self.token,
                       "Accept": "application/json",
                       "OpenStack-API-Version": "volume %s" % version}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        resp = self.session.request(
            method, self.base + path, headers=all_headers, params=params,
            data=None if body is None else json.dumps(body), timeout=timeout)
        try:
            data = resp.json() if resp.content else None
        except ValueError:
            data = resp.text
        self.last_headers = resp.headers
        return resp.status_code, data


# -- recording ----------------------------------------------------------------

def key_paths(body, prefix=""):
    """Every key of ``body`` as a dotted path (``[]`` for list items)."""
    paths = set()
    if isinstance(body, dict):
        for key, value in body.items():
            path = "%s.%s" % (prefix, key) if prefix else key
            paths.add(path)
            if key not in OPAQUE_KEYS:
                paths |= key_paths(value, path)
    elif isinstance(body, list):
        for item in body:
            paths |= key_paths(item, prefix + "[]")
    return paths


def fault_message(body):
    if isinstance(body, dict) and len(body) == 1:
        fault = next(iter(body.values()))
        if isinstance(fault, dict):
            return fault.get("message")
    return None


class Scenario:
    """Runs steps and records them; names every id it meets."""

    def __init__(self, client):
        self.client = client
        self.ids = {}       # name -> id
        self.records = []

    def path(self, template):
        return template.format(**self.ids)

    def normalize(self, text):
        if not isinstance(text, str):
            return text
        for name, value in sorted(self.ids.items(), key=lambda i: -len(i[1])):
            text = text.replace(value, "{%s}" % name)
        return text

    def observe(self, volume, attachment):
        seen = {}
        if volume:
            status, body = self.client.request(
                "GET", self.path("/volumes/{%s}" % volume))
            seen["volume_status"] = (body["volume"]["status"]
                                     if status == 200 else "gone")
        if attachment:
            if attachment not in self.ids:
                seen["attachment_status"] = None  # never created
            else:
                status, body = self.client.request(
                    "GET", self.path("/attachments/{%s}" % attachment))
                if status == 200:
                    att = body["attachment"]
                    seen["attachment_status"] = att["status"]
                    seen["attach_mode"] = att["attach_mode"]
                    seen["access_mode"] = (att.get("connection_info")
                                           or {}).get("access_mode")
                else:
                    seen["attachment_status"] = "gone"
        return seen

    def step(self, name, method, template, body=None, version=MV,
             headers=None, params=None, volume=None, attachment=None,
             save=None, compare_message=False, count=None,
             wait_available=False):
        """One recorded call.

        ``save``: name under which to keep the id of the created object;
        ``volume``/``attachment``: names of what to read back afterwards;
        ``count``: record the length of this list in the body;
        ``compare_message``: record the (normalized) error message.
        """
        status, data = self.client.request(
            method, self.path(template), version=version, body=body,
            headers=headers,
            params={k: self.path(v) for k, v in (params or {}).items()})
        version_header = self.client.last_headers.get(
            "OpenStack-API-Version")
        if save and status in (200, 202) and isinstance(data, dict):
            self.ids[save] = next(iter(data.values()))["id"]
        if wait_available and save in self.ids:
            self.wait_volume(save, "available")
        record = {
            "step": name, "method": method, "path": template,
            "version": version,
            "params": sorted(params) if params else None,
            "status": status,
            "version_header": version_header,
            "keys": frozenset(key_paths(data)) if isinstance(
                data, (dict, list)) else frozenset(),
        }
        if compare_message:
            record["message"] = self.normalize(fault_message(data))
        if count:
            record["count"] = (len(data[count]) if isinstance(data, dict)
                               and isinstance(data.get(count), list)
                               else None)
        record.update(self.observe(volume, attachment))
        self.records.append(record)
        return status, data

    def wait_volume(self, name, wanted, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.client.request(
                "GET", self.path("/volumes/{%s}" % name))
            current = body["volume"]["status"] if status == 200 else status
            if current == wanted:
                return
            if time.monotonic() > deadline:
                raise AssertionError("volume %s is %s, not %s after %ss"
                                     % (name, current, wanted, timeout))
            time.sleep(0.1)

    def forget(self, name):
        self.ids.pop(name, None)

    def cleanup_attachments(self, volume):
        """Delete (unrecorded) every attachment of ``volume`` this scenario
        did not name: what a failed call may have left behind."""
        known = set(self.ids.values())
        status, body = self.client.request(
            "GET", "/attachments",
            params={"volume_id": self.ids[volume]})
        for att in body.get("attachments", []):
            if att["id"] not in known:
                self.client.request("DELETE", "/attachments/%s" % att["id"],
                                    headers=SERVICE_ROLE)


# -- the scenario -------------------------------------------------------------

def run_scenario(client):
    """The conformance scenario; returns the list of step records."""
    s = Scenario(client)
    s.ids.update(server1=str(uuid.uuid4()), server2=str(uuid.uuid4()),
                 missing=str(uuid.uuid4()))
    step = s.step

    # Services and types.
    status, body = step("services-list", "GET", "/os-services")
    s.records[-1]["volume_service_up"] = any(
        svc.get("binary") == "cinder-volume" and svc.get("state") == "up"
        for svc in (body or {}).get("services", []))
    step("type-create-multiattach", "POST", "/types", body={"volume_type": {
        "name": "multiattach-%s" % uuid.uuid4().hex[:6],
        "extra_specs": {"multiattach": "<is> True"}}}, save="matype")

    # Volumes.
    step("volume-create-plain", "POST", "/volumes",
         body={"volume": {"size": 1, "name": "plain"}}, save="plain",
         wait_available=True, volume="plain")
    step("volume-create-multiattach", "POST", "/volumes",
         body={"volume": {"size": 1, "name": "shared",
                          "volume_type": s.ids["matype"]}},
         save="shared", wait_available=True, volume="shared")
    step("volume-show-multiattach", "GET", "/volumes/{shared}")

    # The attach flow on the plain volume.
    on_plain = dict(volume="plain")
    step("reserve", "POST", "/attachments", body={"attachment": {
        "volume_uuid": s.ids["plain"], "instance_uuid": s.ids["server1"]}},
        save="att1", attachment="att1", **on_plain)
    step("show-reserved", "GET", "/attachments/{att1}")
    step("update-connector-rw", "PUT", "/attachments/{att1}",
         body={"attachment": {"connector": CONNECTOR}}, attachment="att1",
         **on_plain)
    step("show-after-update", "GET", "/attachments/{att1}")
    step("complete", "POST", "/attachments/{att1}/action",
         body={"os-complete": None}, attachment="att1", **on_plain)
    step("show-attached", "GET", "/attachments/{att1}")
    step("volume-show-attached", "GET", "/volumes/{plain}")
    step("list-by-volume", "GET", "/attachments",
         params={"volume_id": "{plain}"}, count="attachments")
    step("list-detail-by-instance", "GET", "/attachments/detail",
         params={"instance_id": "{server1}"}, count="attachments")

    # Second reservations of a non-multiattach volume.
    step("reserve-other-instance-in-use", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["plain"],
                              "instance_uuid": s.ids["server2"]}},
         compare_message=True, **on_plain)
    step("reserve-same-instance-in-use", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["plain"],
                              "instance_uuid": s.ids["server1"]}},
         save="att2", attachment="att2", **on_plain)
    step("delete-reserved-only", "DELETE", "/attachments/{att2}",
         attachment="att2", count="attachments", **on_plain)
    step("volume-delete-attached", "DELETE", "/volumes/{plain}",
         compare_message=True, **on_plain)
    step("delete-connected-service-role", "DELETE", "/attachments/{att1}",
         headers=SERVICE_ROLE, attachment="att1", count="attachments",
         **on_plain)
    step("show-deleted", "GET", "/attachments/{att1}")

    # A reserved volume refuses another instance too.
    step("reserve-again", "POST", "/attachments", body={"attachment": {
        "volume_uuid": s.ids["plain"], "instance_uuid": s.ids["server1"]}},
        save="att3", attachment="att3", **on_plain)
    step("reserve-other-instance-reserved", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["plain"],
                              "instance_uuid": s.ids["server2"]}},
         compare_message=True, **on_plain)
    step("delete-reserved", "DELETE", "/attachments/{att3}",
         attachment="att3", **on_plain)

    # Mode (3.54).
    step("create-connector-mode-ro", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["plain"],
                              "instance_uuid": s.ids["server1"],
                              "mode": "ro", "connector": CONNECTOR}},
         save="att4", attachment="att4", **on_plain)
    step("delete-mode-ro", "DELETE", "/attachments/{att4}",
         headers=SERVICE_ROLE, attachment="att4", **on_plain)

    # Bad requests on create: nothing may be left behind.
    reserve_plain = {"volume_uuid": s.ids["plain"],
                     "instance_uuid": s.ids["server1"]}
    step("create-mode-at-3.53", "POST", "/attachments", version="3.53",
         body={"attachment": dict(reserve_plain, mode="ro")}, **on_plain)
    step("create-mode-xx", "POST", "/attachments",
         body={"attachment": dict(reserve_plain, mode="xx")}, **on_plain)
    step("create-missing-volume", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["missing"],
                              "instance_uuid": s.ids["server1"]}})
    step("create-volume-uuid-not-uuid", "POST", "/attachments",
         body={"attachment": {"volume_uuid": "not-a-uuid",
                              "instance_uuid": s.ids["server1"]}},
         **on_plain)
    step("create-no-volume-uuid", "POST", "/attachments",
         body={"attachment": {"instance_uuid": s.ids["server1"]}},
         **on_plain)
    step("create-connector-without-initiator", "POST", "/attachments",
         body={"attachment": dict(reserve_plain,
                                  connector={"host": "compute-1"})},
         **on_plain)
    s.cleanup_attachments("plain")  # real Cinder leaves a reservation

    # Bad requests on update.
    step("reserve-for-bad-updates", "POST", "/attachments",
         body={"attachment": reserve_plain}, save="att6", attachment="att6",
         **on_plain)
    on_att6 = dict(attachment="att6", **on_plain)
    step("update-empty-connector", "PUT", "/attachments/{att6}",
         body={"attachment": {"connector": {}}}, **on_att6)
    step("update-connector-string", "PUT", "/attachments/{att6}",
         body={"attachment": {"connector": "x"}}, **on_att6)
    step("update-no-connector", "PUT", "/attachments/{att6}",
         body={"attachment": {}}, **on_att6)
    step("update-connector-without-host", "PUT", "/attachments/{att6}",
         body={"attachment": {"connector": {"initiator": "iqn.x"}}},
         **on_att6)
    step("update-connector-without-initiator", "PUT", "/attachments/{att6}",
         body={"attachment": {"connector": {"host": "compute-1"}}},
         **on_att6)

    # Missing attachments and microversion gates.
    step("show-missing", "GET", "/attachments/{missing}")
    step("update-missing", "PUT", "/attachments/{missing}",
         body={"attachment": {"connector": CONNECTOR}})
    step("complete-missing", "POST", "/attachments/{missing}/action",
         body={"os-complete": None})
    step("delete-missing", "DELETE", "/attachments/{missing}",
         headers=SERVICE_ROLE)
    step("complete-at-3.43", "POST", "/attachments/{att6}/action",
         version="3.43", body={"os-complete": None}, **on_att6)
    step("create-at-3.26", "POST", "/attachments", version="3.26",
         body={"attachment": reserve_plain}, **on_plain)
    step("show-at-3.27", "GET", "/attachments/{att6}", version="3.27")
    step("delete-after-bad-updates", "DELETE", "/attachments/{att6}",
         **on_att6)

    # Read-only volumes (the os-update_readonly_flag admin metadata).
    step("readonly-set", "POST", "/volumes/{plain}/action",
         body={"os-update_readonly_flag": {"readonly": True}}, **on_plain)
    step("create-connector-readonly-volume", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["plain"],
                              "instance_uuid": s.ids["server1"],
                              "connector": CONNECTOR}},
         save="att5", attachment="att5", **on_plain)
    step("delete-readonly-attachment", "DELETE", "/attachments/{att5}",
         headers=SERVICE_ROLE, attachment="att5", **on_plain)
    step("readonly-unset", "POST", "/volumes/{plain}/action",
         body={"os-update_readonly_flag": {"readonly": False}}, **on_plain)
    step("reserve-after-readonly-unset", "POST", "/attachments",
         body={"attachment": reserve_plain}, save="att7", attachment="att7",
         **on_plain)
    step("delete-after-readonly-unset", "DELETE", "/attachments/{att7}",
         attachment="att7", **on_plain)

    # Multiattach: concurrent reservations, two attachments, detach each.
    on_shared = dict(volume="shared")
    step("ma-reserve-1", "POST", "/attachments", body={"attachment": {
        "volume_uuid": s.ids["shared"], "instance_uuid": s.ids["server1"]}},
        save="m1", attachment="m1", **on_shared)
    step("ma-reserve-2-while-reserved", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["shared"],
                              "instance_uuid": s.ids["server2"]}},
         save="m2", attachment="m2", compare_message=True, **on_shared)
    if "m2" in s.ids:  # volattach: keep both records on the same path
        client.request("DELETE", s.path("/attachments/{m2}"))
        s.forget("m2")
    step("ma-update-1", "PUT", "/attachments/{m1}",
         body={"attachment": {"connector": CONNECTOR}}, attachment="m1",
         **on_shared)
    step("ma-reserve-2-while-attaching", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["shared"],
                              "instance_uuid": s.ids["server2"]}},
         save="m2", attachment="m2", compare_message=True, **on_shared)
    if "m2" in s.ids:
        client.request("DELETE", s.path("/attachments/{m2}"))
        s.forget("m2")
    step("ma-complete-1", "POST", "/attachments/{m1}/action",
         body={"os-complete": None}, attachment="m1", **on_shared)
    step("ma-reserve-2-in-use", "POST", "/attachments",
         body={"attachment": {"volume_uuid": s.ids["shared"],
                              "instance_uuid": s.ids["server2"]}},
         save="m2", attachment="m2", **on_shared)
    step("ma-update-2", "PUT", "/attachments/{m2}",
         body={"attachment": {"connector": CONNECTOR_2}}, attachment="m2",
         **on_shared)
    step("ma-complete-2", "POST", "/attachments/{m2}/action",
         body={"os-complete": None}, attachment="m2", **on_shared)
    step("ma-volume-show-two-attachments", "GET", "/volumes/{shared}")
    step("ma-list-by-volume", "GET", "/attachments",
         params={"volume_id": "{shared}"}, count="attachments")
    step("ma-delete-1", "DELETE", "/attachments/{m1}", headers=SERVICE_ROLE,
         attachment="m1", count="attachments", **on_shared)
    step("ma-delete-2", "DELETE", "/attachments/{m2}", headers=SERVICE_ROLE,
         attachment="m2", count="attachments", **on_shared)

    # Volumes go.
    step("volume-delete-plain", "DELETE", "/volumes/{plain}")
    step("volume-delete-multiattach", "DELETE", "/volumes/{shared}")
    return s.records


# -- what volattach must do on its own ----------------------------------------

# step -> (status, volume status after, attachment status after): the state
# table of cinder-attachments-api.md and its error list, checked on
# volattach's record alone.
VOLATTACH_STATE_TABLE = {
    "reserve": (200, "reserved", "reserved"),
    "update-connector-rw": (200, "attaching", "attaching"),
    "complete": (204, "in-use", "attached"),
    "reserve-other-instance-in-use": (400, "in-use", None),
    "reserve-same-instance-in-use": (200, "in-use", "reserved"),
    "delete-reserved-only": (200, "in-use", "gone"),
    "volume-delete-attached": (400, "in-use", None),
    "delete-connected-service-role": (200, "available", "gone"),
    "reserve-other-instance-reserved": (400, "reserved", None),
    "create-connector-mode-ro": (200, "attaching", "attaching"),
    "create-mode-at-3.53": (400, "available", None),
    "create-mode-xx": (400, "available", None),
    "create-missing-volume": (404, None, None),
    "create-connector-without-initiator": (400, "available", None),
    "update-empty-connector": (400, "reserved", "reserved"),
    "update-connector-without-host": (400, "reserved", "reserved"),
    "show-missing": (404, None, None),
    "complete-at-3.43": (404, "reserved", "reserved"),
    "create-at-3.26": (404, "reserved", None),
    "ma-reserve-2-while-reserved": (200, "reserved", "reserved"),
    "ma-reserve-2-while-attaching": (200, "attaching", "reserved"),
    "ma-delete-1": (200, "in-use", "gone"),
    "ma-delete-2": (200, "available", "gone"),
}


# -- where volattach goes further ---------------------------------------------

# Each entry allows ONE documented difference, for the steps matching
# ``steps`` (fnmatch pattern):
#   {"field": F, "cinder": A, "volattach": B}  the recorded field F is A on
#       real Cinder and B on volattach;
#   {"extra_keys": [patterns]}  volattach's body has these key paths more;
#   {"missing_keys": [patterns]}  volattach's body lacks these key paths.
# Every entry must be used by the comparison (see test_allowed_differences_
# are_all_needed).
BUG_1747985 = ("Cinder bug 1747985: real Cinder refuses a second "
               "reservation of a multiattach volume while another "
               "attachment is reserved or attaching; the multiattach-"
               "enhancements spec needs it fixed for multi-create, and "
               "volattach fixes it.")
BAD_CONNECTOR = ("No 500 for a bad connector (cinder-attachments-api.md, "
                 "'go further'): real Cinder answers 500 computeFault for a "
                 "connector without host on PUT and for a connector without "
                 "initiator on POST (leaving the reservation behind); "
                 "volattach answers 400 badRequest and leaves nothing.")
ALLOWED_DIFFERENCES = [
    # Keys the spec asks for.
    {"steps": "show-*", "why": (
        "cinder-new-attach-apis spec: attachment_get reports the "
        "attachments sharing this one's host connection"),
     "extra_keys": ["attachment.shared_connections_by_attachment"]},
    {"steps": "*update-*", "why": (
        "the PUT answers with the connected attachment (real Cinder's body "
        "is stale) and its shared connections, so a client needs no GET"),
     "extra_keys": ["attachment.shared_connections_by_attachment"]},
    {"steps": "list-detail-*", "why": (
        "same key on the detailed list (each item is the attachment view)"),
     "extra_keys": ["attachments[].shared_connections_by_attachment"]},
    {"steps": "*", "why": (
        "connection_info of volattach's fake iSCSI backend carries what a "
        "real iSCSI driver returns (target portal/iqn/lun, volume_id) and "
        "the shared-target id the detach-race fix needs; Cinder's fake "
        "driver returns none of them"),
     "extra_keys": ["*connection_info.target_discovered",
                    "*connection_info.target_portal",
                    "*connection_info.target_iqn",
                    "*connection_info.target_lun",
                    "*connection_info.volume_id",
                    "*connection_info.shared_target_id"]},
    # Bug 1747985, fixed.
    {"steps": "ma-reserve-2-while-*", "why": BUG_1747985,
     "field": "status", "cinder": 400, "volattach": 200},
    {"steps": "ma-reserve-2-while-*", "why": BUG_1747985,
     "missing_keys": ["badRequest", "badRequest.*"],
     "extra_keys": ["attachment", "attachment.*"]},
    {"steps": "ma-reserve-2-while-*", "why": BUG_1747985,
     "field": "attachment_status", "cinder": None, "volattach": "reserved"},
    {"steps": "ma-reserve-2-while-*", "why": BUG_1747985,
     "field": "attach_mode", "cinder": None, "volattach": "null"},
    {"steps": "ma-reserve-2-while-reserved", "why": BUG_1747985,
     "field": "message", "volattach": None,
     "cinder": "Invalid volume: Volume {shared} status must be available or "
               "in-use or downloading to reserve, but the current status is "
               "reserved."},
    {"steps": "ma-reserve-2-while-attaching", "why": BUG_1747985,
     "field": "message", "volattach": None,
     "cinder": "Invalid volume: Volume {shared} status must be available or "
               "in-use or downloading to reserve, but the current status is "
               "attaching."},
    # Bad connectors.
    {"steps": "update-connector-without-host", "why": BAD_CONNECTOR,
     "field": "status", "cinder": 500, "volattach": 400},
    {"steps": "create-connector-without-initiator", "why": BAD_CONNECTOR,
     "field": "status", "cinder": 500, "volattach": 400},
    {"steps": "create-connector-without-initiator", "why": BAD_CONNECTOR,
     "field": "volume_status", "cinder": "reserved", "volattach": "available"},
    {"steps": "update-connector-without-host|create-connector-without-"
              "initiator", "why": BAD_CONNECTOR,
     "missing_keys": ["computeFault", "computeFault.*"],
     "extra_keys": ["badRequest", "badRequest.*"]},
    # Cinder's readonly flag, once unset.
    {"steps": "reserve-after-readonly-unset", "why": (
        "real Cinder bug: os-update_readonly_flag false stores the admin "
        "metadata readonly='False', a non-empty string that attachment_"
        "create takes as true, so every later attachment of the volume is "
        "attach_mode ro; volattach's flag is a boolean"),
     "field": "attach_mode", "cinder": "ro", "volattach": "null"},
    # Read-only attach is read-only on the host too.
    {"steps": "create-connector-mode-ro", "why": (
        "volume-multiattach-enhancements spec: an attachment made with mode "
        "ro must be read-only on the host; real Cinder stores attach_mode "
        "ro but its connection_info still says access_mode rw"),
     "field": "access_mode", "cinder": "rw", "volattach": "ro"},
]


def _step_matches(entry, step):
    return any(fnmatch.fnmatchcase(step, pattern)
               for pattern in entry["steps"].split("|"))


def _keys_covered(keys, patterns):
    return all(any(fnmatch.fnmatchcase(k, p) for p in patterns) for k in keys)


def compare(cinder_records, volattach_records):
    """(differences not allowed, indexes of the table entries used)."""
    problems, used = [], set()
    cinder_steps = [(r["step"], r["method"], r["path"]) for r in
                    cinder_records]
    volattach_steps = [(r["step"], r["method"], r["path"]) for r in
                       volattach_records]
    if cinder_steps != volattach_steps:
        return ["the scenario took different paths:\n  cinder:    %s\n  "
                "volattach: %s" % (cinder_steps, volattach_steps)], used
    for number, (c, v) in enumerate(zip(cinder_records, volattach_records),
                                    1):
        label = "step %d %s (%s %s @%s)" % (number, c["step"], c["method"],
                                            c["path"], c["version"])
        entries = [(i, e) for i, e in enumerate(ALLOWED_DIFFERENCES)
                   if _step_matches(e, c["step"])]
        for field in sorted(set(c) | set(v)):
            if field == "keys":
                continue
            cv, vv = c.get(field), v.get(field)
            if cv == vv:
                continue
            allowed = [i for i, e in entries if e.get("field") == field
                       and e["cinder"] == cv and e["volattach"] == vv]
            if allowed:
                used.update(allowed)
            else:
                problems.append("%s: %s is %r on real Cinder, %r on "
                                "volattach" % (label, field, cv, vv))
        extra = v["keys"] - c["keys"]
        missing = c["keys"] - v["keys"]
        for kind, keys in (("extra_keys", extra), ("missing_keys", missing)):
            if not keys:
                continue
            unexplained = set(keys)
            for i, e in entries:
                covered = {k for k in unexplained
                           if _keys_covered([k], e.get(kind, ()))}
                if covered:
                    used.add(i)
                    unexplained -= covered
            if unexplained:
                problems.append("%s: volattach's body %s %s" % (
                    label, "has more keys:" if kind == "extra_keys"
                    else "lacks keys:", sorted(unexplained)))
    return problems, used


def format_records(records):
    lines = []
    for r in records:
        state = " ".join("%s=%s" % (k, r[k]) for k in (
            "volume_status", "attachment_status", "attach_mode",
            "access_mode", "count", "message") if k in r)
        lines.append("%-36s %-6s %-32s %s -> %s  %s" % (
            r["step"], r["method"], r["path"], r["version"], r["status"],
            state))
    return "\n".join(lines)


# -- fixtures and tests -------------------------------------------------------

@pytest.fixture(scope="module")
def volattach_volume(tmp_path_factory):
    """volattach's volume service in this process, on a temporary SQLite
    database: (root URL, server)."""
    from volattach.conf import CONF
    from volattach.volume import service

    state_path = tmp_path_factory.mktemp("volattach-volume")
    CONF([], project="volattach", default_config_files=[])
    settings = {
        (None, "state_path"): str(state_path),
        (None, "report_interval"): 1,
        ("volume", "connection"): "sqlite:///%s/volume.sqlite" % state_path,
        ("volume", "port"): utils.free_port(),
        ("volume", "host"): "cinderhost",
        ("volume", "auth_strategy"): "noauth",
    }
    for (group, name), value in settings.items():
        CONF.set_override(name, value, group=group)
    try:
        service.prepare(CONF)
        server, thread = service.serve_in_thread(CONF, host="127.0.0.1")
        try:
            yield "http://127.0.0.1:%d" % server.port
        finally:
            server.shutdown()
            thread.join(5)
    finally:
        for group, name in settings:
            CONF.clear_override(name, group=group)


@pytest.fixture(scope="module")
def records(real_cinder, volattach_volume):
    """The scenario's records on real Cinder and on volattach (the same
    client; only the noauth token differs: real Cinder's takes no roles and
    makes everyone admin, volattach's names the admin role)."""
    cinder = run_scenario(Client(real_cinder, real_cinder_mod.TOKEN))
    volattach = run_scenario(Client(volattach_volume,
                                    real_cinder_mod.TOKEN + ":admin"))
    return cinder, volattach


@pytest.mark.timeout(900)  # the first run installs Cinder (30-60 s)
def test_volattach_behaves_like_real_cinder(records):
    cinder, volattach = records
    problems, _used = compare(cinder, volattach)
    assert not problems, (
        "volattach's volume service differs from real Cinder 29 where "
        "ALLOWED_DIFFERENCES does not allow it:\n  %s\n\nreal Cinder:\n%s"
        "\n\nvolattach:\n%s" % ("\n  ".join(problems),
                                format_records(cinder),
                                format_records(volattach)))


def test_allowed_differences_are_all_needed(records):
    cinder, volattach = records
    _problems, used = compare(cinder, volattach)
    unused = [e for i, e in enumerate(ALLOWED_DIFFERENCES) if i not in used]
    assert not unused, (
        "ALLOWED_DIFFERENCES entries that no difference needs any more "
        "(remove them, or the scenario lost a step): %s" % unused)


def test_volattach_follows_the_state_table(records):
    _cinder, volattach = records
    by_step = {r["step"]: r for r in volattach}
    wrong = []
    for step_name, expected in VOLATTACH_STATE_TABLE.items():
        r = by_step[step_name]
        got = (r["status"], r.get("volume_status"),
               r.get("attachment_status"))
        # None in the table: that side was not observed.
        got = tuple(g if e is not None else None
                    for g, e in zip(got, expected))
        if got != expected:
            wrong.append("%s: expected %s, got %s" % (step_name, expected,
                                                      got))
    assert not wrong, "\n".join(wrong)


def test_scenario_really_ran_on_real_cinder(records):
    """Guards the comparison itself: real Cinder's record shows the facts
    the reference documents (else the harness, not Cinder, is broken)."""
    cinder, _volattach = records
    by_step = {r["step"]: r for r in cinder}
    assert by_step["services-list"]["volume_service_up"] is True
    assert by_step["complete"]["volume_status"] == "in-use"
    assert by_step["complete"]["attachment_status"] == "attached"
    assert by_step["ma-reserve-2-while-reserved"]["status"] == 400
    assert by_step["ma-delete-2"]["volume_status"] == "available"
    assert by_step["reserve-other-instance-in-use"]["message"] == (
        "Invalid volume: Volume {plain} status must be available or "
        "downloading to reserve, but the current status is in-use.")


def _record(step, status=200, keys=("attachment", "attachment.id"), **more):
    return dict({"step": step, "method": "POST", "path": "/attachments",
                 "version": MV, "status": status, "keys": frozenset(keys)},
                **more)


def test_compare_flags_unlisted_differences_and_allows_listed_ones():
    """The gate itself, on synthetic records (no service involved)."""
    # A status difference nobody listed fails, with the step in the message.
    problems, _ = compare([_record("reserve", 200)],
                          [_record("reserve", 201)])
    assert problems == ["step 1 reserve (POST /attachments @3.54): status "
                        "is 200 on real Cinder, 201 on volattach"]
    # A missing key fails; an extra key fails unless a pattern covers it.
    problems, _ = compare([_record("show-x", keys=("attachment",
                                                   "attachment.id"))],
                          [_record("show-x", keys=("attachment",))])
    assert "lacks keys: ['attachment.id']" in problems[0]
    problems, used = compare(
        [_record("show-x")],
        [_record("show-x", keys=("attachment", "attachment.id",
                                 "attachment.shared_connections_by_"
                                 "attachment"))])
    assert problems == [] and used
    problems, _ = compare([_record("reserve")],
                          [_record("reserve", keys=(
                              "attachment", "attachment.id",
                              "attachment.shared_connections_by_"
                              "attachment"))])
    assert len(problems) == 1  # that key is only allowed on show-* steps
    # A listed difference passes only with exactly the listed values.
    ok, _ = compare([_record("ma-reserve-2-while-reserved", 400,
                             keys=("badRequest",), attachment_status=None,
                             attach_mode=None)],
                    [_record("ma-reserve-2-while-reserved", 200,
                             keys=("attachment",),
                             attachment_status="reserved",
                             attach_mode="null")])
    assert ok == []
    bad, _ = compare([_record("ma-reserve-2-while-reserved", 400,
                              keys=("badRequest",))],
                     [_record("ma-reserve-2-while-reserved", 500,
                              keys=("badRequest",))])
    assert len(bad) == 1
    # Different paths through the scenario are reported as such.
    bad, _ = compare([_record("a")], [_record("b")])
    assert "different paths" in bad[0]
