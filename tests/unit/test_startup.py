"""volattach.startup: the state directory's lock and the unknown-option
finder (issue 33, item 4)."""
import os
import signal
import subprocess
import sys

import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import startup


def test_state_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    held = startup.StateLock(str(tmp_path)).acquire()
    try:
        with pytest.raises(startup.StartupError) as exc:
            startup.StateLock(str(tmp_path)).acquire()
        assert exc.value.status == startup.EXIT_IN_USE
        assert "(pid %d," % os.getpid() in str(exc.value)
    finally:
        held.release()
    startup.StateLock(str(tmp_path)).acquire().release()


def test_a_crashed_holder_does_not_block(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from volattach import startup; "
         "startup.StateLock(sys.argv[1]).acquire(); print('held', flush=True);"
         " time.sleep(60)", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(startup.StartupError) as exc:
            startup.StateLock(str(tmp_path)).acquire()
        assert "(pid %d," % holder.pid in str(exc.value)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    # the kernel dropped the dead holder's lock; its PID stays in the file
    lock = startup.StateLock(str(tmp_path)).acquire()
    with open(lock.path) as f:
        assert f.read().strip() == str(os.getpid())
    lock.release()


def _conf(tmp_path, text):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    path = tmp_path / "v.conf"
    path.write_text(text)
    conf(["--config-file", str(path)], default_config_files=[])
    return conf


def test_check_values_names_the_option_and_value(tmp_path):
    conf = _conf(tmp_path, "[wsgi]\nthreads = many\n")
    with pytest.raises(startup.StartupError) as exc:
        startup.check_values(conf)
    assert str(exc.value).startswith(
        "[wsgi] threads: invalid value 'many' in %s: " % (tmp_path / "v.conf"))
    assert exc.value.status == startup.EXIT_CONFIG


def test_unknown_options_in_known_sections_only(tmp_path):
    conf = _conf(tmp_path, "[DEFAULT]\ntransport_url = rabbit://h\n"
                           "report_intervall = 3\n"
                           "[volume]\nbackend = fake\nzzzz = 1\n"
                           "[oslo_middleware]\nmax_request_body_size = 9\n"
                           "[some_backend]\nvolume_backend = file\n")
    assert sorted(startup.unknown_options(conf)) == [
        ("DEFAULT", "report_intervall", "report_interval"),
        ("volume", "zzzz", None)]
    assert startup.unknown_option_lines(conf)[-1] == (
        "[volume] zzzz: unknown option, ignored")


def test_the_auth_plugin_options_of_cinder_and_glance_are_known(tmp_path):
    conf = _conf(tmp_path, "[glance]\nendpoint = http://g\nauth_type = password\n"
                           "auth_url = http://k/v3\nusername = u\n"
                           "usernme = u\n"
                           "[cinder]\nauth_type = password\npassword = p\n")
    assert startup.unknown_options(conf) == [("glance", "usernme", "username")]
