"""volattach-manage with the configuration file volattach-all runs with
(issue 33, item 7): the same loopback defaults as volattach-all (noauth
towards its volume service, its computes on its in-process bus), with no
extra settings."""
import pytest

from tests.functional.allinone_process import AllInOneProcess

pytestmark = pytest.mark.timeout(180)


def test_manage_works_with_the_all_in_one_config_file(tmp_path):
    # ports moved, nothing else: the file an operator writes first
    deployment = AllInOneProcess(tmp_path).start()
    try:
        assert "auth_strategy" not in deployment.config_file.read_text()
        result = deployment.manage("attachments", "reconcile", "--dry-run")
        assert result.returncode == 0, result.stderr
        assert "dry run (grace" in result.stdout, result.stdout
        assert "in-process bus" in result.stdout     # as --no-unplug
        listed = deployment.manage("service", "list")
        assert listed.returncode == 0, listed.stderr
        assert "volattach-conductor" in listed.stdout
    finally:
        deployment.stop()


def test_a_daemon_deployment_file_keeps_the_daemons_defaults(tmp_path):
    """A file naming a broker is a daemon deployment's: no noauth default
    there (the volume service's keystone is asked for)."""
    from oslo_config import cfg
    from volattach import conf as volattach_conf
    from volattach.cmd import manage
    path = tmp_path / "v.conf"
    path.write_text("[DEFAULT]\ntransport_url = rabbit://u:p@127.0.0.1/\n")
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf(["--config-file", str(path)], default_config_files=[])
    assert not manage._embedded(conf)
    path.write_text("[api]\nport = 18000\n")
    conf(["--config-file", str(path)], default_config_files=[])
    assert manage._embedded(conf)
    path.write_text("[cinder]\nendpoint = http://cinder.example:8776/v3\n")
    conf(["--config-file", str(path)], default_config_files=[])
    assert not manage._embedded(conf)
