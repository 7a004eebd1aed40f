"""Keeps ``benchmarks.inprocess_volume_calls`` working; asserts no figure."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_it_runs_every_variant_and_prints_the_split():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.inprocess_volume_calls",
         "--requests", "20", "--rounds", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    names = [line.split()[0] for line in lines[2:] if line.split()]
    assert names[:3] == ["socket", "inprocess", "app_only"], proc.stdout
    assert lines[-1].startswith("split of the socket path"), proc.stdout
