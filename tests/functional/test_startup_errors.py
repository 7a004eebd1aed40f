"""Start-up mistakes end in one line, an exit status and nothing left
(issue 33, item 4; ``volattach.startup``).

Each case runs the console script as a process, as an operator would:
a configuration error exits 2, something in the way (a state directory
another volattach-all holds) exits 1; stderr ends with one line naming the
cause and the option, with no traceback.  Drivers' missing packages are
hidden by a module on ``PYTHONPATH`` that raises ImportError.
"""
import os
import subprocess

import pytest

from tests.functional.allinone_process import AllInOneProcess
from tests.functional.allinone_process import script
from tests import utils

pytestmark = pytest.mark.timeout(120)


def _env(tmp_path, hide=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["HOME"] = str(tmp_path / "home")
    if hide:
        hidden = tmp_path / "hidden"
        for module in hide:
            path = hidden.joinpath(*module.split("."))
            path.mkdir(parents=True, exist_ok=True)
            (path / "__init__.py").write_text(
                "raise ImportError(\"No module named %s (hidden by the "
                "test)\")\n" % module)
        env["PYTHONPATH"] = str(hidden)
    return env


def _conf(tmp_path, text="", **changes):
    """A configuration file on free ports; ``changes``: ``{"section":
    "key = value"}`` lines replacing the key's default line."""
    sections = {
        "DEFAULT": {"state_path": str(tmp_path / "state")},
        "api": {"port": str(utils.free_port())},
        "volume": {"port": str(utils.free_port()),
                   "volumes_dir": str(tmp_path / "volumes")},
    }
    for section, line in changes.items():
        key, value = (part.strip() for part in line.split("=", 1))
        sections.setdefault(section, {})[key] = value
    path = tmp_path / "volattach.conf"
    path.write_text("".join(
        "[%s]\n%s" % (name, "".join("%s = %s\n" % kv
                                     for kv in values.items()))
        for name, values in sections.items()) + text)
    return path


def _run(argv, env, timeout=60):
    return subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _last_line(result):
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines, result
    return lines[-1]


def _storage_daemons_of(tmp_path):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode(errors="replace")
        except OSError:
            continue
        if "qemu-storage-daemon" in argv and str(tmp_path) in argv:
            found.append(int(pid))
    return found


CASES = {
    "missing config file": (
        None, [], "--config-file %(tmp)s/nope.conf: no such file"),
    "port not a number": (
        ("api", "port = notaport"), [], "[api] port: invalid value 'notaport'"),
    "port out of range": (
        ("api", "port = 70000"), [], "[api] port: invalid value '70000'"),
    "log dir missing": (
        None, ["--log-dir", "%(tmp)s/no-such-dir"],
        "--log-dir %(tmp)s/no-such-dir: no such directory"),
    "state path not creatable": (
        ("DEFAULT", "state_path = /proc/volattach-state"), [],
        "[DEFAULT] state_path /proc/volattach-state: cannot create it"),
    "sqlite directory missing": (
        ("database", "connection = sqlite:///%(tmp)s/no/dir/x.sqlite"), [],
        "[database] connection = sqlite:///%(tmp)s/no/dir/x.sqlite: no such "
        "directory"),
    "database URL unusable": (
        ("database", "connection = postgresql+psycopg2://u:secret@127.0.0.1:1/x"),
        [], "[database] connection = postgresql+psycopg2://u:***@127.0.0.1:1/x:"
            " cannot open the database"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_all_in_one_configuration_error_is_one_line(tmp_path, case):
    option, extra, expected = CASES[case]
    fmt = {"tmp": tmp_path}
    changes = {}
    if option is not None:
        changes[option[0]] = option[1] % fmt
    path = _conf(tmp_path, **changes)
    config = (str(tmp_path / "nope.conf") if case == "missing config file"
              else str(path))
    result = _run([script("volattach-all"), "--config-file", config]
                  + [a % fmt for a in extra], _env(tmp_path))
    assert result.returncode == 2, result
    assert _last_line(result) == result.stderr.strip().splitlines()[-1]
    assert _last_line(result).startswith(
        "volattach-all: " + expected % fmt), result.stderr
    assert "secret" not in result.stderr


@pytest.mark.parametrize("daemon", ["volattach-all", "volattach-compute"])
def test_libvirt_driver_without_libvirt_python(tmp_path, daemon):
    path = _conf(tmp_path, "[compute]\nvirt_driver = libvirt\n")
    result = _run([script(daemon), "--config-file", str(path)],
                  _env(tmp_path, hide=["libvirt"]))
    assert result.returncode == 2, result
    assert _last_line(result).startswith(
        "%s: [compute] virt_driver = libvirt needs the Python module "
        "libvirt" % daemon), result.stderr


@pytest.mark.parametrize("daemon", ["volattach-all", "volattach-volume"])
def test_file_backend_without_qemu_qmp_starts_no_daemon(tmp_path, daemon):
    path = _conf(tmp_path, volume="backend = file")
    result = _run([script(daemon), "--config-file", str(path)],
                  _env(tmp_path, hide=["qemu"]), timeout=30)
    assert result.returncode == 2, result
    assert _last_line(result).startswith(
        "%s: [volume] backend = file needs the Python module qemu.qmp"
        % daemon), result.stderr
    assert _storage_daemons_of(tmp_path) == []


def test_unknown_options_are_warned_with_the_nearest_name(tmp_path):
    path = _conf(tmp_path, "[cinder]\nauth_type = password\nusername = u\n",
                 api="prot = 1234", DEFAULT="debugg = true")
    result = _run([script("volattach-manage"), "--config-file", str(path),
                   "db", "version"], _env(tmp_path))
    assert result.returncode == 0, result
    output = result.stdout + result.stderr
    assert "[api] prot: unknown option, did you mean port?" in output
    assert "[DEFAULT] debugg: unknown option, did you mean debug?" in output
    # the options of the configured auth plugin are known
    assert "username" not in output


def test_second_all_in_one_on_a_state_directory_in_use_refuses(tmp_path):
    first = AllInOneProcess(tmp_path).start()
    try:
        other = tmp_path / "other.conf"
        other.write_text("[DEFAULT]\nstate_path = %s\n[api]\nport = %d\n"
                         "[volume]\nport = %d\n" % (
                             first.state_path, utils.free_port(),
                             utils.free_port()))
        result = _run([script("volattach-all"), "--config-file", str(other)],
                      first.env)
        assert result.returncode == 1, result
        assert _last_line(result) == (
            "volattach-all: [DEFAULT] state_path %s is in use by another "
            "volattach-all (pid %d, lock file %s/volattach-all.lock): stop "
            "it first, or give this one another state_path"
            % (first.state_path, first.proc.pid, first.state_path))
    finally:
        first.stop()


UNREACHABLE = "postgresql+psycopg2://u:secret@127.0.0.1:1/x"


def test_conductor_database_unreachable_is_one_line(tmp_path):
    path = _conf(tmp_path, DEFAULT="transport_url = kombu+memory:////",
                 database="connection = %s" % UNREACHABLE)
    result = _run([script("volattach-conductor"), "--config-file", str(path)],
                  _env(tmp_path))
    assert result.returncode == 2, result
    assert _last_line(result).startswith(
        "volattach-conductor: [database] connection = "
        "postgresql+psycopg2://u:***@127.0.0.1:1/x: cannot open the "
        "database"), result.stderr
    assert "secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("command", [["db", "sync"], ["db", "version"]])
def test_manage_database_unreachable_is_one_line(tmp_path, command):
    path = _conf(tmp_path, volume="connection = %s" % UNREACHABLE)
    result = _run([script("volattach-manage"), "--config-file", str(path)]
                  + command, _env(tmp_path))
    assert result.returncode == 1, result
    assert "Traceback" not in result.stdout + result.stderr
    assert _last_line(result).startswith(
        "volattach-manage: [volume] connection = "
        "postgresql+psycopg2://u:***@127.0.0.1:1/x: cannot open the "
        "database"), result.stderr
