"""``[database] sqlite_synchronous``: the PRAGMA synchronous of both SQLite
databases (the compute database's engine and the volume service's), read
back from a new connection."""
import pytest

import volattach  # noqa: F401
from volattach.db import engine as db_engine
from volattach.db.core import sqlite_settings
from volattach.conf import CONF
from volattach.volume.db import engine as volume_db_engine

# PRAGMA synchronous answers a number: 1 NORMAL, 2 FULL.
PRAGMA_NUMBER = {"NORMAL": 1, "FULL": 2}


def _synchronous(engine):
    with engine.connect() as conn:
        return conn.exec_driver_sql("PRAGMA synchronous").scalar()


@pytest.fixture
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("sqlite_synchronous", group="database")


def test_default_is_normal(conf):
    assert conf.database.sqlite_synchronous == "NORMAL"


def test_rejects_other_values(conf):
    with pytest.raises(ValueError):
        conf.set_override("sqlite_synchronous", "OFF", group="database")
    with pytest.raises(ValueError):
        sqlite_settings.synchronous("OFF")


@pytest.mark.parametrize("value", ["NORMAL", "FULL"])
def test_compute_engine_applies_option(conf, tmp_path, value):
    conf.set_override("sqlite_synchronous", value, group="database")
    engine = db_engine.make_engine("sqlite:///%s/compute.sqlite" % tmp_path)
    try:
        assert _synchronous(engine) == PRAGMA_NUMBER[value]
        with engine.connect() as conn:
            assert conn.exec_driver_sql(
                "PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()


@pytest.mark.parametrize("value", ["NORMAL", "FULL"])
def test_volume_engine_applies_option(conf, tmp_path, value):
    conf.set_override("sqlite_synchronous", value, group="database")
    database = volume_db_engine.Database(
        "sqlite:///%s/volume.sqlite" % tmp_path)
    try:
        assert _synchronous(database.engine) == PRAGMA_NUMBER[value]
    finally:
        database.dispose()


@pytest.mark.parametrize("value", ["NORMAL", "FULL"])
def test_volume_engine_explicit_value_wins(conf, tmp_path, value):
    other = "FULL" if value == "NORMAL" else "NORMAL"
    conf.set_override("sqlite_synchronous", other, group="database")
    engine = volume_db_engine.create_engine(
        "sqlite:///%s/volume.sqlite" % tmp_path, sqlite_synchronous=value)
    try:
        assert _synchronous(engine) == PRAGMA_NUMBER[value]
    finally:
        engine.dispose()

