"""``volattach-manage db sync`` on a database its migrations cannot keep
consistent: one line that says why, exit status 1, nothing committed.

A SQLite volume database at revision 0001 holds an attachment whose volume
row is gone (written with foreign keys off, as a hand edit would).  The
next migration copies the tables; the runner's ``PRAGMA foreign_key_check``
then finds the orphan and rolls the sync back.
"""
import os
import sqlite3
import subprocess
import sys

from volattach.volume.db import migration as volume_migration


def _manage():
    script = os.path.join(os.path.dirname(sys.executable), "volattach-manage")
    return [script] if os.path.exists(script) else [
        sys.executable, "-m", "volattach.cmd.manage"]


def test_a_foreign_key_violation_is_one_line_and_exit_1(tmp_path):
    compute_db = tmp_path / "compute.sqlite"
    volume_db = tmp_path / "volume.sqlite"
    volume_url = "sqlite:///%s" % volume_db
    volume_migration.db_sync(volume_url, revision="0001_initial")
    with sqlite3.connect(volume_db) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(
            "INSERT INTO volume_attachments (id, volume_id, project_id, "
            "attach_status, created_at) VALUES ('a1', 'gone', 'p', "
            "'attached', '2026-11-26 00:00:00')")
    config = tmp_path / "volattach.conf"
    config.write_text(
        "[DEFAULT]\nstate_path = %s\n[database]\nconnection = sqlite:///%s\n"
        "[volume]\nconnection = %s\n" % (tmp_path, compute_db, volume_url))

    done = subprocess.run(_manage() + ["--config-file", str(config), "db", "sync"],
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "violate foreign keys" in lines[0], lines
    assert "volume_attachments rowid" in lines[0], lines
    # rolled back: still at 0001, the orphan still there for the operator
    assert volume_migration.db_version(volume_url) == "0001_initial"
    with sqlite3.connect(volume_db) as conn:
        assert conn.execute("SELECT id FROM volume_attachments").fetchall() == [("a1",)]
