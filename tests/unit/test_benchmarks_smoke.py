"""Keeps the benchmark harness (``benchmarks/``) working; measures nothing.

Benchmarks are not tests: these run scenario D (and B when RabbitMQ and
PostgreSQL are there) in ``--quick`` mode, a few seconds each, and check that
the harness ran cycles end to end and wrote its JSON (raw samples, CPU per
process) and its summary; plus the harness's own small functions.
"""
import glob
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from benchmarks import cpu
from benchmarks import profile_d
from benchmarks import report
from tests import utils

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _run_quick(scenario, output_dir, timeout=120):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--scenario", scenario, "--quick",
         "--output-dir", str(output_dir)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    [path] = glob.glob(os.path.join(str(output_dir), "*-%s.json" % scenario))
    with open(path) as f:
        data = json.load(f)
    stem = path[:-len(".json")]
    with open(stem + ".md") as f:
        summary = f.read()
    assert os.path.exists(stem + ".png") == HAVE_MATPLOTLIB
    return data, summary, result.stdout


def _check_cycles(data, summary, stdout, scenario):
    assert data["scenario"] == scenario
    assert [p["name"] for p in data["phases"]] == ["sequential", "concurrent"]
    for phase in data["phases"]:
        assert phase["errors"] == []
        assert phase["cycles"] >= 1
        assert len(phase["samples"]) == phase["cycles"]
        for sample in phase["samples"]:
            # each step of the cycle was timed, in order
            assert 0 < sample["attach_post"] <= sample["attach_e2e"] <= sample["cycle"]
            assert 0 < sample["detach_delete"] <= sample["detach_e2e"] <= sample["cycle"]
        assert phase["cpu_roles"]["volattach"] > 0
        assert phase["cpu_per_cycle"]["deployment"] > 0
    assert "Scenario %s" % scenario in summary
    assert "CPU per cycle" in summary
    assert "Scenario %s" % scenario in stdout   # the summary is printed too


def test_scenario_d_quick(tmp_path):
    data, summary, stdout = _run_quick("D", tmp_path)
    _check_cycles(data, summary, stdout, "D")
    assert data["deployment"]["kind"] == "all-in-one"
    assert set(data["phases"][0]["cpu_seconds"]) == {"volattach-all", "client", "other"}


@pytest.mark.integration
def test_scenario_b_quick(tmp_path):
    utils.require_env(utils.RABBIT_URL_ENV, "the benchmark smoke of scenario B")
    utils.require_env(utils.PG_URL_ENV, "the benchmark smoke of scenario B")
    data, summary, stdout = _run_quick("B", tmp_path)
    _check_cycles(data, summary, stdout, "B")
    groups = data["phases"][-1]["cpu_seconds"]
    for role in ("api", "conductor", "compute1", "compute2", "volume", "broker", "database"):
        assert role in groups
    assert groups["api"] > 0 and groups["conductor"] > 0 and groups["database"] > 0


# -- the harness's own functions -------------------------------------------------------

def test_percentile_interpolates():
    assert report.percentile([], 50) is None
    assert report.percentile([3.0], 99) == 3.0
    assert report.percentile([1, 2, 3, 4], 50) == 2.5
    assert report.percentile([4, 1, 3, 2], 100) == 4
    assert report.percentile(list(range(101)), 99) == 99


def test_cpu_roles_split_deployment_broker_database():
    roles = report.cpu_roles({"api": 1.0, "conductor": 0.5, "compute1": 0.25,
                              "broker": 2.0, "database": 0.5, "database-aux": 0.25,
                              "client": 3.0, "other": 7.0})
    assert roles == {"volattach": 1.75, "broker": 2.0, "database": 0.75,
                     "deployment": 4.5, "client": 3.0, "other": 7.0}


def test_cpu_meter_counts_a_busy_child(tmp_path):
    # The child says when it has burnt its 0.3 s of CPU, so that a loaded
    # machine (which only delays the burn) cannot make the window too short.
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, time\nt=time.process_time()\n"
                              "while time.process_time()-t<0.3: pass\n"
                              "print('burnt', flush=True)\n"
                              "time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        meter = cpu.CpuMeter({"child": lambda: {child.pid}}, interval=0.05).start()
        import time
        assert child.stdout.readline().strip() == "burnt"
        time.sleep(0.2)
        result = meter.stop()
    finally:
        child.kill()
        child.wait()
    # created inside the window: counted from zero
    assert 0.2 < result["child"] < 0.6
    assert result["other"] >= 0


def test_pyspy_summary(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "run (threading.py:1);dispatch (conductor/manager.py:10);"
        "execute (sqlalchemy/engine/base.py:5) 3\n"
        "run (threading.py:1);on_get (api/handlers/servers.py:20);dumps (json/__init__.py:2) 1\n")
    summary = profile_d.summarize_pyspy(str(raw))
    assert summary["samples"] == 4 and summary["work_samples"] == 4
    assert dict(summary["under_library_pct"])["SQLAlchemy (ORM + core)"] == 75.0
    assert dict(summary["under_library_pct"])["json"] == 25.0
    assert summary["own_time_top"][0] == ("execute (sqlalchemy/engine/base.py:5)", 75.0)
    assert dict(summary["thread_kind_pct"]) == {"other": 100.0}
    poll = ("run (threading.py:1);PollStyleListenerAdapter._runner (oslo_messaging/_drivers/"
            "base.py:294);drain_events (kombu/transport/virtual/base.py:1012) 6\n")
    dispatch = ("run (threading.py:1);_do_dispatch (oslo_messaging/rpc/dispatcher.py:229);"
                "attach_volume (conductor/manager.py:99) 2\n")
    raw.write_text(poll + dispatch)
    summary = profile_d.summarize_pyspy(str(raw))
    # the poll loop is not work: the work shares are over the 2 dispatch samples
    assert dict(summary["thread_kind_pct"]) == {
        "RPC listener/reply poll loop (oslo.messaging/kombu, no message)": 75.0,
        "RPC dispatch: conductor": 25.0}
    assert summary["work_samples"] == 2
    assert dict(summary["first_volattach_frame_pct"]) == {
        "attach_volume (conductor/manager.py)": 100.0}
    raw.write_text(poll + dispatch + "run (threading.py:1);dispatch (conductor/manager.py:10);"
                   "execute (sqlalchemy/engine/base.py:5) 3\n"
                   "run (threading.py:1);on_get (api/handlers/servers.py:20);"
                   "dumps (json/__init__.py:2) 1\n")
    summary = profile_d.summarize_pyspy(str(raw))
    assert dict(summary["first_volattach_frame_pct"]) == {
        "dispatch (conductor/manager.py)": 50.0, "attach_volume (conductor/manager.py)": 33.3,
        "on_get (api/handlers/servers.py)": 16.7}


def test_route_of_hides_ids():
    assert profile_d.route_of(
        "/v3/0123456789abcdef0123456789abcdef/volumes/"
        "6f1c1b8e-3b1a-4c6e-9d3b-2f1e0d9c8b7a") == "/v3/{project}/volumes/{id}"


def test_bytecodes_counts_a_few_cycles(tmp_path):
    out = tmp_path / "bytecodes.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.bytecodes", "--cycles", "2",
         "--poll-wait", "0.05", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    with open(out) as f:
        data = json.load(f)
    assert data["cycles"] == 2 and data["errors"] == 0
    assert data["bytecodes_per_cycle"] > 1000
    # the API and the volume service ran on traced threads, the client did not
    assert any(name.startswith("api/") for name in data["functions"])
    assert not any(name.startswith("benchmarks/load.py") for name in data["functions"])
    from benchmarks import bytecodes
    text = bytecodes.compare(data, data)
    assert "(+0.0 %)" in text and "by module" in text


def test_ab_runs_rounds_on_each_tree(tmp_path):
    out = tmp_path / "ab.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", "--tree", "one=.", "--tree", "two=.",
         "--rounds", "2", "--cycles", "2", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    with open(out) as f:
        data = json.load(f)
    assert set(data["rounds"]) == {"one", "two"}
    for rounds in data["rounds"].values():
        assert len(rounds) == 2
        assert all(r["cycles"] >= 2 and r["errors"] == 0 and r["cpu_ms"] > 0
                   for r in rounds)
    assert data["medians"]["one"]["ratio_to_one"] == 1.0
    assert "ratio to one" in result.stdout
