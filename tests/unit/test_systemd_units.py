"""etc/systemd/: one unit per daemon, and each passes ``systemd-analyze
verify`` (with ExecStart pointed at this virtualenv's console scripts,
since verify checks that they are executables), with no warning about
our units.  Without systemd-analyze the test skips, except under CI,
where it installs it (Debian's ``systemd`` package) or fails."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests import utils

REPO = pathlib.Path(__file__).resolve().parents[2]
UNITS = REPO / "etc" / "systemd"
DAEMONS = ("api", "conductor", "compute", "volume")
INSTALLED_BIN = "/opt/volattach/bin/"


def _systemd_analyze():
    found = shutil.which("systemd-analyze")
    if found is None and utils.in_ci() and shutil.which("apt-get") \
            and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq",
                        "--no-install-recommends", "systemd"],
                       capture_output=True, timeout=600)
        found = shutil.which("systemd-analyze")
    if found is None:
        message = "systemd-analyze is not installed (Debian: systemd)"
        if utils.in_ci():
            pytest.fail("CI: " + message, pytrace=False)
        pytest.skip(message)
    return found


def _unit(daemon):
    return (UNITS / ("volattach-%s.service" % daemon)).read_text()


@pytest.mark.parametrize("daemon", DAEMONS)
def test_unit_runs_its_daemon_as_volattach_with_the_config_file(daemon):
    text = _unit(daemon)
    assert ("ExecStart=%svolattach-%s --config-file "
            "/etc/volattach/volattach.conf\n" % (INSTALLED_BIN, daemon)) in text
    assert "User=volattach\n" in text
    assert "Restart=on-failure\n" in text
    assert "After=network-online.target" in text
    # the daemons do not call sd_notify
    assert "Type=exec\n" in text


def test_units_pass_systemd_analyze_verify(tmp_path):
    analyze = _systemd_analyze()
    bin_dir = os.path.dirname(sys.executable)
    names = []
    for daemon in DAEMONS:
        name = "volattach-%s.service" % daemon
        assert os.access(os.path.join(bin_dir, "volattach-" + daemon),
                         os.X_OK)
        (tmp_path / name).write_text(
            _unit(daemon).replace(INSTALLED_BIN, bin_dir + "/"))
        names.append(str(tmp_path / name))
    proc = subprocess.run([analyze, "verify", "--man=no", *names],
                          capture_output=True, text=True, timeout=120)
    ours = [line for line in (proc.stdout + proc.stderr).splitlines()
            if "volattach" in line]
    assert proc.returncode == 0 and not ours, proc.stdout + proc.stderr
