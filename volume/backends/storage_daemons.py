"""The file backend's qemu-storage-daemons, seen from outside: which ones a
configuration has, who holds an NBD port, and stopping one.

The daemon outlives the volume service on purpose (guests keep their
disks): ``volattach-all`` and ``volattach-volume`` say so at stop
(``stop_notes``), ``volattach-manage storage status | stop`` shows it and
stops it when it exports no volume (``--force`` stops it anyway), and a
start that finds the NBD port held by a process that is not this
configuration's daemon names it (``port_holder``, used by
``file.StorageDaemon.ensure_running``).
"""
import os
import signal
import time


def _listening_inodes(port):
    """Socket inodes listening on TCP ``port`` (any address)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(inode)
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return inodes


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def port_holder(port):
    """``(pid or None, argv)`` of the process listening on TCP ``port``, or
    None when nothing listens; pid None when this user cannot see it."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {"socket:[%s]" % i for i in inodes}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fd_dir = "/proc/%s/fd" % name
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in wanted:
                    return int(name), _cmdline(int(name))
            except OSError:
                continue
    return None, []


def describe_holder(holder):
    """Words naming the process of ``port_holder``."""
    pid, argv = holder
    if pid is None:
        return "a process this user cannot see"
    program = os.path.basename(argv[0]) if argv and argv[0] else "?"
    if "qemu-storage-daemon" in program:
        pidfile = argv[argv.index("--pidfile") + 1] if "--pidfile" in argv[:-1] \
            else None
        state = os.path.dirname(pidfile) if pidfile else "?"
        if os.path.isdir(state):
            return ("another deployment's qemu-storage-daemon (pid %d, state "
                    "in %s: volattach-manage storage stop with that "
                    "deployment's configuration stops it)" % (pid, state))
        return ("the qemu-storage-daemon of a removed state directory (pid "
                "%d, state was in %s: volattach-manage storage stop --force "
                "stops it)" % (pid, state))
    return "%s (pid %d)" % (program, pid)


def orphan_on_port(daemon):
    """The PID of a qemu-storage-daemon listening on ``daemon``'s NBD port
    whose state directory is gone (its deployment's ``rm -rf``): nothing
    can reach it over QMP any more.  None otherwise."""
    holder = port_holder(int(daemon.port))
    if holder is None or holder[0] is None:
        return None
    pid, argv = holder
    if not argv or "qemu-storage-daemon" not in os.path.basename(argv[0]):
        return None
    if "--pidfile" in argv[:-1] and not os.path.isdir(
            os.path.dirname(argv[argv.index("--pidfile") + 1])):
        return pid
    return None


def pid_of(daemon):
    """The PID of ``daemon`` (a ``file.StorageDaemon``) when its pidfile
    names a live qemu-storage-daemon, else None."""
    try:
        with open(daemon.pidfile) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    argv = _cmdline(pid)
    if not argv or "qemu-storage-daemon" not in os.path.basename(argv[0]):
        return None
    return pid


def daemons_of(conf):
    """``[(option, StorageDaemon)]``: the daemon of each file backend of
    ``conf`` (``[volume] backend = file``, or the sections of ``[volume]
    enabled_backends`` whose volume_backend is file)."""
    from volattach.volume import backend as volume_backend
    from volattach.volume.backends import file as file_backend

    def daemon(vconf):
        return file_backend.StorageDaemon(
            os.path.join(vconf.volumes_dir, ".qsd"), vconf.export_host,
            vconf.export_port)
    names = conf.volume.enabled_backends
    if not names:
        if conf.volume.backend != "file":
            return []
        return [("[volume]", daemon(conf.volume))]
    found = []
    sections = set(conf.list_all_sections())
    for section in names:
        if section not in sections:
            continue
        conf.register_opts(volume_backend.backend_section_opts(conf),
                           group=section)
        if conf[section].volume_backend == "file":
            found.append(("[%s]" % section, daemon(conf[section])))
    return found


def stop_notes(conf):
    """One line per running daemon of ``conf``: it keeps running, and
    how to stop it."""
    lines = []
    for option, daemon in daemons_of(conf):
        pid = pid_of(daemon)
        if pid is None:
            continue
        lines.append(
            "qemu-storage-daemon of %s (pid %d, NBD on %s:%s) keeps running: "
            "guests keep their disks; 'volattach-manage storage stop' stops "
            "it when no volume is exported" % (option, pid, daemon.host,
                                               daemon.port))
    return lines


def exports(daemon):
    """``[(volume id, mode)]`` the daemon exports (over QMP)."""
    with daemon.batch():
        files = {n.get("node-name"): n.get("file", "") for n in
                 daemon.command("query-named-block-nodes", flat=True)}
        found = []
        for export in daemon.command("query-block-exports"):
            name = os.path.basename(files.get(export.get("node-name"), ""))
            volume = name[len("volume-"):] if name.startswith("volume-") \
                else export.get("node-name")
            mode = "ro" if export.get("id", "").endswith("ro") else "rw"
            found.append((volume, mode))
    return sorted(found)


def stop(daemon, pid, force=False, timeout=10.0):
    """Stop ``daemon`` (PID ``pid``) unless it exports volumes (``force``:
    anyway).  Returns the exports that kept it running, None when they
    cannot be listed (no QMP) and it kept running, [] once stopped."""
    try:
        exported = exports(daemon)
    except Exception:
        exported = None          # no QMP: its socket is gone
    if not force and exported is None:
        return None
    if exported and not force:
        return exported
    try:
        daemon.command("quit")
    except Exception:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _cmdline(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _cmdline(pid):
        os.kill(pid, signal.SIGKILL)
    return []
