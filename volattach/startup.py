"""Start-up checks of the console scripts: one line, no traceback.

A daemon that cannot start says why in one line on stderr, naming the
cause and the option to change, and exits with one of two statuses:

- ``EXIT_CONFIG`` (2, as argparse): the configuration or the installation
  is wrong (a missing ``--config-file``, a value that is not valid, a
  ``--log-dir`` or a state directory that is not there or not writable, a
  database URL that does not open, a driver whose Python package is
  missing); change it and start again;
- ``EXIT_IN_USE`` (1): the configuration is fine but something running
  stands in the way (a port in use, a state directory another
  ``volattach-all`` holds).

Nothing has been started when these checks fail: no child process is left.
``unknown_options`` finds the keys of the configuration files that no
option of their section has (read as ``oslo-config-validator`` reads them),
each with the nearest valid name; ``parse_args`` warns about them at start.
``StateLock`` is ``volattach-all``'s hold on its state directory.
"""
import difflib
import errno
import fcntl
import glob
import os
import sys

from oslo_config import cfg

EXIT_CONFIG = 2
EXIT_IN_USE = 1


class StartupError(Exception):
    """A reason not to start; ``str()`` is the line for the operator
    (without the program name)."""

    def __init__(self, message, status=EXIT_CONFIG):
        super().__init__(message)
        self.status = status


def fail(prog, exc, status=None):
    """Print ``prog: exc`` on stderr and exit (``exc.status``, else
    ``status``, else EXIT_CONFIG)."""
    if status is None:
        status = getattr(exc, "status", EXIT_CONFIG)
    print("%s: %s" % (prog, exc), file=sys.stderr, flush=True)
    raise SystemExit(status)


def prog_name():
    return os.path.basename(sys.argv[0] or "volattach")


# -- configuration values ------------------------------------------------------

def _reason(exc):
    text = str(exc)
    marker = " is not valid: "
    return text.split(marker, 1)[1] if marker in text else text


def _where(conf, name, group):
    """`` 'value' in file`` of the last configuration file that sets
    ``[group] name``, or ""."""
    found = ""
    for path in config_files(conf):
        values = _parsed(path).get(group or "DEFAULT", {}).get(name)
        if values:
            found = " %r in %s" % (values[-1], path)
    return found


def _parsed(path):
    parser = cfg.ConfigParser(path, {})
    try:
        parser.parse()
    except Exception:
        return {}                       # oslo.config reported it already
    return parser.sections


def check_values(conf):
    """Read every registered option once: a value that does not parse or
    is out of range raises StartupError naming ``[group] option``."""
    groups = [(None, conf._opts)] + [
        (name, group._opts) for name, group in conf._groups.items()]
    for group, opts in groups:
        for name in list(opts):
            try:
                if group is None:
                    getattr(conf, name)
                else:
                    getattr(conf[group], name)
            except cfg.NoSuchOptError:
                continue
            except (cfg.Error, ValueError) as exc:
                raise StartupError("[%s] %s: invalid value%s: %s" % (
                    group or "DEFAULT", name, _where(conf, name, group),
                    _reason(exc))) from None


# -- unknown options -------------------------------------------------------------

def _opt_names(opts):
    names = set()
    for opt in opts:
        opt = opt.get("opt", opt) if isinstance(opt, dict) else opt
        names.add(opt.dest)
        names.add(opt.name)
        for deprecated in getattr(opt, "deprecated_opts", ()) or ():
            if deprecated.name:
                names.add(deprecated.name.replace("-", "_"))
    return names


def known_options(conf):
    """``{section: option names}`` of the sections whose keys are all
    known at start: volattach's own groups and ``[DEFAULT]``.  Sections
    registered later (a backend's, a library's) are not in it."""
    from volattach import conf as volattach_conf
    known = {"DEFAULT": _opt_names(conf._opts.values())}
    try:
        from oslo_messaging import opts as messaging_opts
        for group, opts in messaging_opts.list_opts():
            if group in (None, "DEFAULT"):
                known["DEFAULT"] |= _opt_names(opts)
    except Exception:       # pragma: no cover - oslo.messaging is a dependency
        pass
    own = [g for g, _ in volattach_conf._GROUPS if g]
    own += ["oslo_middleware", "oslo_policy"]
    for name in own:
        group = conf._groups.get(name)
        if group is not None:
            known[name] = _opt_names(group._opts.values())
    # the groups with keystoneauth options: their auth plugin's options too
    for name in ("cinder", "glance"):
        if name not in known:
            continue
        auth_type = None
        try:
            auth_type = getattr(conf, name).auth_type
        except Exception:
            pass
        if auth_type:
            try:
                from keystoneauth1 import loading as ks_loading
                known[name] |= _opt_names(
                    ks_loading.get_auth_plugin_conf_options(auth_type))
            except Exception:
                del known[name]     # a plugin we cannot list: no check
    return known


def config_files(conf):
    files = list(conf.config_file or [])
    for directory in conf.config_dir or []:
        files += sorted(glob.glob(os.path.join(directory, "*.conf")))
    return files


def unknown_options(conf):
    """``[(section, key, suggestion or None)]`` for the keys of the
    configuration files that no option of their (known) section has."""
    known = known_options(conf)
    found = []
    for path in config_files(conf):
        for section, keys in _parsed(path).items():
            names = known.get(section)
            if names is None:
                continue
            for key in keys:
                if key in names or key.replace("-", "_") in names:
                    continue
                near = difflib.get_close_matches(key, sorted(names), n=1,
                                                 cutoff=0.6)
                found.append((section, key, near[0] if near else None))
    return found


def unknown_option_lines(conf):
    lines = []
    for section, key, near in unknown_options(conf):
        line = "[%s] %s: unknown option" % (section, key)
        if near:
            line += ", did you mean %s?" % near
        else:
            line += ", ignored"
        lines.append(line)
    return lines


# -- directories ----------------------------------------------------------------

def check_log_destination(conf):
    """``--log-dir`` must be a writable directory and ``--log-file``'s
    directory must exist: else StartupError naming the option."""
    log_dir = conf.log_dir
    if log_dir:
        if not os.path.isdir(log_dir):
            raise StartupError("--log-dir %s: no such directory (create it, "
                               "or leave out --log-dir to log on stderr)"
                               % log_dir)
        if not os.access(log_dir, os.W_OK | os.X_OK):
            raise StartupError("--log-dir %s: not writable" % log_dir)
    log_file = conf.log_file
    if log_file:
        path = os.path.join(log_dir, log_file) if log_dir else log_file
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise StartupError("--log-file %s: no such directory %s"
                               % (log_file, parent))
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise StartupError("--log-file %s: not writable" % path)


def check_state_path(conf):
    """``[DEFAULT] state_path`` exists (created) and is writable."""
    path = conf.state_path
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise StartupError("[DEFAULT] state_path %s: cannot create it: %s"
                           % (path, exc.strerror or exc)) from None
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise StartupError("[DEFAULT] state_path %s: not readable and "
                           "writable by this user" % path)


def check_sqlite_url(url, option):
    """A SQLite database URL whose directory is missing or not writable
    (or that does not parse) raises StartupError naming ``option``."""
    import sqlalchemy
    from sqlalchemy import exc as sa_exc
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except (sa_exc.ArgumentError, ValueError) as exc:
        raise StartupError("%s = %s: not a database URL (%s)"
                           % (option, url, exc)) from None
    if not parsed.drivername.startswith("sqlite") or not parsed.database \
            or parsed.database == ":memory:":
        return
    path = os.path.abspath(parsed.database)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise StartupError("%s = %s: no such directory %s"
                           % (option, url, parent))
    if not os.access(parent, os.W_OK | os.X_OK) or (
            os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK)):
        raise StartupError("%s = %s: not readable and writable by this user"
                           % (option, url))


def database_error(exc, url, option):
    """The StartupError of a database that failed to open or migrate."""
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    reason = reason[0] if reason else type(exc).__name__
    try:
        import sqlalchemy
        shown = sqlalchemy.engine.make_url(url).render_as_string(
            hide_password=True)
    except Exception:
        shown = "<unparsable URL>"
    return StartupError("%s = %s: cannot open the database: %s"
                        % (option, shown, reason))


# -- drivers' packages -----------------------------------------------------------

def require_module(module, option, extra="libvirt"):
    """Import ``module`` or raise StartupError naming ``option`` and the
    package to install."""
    import importlib
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise StartupError(
            "%s needs the Python module %s, which is not installed (%s): "
            "pip install 'volattach[%s]'" % (option, module, exc, extra)
        ) from None


def check_drivers(conf, compute=True, volume=True):
    """The packages the configured drivers import, checked before
    anything starts."""
    if compute and conf.compute.virt_driver == "libvirt":
        require_module("libvirt", "[compute] virt_driver = libvirt")
    if volume:
        for option in file_backend_options(conf):
            require_module("qemu.qmp", option)


def file_backend_options(conf):
    """The options that select the file backend (``[volume] backend`` or
    a section of ``[volume] enabled_backends``)."""
    found = []
    names = conf.volume.enabled_backends
    if not names:
        if conf.volume.backend == "file":
            found.append("[volume] backend = file")
        return found
    parsed = {}
    for path in config_files(conf):
        parsed.update(_parsed(path))
    for section in names:
        values = parsed.get(section, {}).get("volume_backend") or []
        if values and values[-1].strip() == "file":
            found.append("[%s] volume_backend = file" % section)
    return found


# -- the state directory's lock -----------------------------------------------

class StateLock:
    """An exclusive ``fcntl`` lock on ``<state_path>/<name>.lock``, which
    holds the PID of its holder.  The kernel drops the lock when the holder
    exits, so a crashed holder does not block the next start."""

    def __init__(self, state_path, name="volattach-all"):
        self.path = os.path.join(state_path, "%s.lock" % name)
        self.name = name
        self.fd = None

    def acquire(self):
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = ""
            try:
                holder = os.read(fd, 64).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise StartupError("[DEFAULT] state_path: cannot lock %s: %s"
                                   % (self.path, exc.strerror)) from None
            raise StartupError(
                "[DEFAULT] state_path %s is in use by another %s (pid %s, "
                "lock file %s): stop it first, or give this one another "
                "state_path" % (os.path.dirname(self.path), self.name,
                                holder or "unknown", self.path),
                status=EXIT_IN_USE) from None
        os.ftruncate(fd, 0)
        os.write(fd, b"%d\n" % os.getpid())
        self.fd = fd
        return self

    def release(self):
        # the file stays (unlinking it would let a process that opened it
        # before lock a file no one else sees); the lock decides
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
