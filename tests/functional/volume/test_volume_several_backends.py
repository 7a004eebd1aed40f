"""Several backends in one volume service ([volume] enabled_backends):
volume types land on their backend, per-volume calls go to it, a retype
moves an attached volume to another backend through the compute's swap
(a stand-in compute API; the test plays the compute side)."""
import pytest
from oslo_config import cfg

from tests.functional.volume.test_volume_migration import (
    _action, _play_compute_swap, _wait, compute)  # noqa: F401 (fixture)
from tests.functional.volume.volume_testlib import (ADMIN, Api, USER1,
                                                    connector)
from volattach import conf as volattach_conf
from volattach.volume import backend
from volattach.volume import service
from volattach.volume import wsgi

CONF_TEXT = """
[volume]
host = testhost
connection = sqlite:///%(dir)s/v.sqlite
compute_endpoint = %(compute)s
enabled_backends = fake-1, fake-2

[fake-1]
volume_backend = fake
volume_backend_name = silver

[fake-2]
volume_backend = fake
volume_backend_name = gold
shared_targets = true
"""


def make_conf(tmp_path, text):
    path = tmp_path / "volattach.conf"
    path.write_text(text)
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    volattach_conf.set_embedded_defaults(conf)  # noauth
    conf(["--config-file", str(path)], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    return conf


@pytest.fixture
def api(tmp_path, compute):  # noqa: F811
    conf = make_conf(tmp_path, CONF_TEXT % {"dir": tmp_path,
                                            "compute": compute.url})
    service.prepare(conf)
    return Api(wsgi.make_app(conf))


def _volume_of_type(api, type_name):
    vol = api.create_volume(volume_type=type_name)
    return api.volume(vol["id"], token=ADMIN)


def _connection(api, volume_id):
    att = api.attach(volume_id)
    return att, api.attachment(att)["connection_info"]


def test_types_land_on_their_backends(api):
    api.create_type(name="silver", extra_specs={
        "volume_backend_name": "silver"})
    api.create_type(name="gold", extra_specs={"volume_backend_name": "gold"})
    api.create_type(name="bronze", extra_specs={
        "volume_backend_name": "bronze"})
    # one cinder-volume service per backend
    r = api.get("/os-services", token=ADMIN)
    assert r.status_code == 200, r.text
    assert sorted(s["host"] for s in r.json["services"]) == [
        "testhost@gold", "testhost@silver"]
    by_host = {s["host"]: s for s in r.json["services"]}

    silver = _volume_of_type(api, "silver")
    gold = _volume_of_type(api, "gold")
    untyped = _volume_of_type(api, None)
    assert silver["os-vol-host-attr:host"] == "testhost@silver#silver"
    assert gold["os-vol-host-attr:host"] == "testhost@gold#gold"
    # no type (the default one, no volume_backend_name): the first backend
    assert untyped["os-vol-host-attr:host"] == "testhost@silver#silver"
    assert (silver["status"], gold["status"]) == ("available", "available")
    # each volume names its backend's service, and its shared_targets
    assert gold["service_uuid"] != silver["service_uuid"]
    assert (gold["shared_targets"], silver["shared_targets"]) == (True,
                                                                  False)

    # the connection is built by the volume's own backend
    _, info = _connection(api, gold["id"])
    assert ":gold:host-" in info["target_iqn"]   # gold: shared targets
    _, info = _connection(api, silver["id"])
    assert ":silver:volume-%s" % silver["id"] in info["target_iqn"]

    # a type naming no enabled backend: error, no host (Cinder's scheduler)
    bronze = _volume_of_type(api, "bronze")
    assert bronze["status"] == "error"
    assert bronze["os-vol-host-attr:host"] is None
    # and an errored volume deletes
    assert api.delete("/volumes/%s" % bronze["id"]).status_code == 202
    assert by_host["testhost@gold"]["state"] == "up"


def test_retype_moves_an_attached_volume_to_another_backend(api, compute):  # noqa: F811,E501
    api.create_type(name="silver", extra_specs={
        "volume_backend_name": "silver"})
    api.create_type(name="gold", extra_specs={"volume_backend_name": "gold"})
    api.create_type(name="bronze", extra_specs={
        "volume_backend_name": "bronze"})
    vol = api.create_volume(volume_type="silver")
    old_att = api.attach(vol["id"])
    # moving needs on-demand; an unknown backend is refused
    r = _action(api, vol["id"], {"os-retype": {"new_type": "gold"}},
                token=USER1)
    assert r.status_code == 400 and "migration policy" in r.text
    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "bronze", "migration_policy": "on-demand"}},
        token=USER1)
    assert r.status_code == 400 and "No valid backend" in r.text
    assert api.volume(vol["id"], token=ADMIN)["migration_status"] is None

    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "gold", "migration_policy": "on-demand"}}, token=USER1)
    assert r.status_code == 202, r.text
    _wait(lambda: compute.swaps)
    new_id = compute.swaps[0][3]["volumeAttachment"]["volumeId"]
    target = api.volume(new_id, token=ADMIN)
    assert target["os-vol-host-attr:host"] == "testhost@gold#gold"
    saved, new_att = _play_compute_swap(api, vol["id"], new_id, old_att)
    assert saved == vol["id"]
    done = api.volume(vol["id"], token=ADMIN)
    assert (done["status"], done["volume_type"],
            done["os-vol-host-attr:host"]) == (
        "in-use", "gold", "testhost@gold#gold")
    # its connections now come from gold (the migrated volume keeps its
    # own shared_targets flag, so gold gives it a target of its own)
    info = api.attachment(new_att)["connection_info"]
    assert ":gold:volume-" in info["target_iqn"]
    r = api.put("/attachments/%s" % new_att,
                {"attachment": {"connector": connector()}})
    assert r.status_code == 200 and ":gold:" in (
        r.json["attachment"]["connection_info"]["target_iqn"])

    # and back, the available volume (fake: no data to move) in place
    assert api.delete("/attachments/%s" % new_att).status_code == 200
    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "silver", "migration_policy": "on-demand"}},
        token=USER1)
    assert r.status_code == 202, r.text
    back = api.volume(vol["id"], token=ADMIN)
    assert (back["volume_type"], back["os-vol-host-attr:host"]) == (
        "silver", "testhost@silver#silver")
    assert len(compute.swaps) == 1


def test_unknown_backend_refuses_to_start_naming_the_section(tmp_path):
    conf = make_conf(tmp_path, "[volume]\nconnection = sqlite:///%s/v.sqlite"
                     "\nenabled_backends = fake-1, ceph-1\n[fake-1]\n"
                     "volume_backend = fake\n" % tmp_path)
    with pytest.raises(backend.BackendConfigError) as err:
        service.prepare(conf)
    assert "[ceph-1]" in str(err.value)
