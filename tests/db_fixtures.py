"""Database fixtures shared by the suites: a fresh compute database on
SQLite, and on PostgreSQL when VOLATTACH_TEST_PG_URL is set."""
import contextlib
import socket
import threading
import time
import uuid

import sqlalchemy as sa

from tests import utils


@contextlib.contextmanager
def fresh_postgres_database(base_url):
    """Create a uniquely named database next to ``base_url`` and drop it after."""
    name = "va_" + uuid.uuid4().hex[:12]
    admin = sa.make_url(base_url).set(database="postgres")
    engine = sa.create_engine(admin.render_as_string(hide_password=False),
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE "%s"' % name))
    try:
        yield sa.make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        from volattach.db import engine as db_engine
        db_engine.dispose_all()
        with engine.connect() as conn:
            conn.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})
            conn.execute(sa.text('DROP DATABASE IF EXISTS "%s"' % name))
        engine.dispose()


@contextlib.contextmanager
def compute_database(kind, tmp_path, revision="head"):
    """A compute database URL of ``kind`` ('sqlite' or 'postgresql'),
    migrated to ``revision`` (a migration test's release before)."""
    from volattach.db import migration
    if kind == "sqlite":
        url = "sqlite:///%s" % (tmp_path / "compute.sqlite")
        migration.db_sync(url, revision=revision)
        yield url
        return
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with fresh_postgres_database(base) as url:
        migration.db_sync(url, revision=revision)
        yield url


def run_sql(url, *statements):
    """Run ``statements`` (``(sql text, parameters)`` pairs) in one
    transaction of their own on ``url``: a migration test's rows of the
    release before, written as that release's schema has them."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for sql, params in statements:
                conn.execute(sa.text(sql), params)
    finally:
        engine.dispose()


@contextlib.contextmanager
def configured_compute_database(kind, tmp_path, revision="head"):
    """``compute_database(kind, revision)`` as the ``[database] connection``
    of the global CONF for the block; its engines are disposed of
    afterwards."""
    from volattach.db import engine as db_engine
    from volattach.conf import CONF
    CONF([], project="volattach", default_config_files=[])
    with compute_database(kind, tmp_path, revision) as url:
        CONF.set_override("connection", url, group="database")
        try:
            yield url
        finally:
            CONF.clear_override("connection", group="database")
            db_engine.dispose_all()


def terminate_backends(url, settle=0.2):
    """pg_terminate_backend every session of ``url``'s database but this
    one (what a PostgreSQL restart does to a pool); returns how many.  Then
    waits ``settle`` seconds for the backends' goodbye to reach the
    sockets."""
    name = sa.make_url(url).database
    admin = sa.create_engine(url)
    try:
        with admin.connect() as conn:
            killed = conn.execute(sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name}).scalar()
    finally:
        admin.dispose()
    time.sleep(settle)
    return killed


class TcpProxy:
    """A loopback TCP proxy in front of a database server, to take it down
    and back as a restart does: ``stop()`` closes the listening socket and
    every proxied connection (clients see their sessions die and new
    connections refused), ``start()`` listens again on the same port."""

    def __init__(self, target_host, target_port):
        self.target = (target_host, target_port)
        self.port = utils.free_port()
        self._listener = None
        self._sockets = set()
        self._lock = threading.Lock()

    def url_for(self, url):
        """``url`` pointing at the proxy instead of the server."""
        return (sa.make_url(url).set(host="127.0.0.1", port=self.port)
                .render_as_string(hide_password=False))

    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        if self._listener is not None:
            try:    # wakes the accepting thread (close alone would not)
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def instance_row(**values):
    """Create an instance row (in the configured compute database) that a
    test's mappings can belong to; returns its uuid."""
    import json
    from volattach.db import api as db_api
    row = {"uuid": str(uuid.uuid4()), "project_id": "demo", "user_id": "alice",
           "vm_state": "active", "power_state": 1, "locked": False,
           "launch_index": 0, "deleted": 0,
           "flavor": json.dumps({"flavorid": "1"})}
    row.update(values)
    db_api.instance_create(row)
    return row["uuid"]
