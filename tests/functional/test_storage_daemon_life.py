"""The file backend's qemu-storage-daemon, made explicit (issue 33, item 5).

One volattach-all with the file backend on its own NBD port: at stop it
says the daemon keeps running (PID, port); ``volattach-manage storage
status | stop`` shows it and refuses to stop it while a volume is
exported; a second deployment on the same NBD port names it; the README's
clean-state recipe (stop, ``storage stop --force``, ``rm -rf``, start)
works, and so does ``rm -rf`` first (the orphan is named and stopped).
"""
import os
import shutil
import subprocess

import pytest

from tests.functional.allinone_process import AllInOneProcess
from tests.functional.allinone_process import script
from tests.integration import client as clients
from tests import utils

def _qmp_missing():
    try:
        import qemu.qmp  # noqa: F401
    except ImportError:
        return True
    return False


pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("qemu-storage-daemon") is None
                       or _qmp_missing(),
                       reason="needs QEMU's qemu-storage-daemon and the "
                              "volattach[libvirt] extra (qemu.qmp)"),
]

TOKEN = "alice:demo"


def _alive(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"qemu-storage-daemon" in f.read()
    except OSError:
        return False


def _pid_in(text):
    marker = "pid "
    start = text.index(marker) + len(marker)
    return int(text[start:].split(",")[0].split(")")[0])


def test_storage_daemon_life(tmp_path):
    nbd_port = utils.free_port()
    options = {("volume", "backend"): "file",
               ("volume", "export_port"): nbd_port}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = AllInOneProcess(tmp_path / "one", options=options).start()
    pid = None
    try:
        api = clients.ComputeClient(first.api_url, token=TOKEN)
        volumes = clients.VolumeClient(first.volume_url, token=TOKEN)
        server = api.create_active_server()
        volume = volumes.create_available_volume()
        status, body, _ = api.attach_volume(server, volume,
                                            microversion="2.1")
        assert status == 200, body
        volumes.wait_for_volume_status(volume, "in-use")

        shown = first.manage("storage", "status")
        assert shown.returncode == 0, shown.stderr
        assert "running, pid" in shown.stdout, shown.stdout
        assert "NBD on 127.0.0.1:%d" % nbd_port in shown.stdout
        assert "%s (rw)" % volume in shown.stdout
        pid = _pid_in(shown.stdout)

        refused = first.manage("storage", "stop")
        assert refused.returncode == 1, refused
        assert "still exports volume %s (rw)" % volume in refused.stderr
        assert _alive(pid)
    finally:
        first.stop()
    try:
        # at stop: it keeps running, with its PID and port
        assert ("qemu-storage-daemon of [volume] (pid %d, NBD on "
                "127.0.0.1:%d) keeps running" % (pid, nbd_port)
                in first.log()), first.log()
        assert _alive(pid)

        # another deployment on the same NBD port names it, starts nothing
        second = AllInOneProcess(tmp_path / "two", options=options)
        result = subprocess.run([script("volattach-all")] + second.args,
                                env=second.env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 1, result
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(
            "volattach-all: [volume] export_port %d (NBD on 127.0.0.1) is in "
            "use by another deployment's qemu-storage-daemon (pid %d, state "
            "in %s" % (nbd_port, pid, first.state_path)), result.stderr
        assert "Traceback" not in result.stderr

        # rm -rf first: the orphan is named, and --force stops it
        shutil.rmtree(first.state_path)
        orphan = first.manage("storage", "stop")
        assert orphan.returncode == 1, orphan
        assert "removed state directory (pid %d)" % pid in orphan.stderr
        forced = first.manage("storage", "stop", "--force")
        assert forced.returncode == 0, forced.stderr
        assert not _alive(pid)

        # the clean-state recipe: start, stop, storage stop, rm -rf, start
        again = AllInOneProcess(tmp_path / "one", options=options).start()
        again.stop()
        stopped = again.manage("storage", "stop", "--force")
        assert stopped.returncode == 0, stopped.stderr
        assert "stopped" in stopped.stdout
        shutil.rmtree(again.state_path)
        third = AllInOneProcess(tmp_path / "one", options=options).start()
        third.stop()
        assert third.manage("storage", "stop").returncode == 0
    finally:
        if pid is not None and _alive(pid):
            os.kill(pid, 9)


def _serving(port):
    import requests
    try:
        return requests.get("http://127.0.0.1:%d/" % port,
                            timeout=2).status_code in (200, 300)
    except requests.RequestException:
        return False


def test_volattach_volume_says_at_stop_that_the_daemon_keeps_running(
        tmp_path):
    import signal
    import time
    port, nbd_port = utils.free_port(), utils.free_port()
    conf = tmp_path / "volume.conf"
    conf.write_text("[DEFAULT]\nstate_path = %s\n[volume]\nport = %d\n"
                    "auth_strategy = noauth\nbackend = file\n"
                    "export_port = %d\n" % (tmp_path / "state", port,
                                            nbd_port))
    log = tmp_path / "volume.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    proc = subprocess.Popen([script("volattach-volume"), "--config-file",
                             str(conf), "--log-file", str(log)], env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    pid = None
    try:
        deadline = time.monotonic() + 60
        while not _serving(port):   # bound first, served after its start
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        notes = [line for line in log.read_text().splitlines()
                 if "keeps running" in line]
        assert len(notes) == 1, log.read_text()    # the master's, once
        pid = _pid_in(notes[0])
        assert "NBD on 127.0.0.1:%d" % nbd_port in notes[0]
        assert _alive(pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stopped = subprocess.run(
            [script("volattach-manage"), "--config-file", str(conf),
             "storage", "stop"], env=env, capture_output=True, text=True,
            timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        if pid is not None:
            assert not _alive(pid)
