"""Every console script as a user calls it: ``--version`` (from the
package's metadata), a description in ``--help``, and ``volattach-manage db
version`` naming both databases."""
import os
import subprocess
import sys
from importlib import metadata

import pytest

BIN = os.path.dirname(sys.executable)
SCRIPTS = ("volattach-api", "volattach-conductor", "volattach-compute",
           "volattach-volume", "volattach-manage", "volattach-all")


def _run(*argv, env=None, timeout=60):
    return subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]),
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.mark.parametrize("name", SCRIPTS)
def test_version_and_help(name):
    version = _run(name, "--version")
    assert version.returncode == 0, version
    assert version.stdout.strip() == "%s %s" % (name,
                                                metadata.version("volattach"))
    shown = _run(name, "--help")
    assert shown.returncode == 0, shown
    # a description between the usage and the options
    description = shown.stdout.split("\n\n")[1]
    assert not description.startswith(("options:", "positional")), shown.stdout
    assert len(description.split()) >= 10, description


def test_manage_db_version_shows_both_databases(tmp_path):
    conf = tmp_path / "volattach.conf"
    conf.write_text("[DEFAULT]\nstate_path = %s\n" % tmp_path)
    before = _run("volattach-manage", "--config-file", str(conf), "db",
                  "version")
    assert before.returncode == 0, before
    assert before.stdout.splitlines() == ["compute: - (not migrated)",
                                          "volume: - (not migrated)"]
    assert _run("volattach-manage", "--config-file", str(conf), "db",
                "sync").returncode == 0
    after = _run("volattach-manage", "--config-file", str(conf), "db",
                 "version")
    lines = after.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["compute", "volume"]
    assert all(line.endswith("(up to date)") for line in lines), lines


def test_manage_reconcile_without_credentials_is_one_line(tmp_path):
    """A daemons' configuration file (it names a broker, so volattach-all's
    loopback defaults do not apply) that leaves [cinder] on keystone
    without service credentials: one line saying so (and what
    volattach-all's files need), exit status 1, no traceback."""
    conf = tmp_path / "volattach.conf"
    conf.write_text("[DEFAULT]\nstate_path = %s\n"
                    "transport_url = rabbit://u:p@127.0.0.1:9/\n" % tmp_path)
    assert _run("volattach-manage", "--config-file", str(conf), "db",
                "sync").returncode == 0
    result = _run("volattach-manage", "--config-file", str(conf),
                  "attachments", "reconcile", "--dry-run", "--no-unplug")
    assert result.returncode == 1, result
    assert result.stderr.splitlines() == [
        "volattach-manage: Connection to cinder host failed: no caller token "
        "and no [cinder] service credentials (auth_type) to call the volume "
        "service with (volattach-all's configuration? its default is "
        "[cinder] auth_strategy = noauth: set it in this file)"], result.stderr
