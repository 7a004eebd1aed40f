"""volattach-all as a separate process, the way a user starts it.

``AllInOneProcess`` writes a configuration file (or none: the embedded
defaults, with ``HOME`` pointed at a temporary directory and the ports given
through oslo.config's ``OS_<GROUP>__<OPTION>`` environment variables), starts
``volattach-all``, waits for both HTTP services and stops it with SIGTERM.
With ``log_file=False`` it runs without ``--log-file``: its stderr goes to
``stderr_path`` (then also ``log_file``) and its stdout to ``stdout_path``.
"""
import os
import signal
import subprocess
import sys
import time

import requests

from tests import utils

BIN = os.path.dirname(sys.executable)


def script(name):
    return os.path.join(BIN, name)


def port_open(port, host="127.0.0.1"):
    import socket
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


class AllInOneProcess:

    def __init__(self, tmp_path, options=None, config_file=True,
                 log_file=True, extra_args=()):
        self.tmp_path = tmp_path
        self.api_port = utils.free_port()
        self.volume_port = utils.free_port()
        self.home = tmp_path / "home"
        self.home.mkdir(exist_ok=True)
        self.state_path = tmp_path / "state"
        self.log_file = tmp_path / "volattach-all.log"
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", HOME=str(self.home))
        self.env = {k: v for k, v in self.env.items()
                    if not k.startswith("OS_")}
        self.args = ["--log-file", str(self.log_file)]
        self.stdout_path = self.stderr_path = None
        if not log_file:
            self.stdout_path = tmp_path / "volattach-all.stdout"
            self.stderr_path = self.log_file = tmp_path / "volattach-all.stderr"
            self.args = []
        self.args += list(extra_args)
        self.config_file = None
        if config_file:
            groups = {"DEFAULT": {"state_path": str(self.state_path)},
                      "api": {"port": self.api_port},
                      "volume": {"port": self.volume_port}}
            for (group, name), value in (options or {}).items():
                groups.setdefault(group, {})[name] = value
            self.config_file = tmp_path / "volattach.conf"
            self.config_file.write_text("".join(
                "[%s]\n%s" % (group, "".join("%s = %s\n" % item
                                              for item in values.items()))
                for group, values in groups.items()))
            self.args += ["--config-file", str(self.config_file)]
        else:
            # the embedded defaults: state under $HOME/.volattach
            self.state_path = self.home / ".volattach"
            self.env["OS_API__PORT"] = str(self.api_port)
            self.env["OS_VOLUME__PORT"] = str(self.volume_port)
            for (group, name), value in (options or {}).items():
                self.env["OS_%s__%s" % (group.upper(), name.upper())] = str(
                    value)
        self.api_url = "http://127.0.0.1:%d" % self.api_port
        self.volume_url = "http://127.0.0.1:%d" % self.volume_port
        self.proc = None

    def start(self, timeout=90):
        if self.stderr_path is not None:
            with open(self.stdout_path, "w") as out, \
                    open(self.stderr_path, "w") as err:
                self.proc = subprocess.Popen(
                    [script("volattach-all")] + self.args, env=self.env,
                    stdout=out, stderr=err, text=True)
        else:
            self.proc = subprocess.Popen(
                [script("volattach-all")] + self.args, env=self.env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("volattach-all exited %s:\n%s\n%s" % (
                    self.proc.returncode, self.proc.stdout.read()
                    if self.proc.stdout else "", self.log()))
            try:
                if (requests.get(self.api_url + "/", timeout=2).status_code
                        == 200 and requests.get(self.volume_url + "/",
                                                timeout=2).status_code
                        in (200, 300)):
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise AssertionError("volattach-all not serving after %s s:\n%s"
                             % (timeout, self.log()))

    def log(self):
        try:
            return self.log_file.read_text()[-5000:]
        except OSError:
            return ""

    def manage(self, *args, timeout=120):
        """``volattach-manage`` on this deployment's configuration (none
        for the embedded defaults)."""
        argv = [script("volattach-manage")]
        if self.config_file is not None:
            argv += ["--config-file", str(self.config_file)]
        return subprocess.run(argv + list(args), env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
