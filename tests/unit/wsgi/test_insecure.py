"""volattach.wsgi.insecure: noauth only on loopback unless allowed."""
import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach.wsgi import insecure


def _conf(overrides):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf([], default_config_files=[])
    for (group, name), value in overrides.items():
        conf.set_override(name, value, group=group)
    return conf


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True),
    ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
    ("::", False), ("192.0.2.10", False), ("no-such-host.invalid", False),
])
def test_is_loopback(host, loopback):
    assert insecure.is_loopback(host) is loopback


@pytest.mark.parametrize("check, group", [
    (insecure.check_api, "api"), (insecure.check_volume, "volume")])
def test_noauth_on_any_address_is_refused_naming_the_option(check, group):
    conf = _conf({(group, "auth_strategy"): "noauth",
                    (group, "listen"): "0.0.0.0"})
    with pytest.raises(insecure.InsecureNoauth) as exc:
        check(conf)
    assert "[DEFAULT] allow_insecure_noauth" in str(exc.value)


@pytest.mark.parametrize("check, group", [
    (insecure.check_api, "api"), (insecure.check_volume, "volume")])
def test_allowed_keystone_or_loopback_start(check, group):
    check(_conf({(group, "auth_strategy"): "noauth",
                   (group, "listen"): "0.0.0.0",
                   (None, "allow_insecure_noauth"): True}))
    check(_conf({(group, "auth_strategy"): "keystone",
                   (group, "listen"): "0.0.0.0"}))
    check(_conf({(group, "auth_strategy"): "noauth",
                   (group, "listen"): "127.0.0.1"}))


def test_all_in_one_refuses_before_starting_anything(monkeypatch):
    from volattach.cmd import all as cmd_all
    conf = _conf({("api", "listen"): "0.0.0.0"})
    started = []
    monkeypatch.setattr("volattach.objects.register_all",
                        lambda: started.append("objects"))
    with pytest.raises(insecure.InsecureNoauth):
        cmd_all.AllInOne(conf).start()
    assert conf.api.auth_strategy == "noauth"
    assert started == []
