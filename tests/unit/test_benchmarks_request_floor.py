"""``benchmarks.request_floor``: one tree's idle GET latencies through a
bare connection and the benchmark's client, and its application's own
time from the access log (a smoke of the harness: its figures mean
nothing here)."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_one_tree_gives_every_row(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.request_floor", "--tree", "one=.",
         "--requests", "20", "--pause", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    rows = re.findall(r"^\| one \| (GET [^|]+) \| ([^|]+) \| ([\d.]+) \|$",
                      result.stdout, re.M)
    found = {(read.strip(), how.strip()) for read, how, _ms in rows}
    for read in ("GET os-volume_attachments", "GET /volumes/{id}"):
        for how in ("http.client", "load.Http (requests)",
                    "application (access log)"):
            assert (read, how) in found, (read, how, result.stdout)
    assert all(float(ms) > 0 for _r, _h, ms in rows)
