"""The several-hosts topology: a controller and two computes, each in a
network namespace of its own, joined by a bridge (see README.md here).

``several_hosts(workdir, image_dir, image)`` is a context manager that
builds it all and yields a ``Hosts``; the tests' conftest and
benchmarks/several_hosts.py use it.  ``Unavailable`` says a prerequisite
is missing (the conftest skips, or fails under CI).
"""
import configparser
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tests.guest import conftest as guest_env
from tests.integration import client as clients
from tests.integration import conftest as harness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, "tools")
COMPUTES = ("compute1", "compute2")
RABBIT_PORT = 5672
PG_PORT = 5432
EXPORT_PORT = 10809
WAIT = 120


class Unavailable(Exception):
    """A prerequisite of the tier is missing."""


def _run(argv, check=True, env=None, timeout=180):
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=timeout,
                            env=None if env is None else dict(os.environ,
                                                              **env))
    if check and result.returncode != 0:
        raise harness.DeploymentError("%s failed (%d): %s%s" % (
            " ".join(argv), result.returncode, result.stdout, result.stderr))
    return result


def _background(argv, env=None):
    return argv, subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=None if env is None else dict(os.environ, **env))


def _last_line(started, timeout=180):
    """The last line of what a ``_background`` command printed."""
    argv, proc = started
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise harness.DeploymentError("%s failed (%s): %s%s" % (
            " ".join(argv), proc.returncode, out, err))
    return out.strip().splitlines()[-1]


class Network:
    """The bridge (in the test's own namespace, with the test runner's
    address ``.254``) and one network namespace per host, each with a veth
    pair whose other end is on the bridge: ``controller`` at ``.1``,
    ``compute1`` at ``.11``, ``compute2`` at ``.12`` of 10.251.<n>.0/24."""

    def __init__(self):
        tag = "%04x" % (os.getpid() & 0xffff)
        n = 1 + os.getpid() % 250
        self.prefix = "10.251.%d." % n
        self.runner_ip = self.prefix + "254"
        self.bridge = "vabr" + tag
        self.hosts = {"controller": "vactl" + tag}
        self.ips = {"controller": self.prefix + "1"}
        for i, host in enumerate(COMPUTES, 1):
            self.hosts[host] = "vac%d%s" % (i, tag)
            self.ips[host] = self.prefix + str(10 + i)
        self.links = {host: "vh" + ns[2:] for host, ns in self.hosts.items()}

    def create(self):
        for tool in ("ip", "unshare", "ss"):
            if shutil.which(tool) is None:
                raise Unavailable("%s is not installed" % tool)
        if os.geteuid() != 0:
            raise Unavailable("network namespaces need root")
        # leftovers of a run that died with the same pid
        existing = _run(["ip", "netns", "list"]).stdout.split()
        if any(ns in existing for ns in self.hosts.values()):
            self.kill_all()
            self.delete()
        try:
            self._create()
        except harness.DeploymentError as e:
            self.delete()
            raise Unavailable("cannot make the namespaces: %s" % e) from e

    def _create(self):
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        _run(["ip", "addr", "add", self.runner_ip + "/24", "dev",
              self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for host, ns in self.hosts.items():
            link = self.links[host]
            _run(["ip", "netns", "add", ns])
            _run(["ip", "link", "add", link, "type", "veth", "peer", "name",
                  "eth0", "netns", ns])
            _run(["ip", "link", "set", link, "master", self.bridge, "up"])
            _run(["ip", "-n", ns, "addr", "add", self.ips[host] + "/24",
                  "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def pids(self, host):
        out = _run(["ip", "netns", "pids", self.hosts[host]],
                   check=False).stdout
        return [int(p) for p in out.split()]

    def kill_all(self):
        """SIGKILL what still runs in the namespaces (all started by this
        run: the daemons, QEMUs, libvirtds, RabbitMQ's epmd)."""
        for host in self.hosts:
            for pid in self.pids(host):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def delete(self):
        for ns in self.hosts.values():
            _run(["ip", "netns", "del", ns], check=False)
        for link in self.links.values():
            _run(["ip", "link", "del", link], check=False)
        _run(["ip", "link", "del", self.bridge], check=False)

    def exec_argv(self, host, *argv):
        return ["ip", "netns", "exec", self.hosts[host], *argv]

    def established(self, host, port):
        """The peer addresses of the TCP connections established to
        ``port`` in ``host``'s namespace."""
        out = _run(self.exec_argv(host, "ss", "-Htn", "state", "established",
                                  "( sport = :%d )" % port)).stdout
        return sorted({line.split()[-1].rsplit(":", 1)[0]
                       for line in out.splitlines() if line.strip()})


class ControllerServices:
    """RabbitMQ and PostgreSQL of the controller, started in its namespace
    by tools/start-rabbitmq.sh and tools/start-postgres.sh and listening on
    its address (and its own loopback), state in ``state`` ."""

    def __init__(self, net, state):
        self.net = net
        self.state = state
        self.ip = net.ips["controller"]
        self.node = "vash%s@localhost" % net.bridge[4:]
        self.pg_dir = os.path.join(state, "postgres")
        self.rabbit_url = self.pg_url = None

    def _rabbit_env(self):
        return {"VOLATTACH_RABBIT_PORT": str(RABBIT_PORT),
                "VOLATTACH_RABBIT_NODE": self.node,
                "VOLATTACH_RABBIT_LISTEN": self.ip,
                "VOLATTACH_RABBIT_STATE_DIR": os.path.join(self.state,
                                                           "rabbit")}

    def _pg_env(self):
        return {"VOLATTACH_PG_DIR": self.pg_dir,
                "VOLATTACH_PG_PORT": str(PG_PORT),
                "VOLATTACH_PG_LISTEN": self.ip}

    def start(self):
        """Both at once; their URLs in ``rabbit_url`` and ``pg_url``."""
        # the server users must reach their state
        os.chmod(self.state, 0o755)
        rabbit, pg = _background(self.net.exec_argv(
            "controller", "bash", os.path.join(TOOLS, "start-rabbitmq.sh")),
            self._rabbit_env()), _background(self.net.exec_argv(
                "controller", "bash", os.path.join(TOOLS,
                                                   "start-postgres.sh")),
                self._pg_env())
        self.rabbit_url, self.pg_url = _last_line(rabbit), _last_line(pg)

    def stop(self):
        if self.pg_url:
            _run(self.net.exec_argv(
                "controller", "bash", os.path.join(TOOLS, "start-postgres.sh"),
                "--stop"), env=self._pg_env(), check=False)
        if self.rabbit_url:
            ctl = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
            _run(self.net.exec_argv("controller", ctl, "-q", "-n", self.node,
                                    "stop"), env=self._rabbit_env(),
                 check=False, timeout=60)


class Hosts:
    """The running topology: ``api``/``volumes`` clients (admin), ``net``
    (the namespaces), ``dep`` (the integration harness's Deployment), each
    compute's libvirt URI and instance directory, the image to boot."""

    def __init__(self, net, dep, image, uris, instances, timings):
        self.net = net
        self.timings = timings
        self.dep = dep
        self.image = image
        self.uris = uris
        self.instances = instances
        self.api = clients.ComputeClient(dep.api_url, token=harness.ADMIN_TOKEN,
                                         microversion="2.105")
        self.volumes = clients.VolumeClient(dep.volume_url)

    def guest(self, server_id, host):
        return guest_env.Guest(server_id, self.instances[host])

    def boot(self, *placements):
        """One server per (name, compute host), all created at once, then
        each booted; their Guests."""
        made = []
        for name, host in placements:
            code, body, _ = self.api.create_server(
                name=name, image_ref=self.image, flavor_ref="1",
                availability_zone="nova:%s" % host)
            assert code == 202, (code, body)
            made.append((body["server"]["id"], host))
        guests = []
        for server_id, host in made:
            self.api.wait_for_server_status(server_id, "ACTIVE",
                                            timeout=WAIT)
            guest = self.guest(server_id, host)
            guest.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
            guests.append(guest)
        return guests

    def domains(self, host):
        out = _run(["virsh", "-c", self.uris[host], "list", "--all",
                    "--uuid"]).stdout
        return set(out.split())

    def domain_xml(self, host, server_id):
        """The live XML of the server's domain in ``host``'s libvirt."""
        return _run(["virsh", "-c", self.uris[host], "dumpxml",
                     "volattach-%s" % server_id]).stdout

    def namespace_of(self, pid):
        return os.readlink("/proc/%d/ns/net" % pid)


def _wrapper(bindir, net, host, script):
    """An executable ``bindir/<script>`` that runs the console script in
    ``host``'s namespace (``ip netns exec`` execs it: same pid)."""
    os.makedirs(bindir, exist_ok=True)
    path = os.path.join(bindir, script)
    real = os.path.join(os.path.dirname(sys.executable), script)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n"
                % (net.hosts[host], real))
    os.chmod(path, 0o755)
    return path


def _check_prerequisites():
    for tool in ("libvirtd", "virtlogd", "virsh", "qemu-storage-daemon"):
        if shutil.which(tool) is None and not os.path.exists(
                "/usr/sbin/" + tool):
            raise Unavailable("%s is not installed (tools/start-libvirt.sh)"
                              % tool)
    try:
        import libvirt  # noqa: F401
        import qemu.qmp  # noqa: F401
    except ImportError as e:
        raise Unavailable("volattach[libvirt] is not installed: %s" % e) from e
    if not os.path.exists("/etc/libvirt/qemu.conf"):
        raise Unavailable("no /etc/libvirt/qemu.conf (tools/start-libvirt.sh)")


@contextlib.contextmanager
def several_hosts(workdir, image_dir, image, nbd_tls=True):
    """Build the topology of README.md in ``workdir`` and yield a Hosts;
    tear it all down at the end.  ``nbd_tls=False``: plain NBD
    (``[volume] allow_insecure_nbd``), for benchmarks to compare."""
    from volattach import nbd_certs
    _check_prerequisites()
    net = Network()
    # short: unix socket paths (libvirt, consoles) hold 108 bytes
    short = tempfile.mkdtemp(prefix="va-sh-")
    services = ControllerServices(net, short)
    timings = {}
    started = time.monotonic()
    net.create()
    libvirts = {}
    try:
        services.start()
        timings["rabbitmq+postgresql"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        ca = nbd_certs.Authority.create()
        server_pki = os.path.join(short, "pki", "server")
        ca.issue(server_pki, "volume-host", server=True,
                 addresses=[net.ips["controller"]])
        allowed, uris, instances, pki = [], {}, {}, {}
        starting = {}
        for host in COMPUTES:
            pki[host] = os.path.join(short, "pki", host)
            allowed.append(ca.issue(pki[host], host))
            state = os.path.join(short, host)
            libvirts[host] = state
            starting[host] = _background(
                ["bash", os.path.join(TOOLS, "netns-libvirt.sh"),
                 net.hosts[host], state],
                {"VOLATTACH_NBD_TLS_DIR": pki[host]})
            instances[host] = os.path.join(state, "i")
        for host in COMPUTES:
            uris[host] = _last_line(starting[host])
        timings["certificates+libvirtds"] = round(
            time.monotonic() - started, 1)
        started = time.monotonic()
        ctl = net.ips["controller"]
        libvirt_common = {"virt_type": "qemu", "image_dir": image_dir,
                          "max_memory_mb": 256}

        def prepare(dep):
            dep.api_url = "http://%s:%d" % (ctl, dep.api_port)
            dep.volume_url = "http://%s:%d" % (ctl, dep.volume_port)
            conf = configparser.ConfigParser(interpolation=None)
            conf.optionxform = str
            conf.read(dep.conf_path)
            conf["DEFAULT"]["allow_insecure_noauth"] = "true"
            conf["api"]["listen"] = ctl
            conf["volume"]["listen"] = ctl
            conf["volume"]["compute_endpoint"] = dep.api_url + "/v2.1"
            conf["cinder"]["endpoint"] = dep.volume_url + "/v3"
            with open(dep.conf_path, "w") as f:
                conf.write(f)
            for name in list(dep.daemons):
                dep.remove_daemon(name)
            bindir = os.path.join(dep.workdir, "bin-controller")
            controller = {"DEFAULT": {"my_ip": ctl},
                          "compute": {"virt_driver": "libvirt"},
                          "libvirt": libvirt_common}
            dep.add_daemon("volume", _wrapper(bindir, net, "controller",
                                              "volattach-volume"),
                           overrides=controller)
            with open(os.path.join(dep.workdir, "volume.conf"), "a") as f:
                f.write("[volume]\nbackend = file\nbackend_name = file\n"
                        "export_host = %s\nexport_port = %d\n"
                        % (ctl, EXPORT_PORT))
                if not nbd_tls:
                    f.write("allow_insecure_nbd = true\n")
                else:
                    f.write("nbd_tls = true\nnbd_tls_dir = %s\n"
                            % server_pki)
                    for dname in allowed:
                        f.write("nbd_tls_allowed_clients = %s\n" % dname)
            dep.add_daemon("conductor", _wrapper(
                bindir, net, "controller", "volattach-conductor"),
                overrides=controller)
            for host in COMPUTES:
                ip = net.ips[host]
                dep.add_daemon(host, _wrapper(
                    os.path.join(dep.workdir, "bin-" + host), net, host,
                    "volattach-compute"), overrides={
                    "DEFAULT": {"my_ip": ip},
                    "compute": {"host": host, "virt_driver": "libvirt"},
                    "libvirt": dict(
                        libvirt_common, connection_uri=uris[host],
                        instances_path=instances[host],
                        nbd_tls_dir=pki[host],
                        live_migration_inbound_uri=uris[host],
                        live_migration_inbound_addr=ip)})
            dep.add_daemon("api", _wrapper(bindir, net, "controller",
                                           "volattach-api"),
                           overrides=controller)

        work = os.path.join(workdir, "deployment")
        os.makedirs(work, exist_ok=True)
        with harness.running_deployment(
                work, rabbit_url=services.rabbit_url,
                pg_url=services.pg_url, rabbit_node=services.node,
                prepare=prepare) as dep:
            timings["daemons"] = round(time.monotonic() - started, 1)
            hosts = Hosts(net, dep, image, uris, instances, timings)
            try:
                yield hosts
            finally:
                stopping = time.monotonic()
                for server in (hosts.api.list_servers()[1] or {}).get(
                        "servers", []):
                    hosts.api.delete_server(server["id"])
                for server in (hosts.api.list_servers()[1] or {}).get(
                        "servers", []):
                    harness._best_effort(
                        lambda server_id=server["id"]:
                            hosts.api.wait_for_server_deleted(
                                server_id, timeout=WAIT))
                guest_env.stop_storage_daemon(os.path.join(work, "state"))
                timings["teardown: servers"] = round(
                    time.monotonic() - stopping, 1)
                stopping = time.monotonic()
                # SIGTERM to all at once: each daemon's graceful stop then
                # runs beside the others' (the harness stops them in turn)
                for proc in dep.processes.values():
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
                for proc in dep.processes.values():
                    try:
                        proc.wait(harness.STOP_TIMEOUT)
                    except subprocess.TimeoutExpired:
                        pass
        timings["teardown: daemons"] = round(time.monotonic() - stopping, 1)
    finally:
        stopping = time.monotonic()
        for host, state in libvirts.items():
            _run(["bash", os.path.join(TOOLS, "netns-libvirt.sh"),
                  net.hosts[host], state, "--stop"], check=False)
        services.stop()
        net.kill_all()
        time.sleep(0.2)
        net.delete()
        shutil.rmtree(short, ignore_errors=True)
        timings["teardown: libvirtds, broker, database, network"] = round(
            time.monotonic() - stopping, 1)
