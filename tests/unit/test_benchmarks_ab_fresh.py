"""``benchmarks.ab --fresh``: a new ``volattach-all`` per tree and round,
each round measuring the issue-23 cycle's server CPU, POST and GET
medians (a smoke of the harness: its figures mean nothing here)."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fresh_rounds_start_new_processes_and_report_get(tmp_path):
    out = tmp_path / "ab.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", "--fresh", "--tree", "one=.",
         "--tree", "two=.", "--rounds", "2", "--cycles", "2", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    with open(out) as f:
        data = json.load(f)
    assert data["options"]["warmup"] == 1
    pids = []
    for rounds in data["rounds"].values():
        assert len(rounds) == 2
        assert all(r["cycles"] >= 2 and r["errors"] == 0 and r["cpu_ms"] > 0
                   and r["post_ms"] > 0 and r["get_ms"] > 0 for r in rounds)
        pids += [r["pid"] for r in rounds]
    assert len(set(pids)) == 4, pids          # one process per tree and round
    medians = data["medians"]["one"]
    assert medians["get_ratio_to_one"] == medians["post_ratio_to_one"] == 1.0
    assert "GET" in result.stdout
