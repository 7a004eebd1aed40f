"""Statistics, progress bars and the three outputs of a run.

``benchmarks/results/<timestamp>-<scenario>.json`` holds everything: the
command line, the machine, the deployment, and per phase the raw samples,
the CPU seconds per role and the computed summary.  ``.md`` holds the
summary tables printed at the end, ``.png`` the plot (when matplotlib is
installed: ``pip install -e .[bench]``).
"""
import json
import math
import os
import platform
import sys
import time

import psutil


# -- statistics ------------------------------------------------------------------

def percentile(values, q):
    """Linear-interpolated percentile (q in 0..100) of ``values``; None if empty."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    pos = (len(values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values),
            "mean": sum(values) / len(values)}


def ms(value, digits=1):
    return "-" if value is None else ("%.*f" % (digits, value * 1000.0))


# -- CPU roles -------------------------------------------------------------------

BROKER_GROUPS = ("broker",)
DATABASE_GROUPS = ("database", "database-aux")
NOT_DEPLOYMENT = ("client", "other")


def cpu_roles(cpu):
    """{volattach, broker, database, deployment, client, other} seconds."""
    volattach = sum(v for g, v in cpu.items()
                    if g not in BROKER_GROUPS + DATABASE_GROUPS + NOT_DEPLOYMENT)
    broker = sum(cpu.get(g, 0.0) for g in BROKER_GROUPS)
    database = sum(cpu.get(g, 0.0) for g in DATABASE_GROUPS)
    return {"volattach": volattach, "broker": broker, "database": database,
            "deployment": volattach + broker + database,
            "client": cpu.get("client", 0.0), "other": cpu.get("other", 0.0)}


# -- progress ----------------------------------------------------------------------

_T0 = time.monotonic()


def log(message):
    """A timestamped step on stderr (seconds since the command started)."""
    print("[%6.1fs] %s" % (time.monotonic() - _T0, message), file=sys.stderr, flush=True)


class _PlainProgress:
    """What tqdm would show, one line every few seconds, when tqdm is missing."""

    def __init__(self, total=None, desc="", unit="it"):
        self.total, self.desc, self.unit = total, desc, unit
        self.n = 0
        self._t0 = self._last = time.monotonic()

    def update(self, n=1):
        self.n += n
        now = time.monotonic()
        if now - self._last >= 2.0:
            self._last = now
            rate = self.n / max(1e-9, now - self._t0)
            total = "/%s" % self.total if self.total else ""
            print("%s: %d%s %s (%.1f/s)" % (self.desc, self.n, total, self.unit, rate),
                  file=sys.stderr, flush=True)

    def set_postfix_str(self, text):
        pass

    def close(self):
        elapsed = time.monotonic() - self._t0
        print("%s: %d %s in %.1fs" % (self.desc, self.n, self.unit, elapsed),
              file=sys.stderr, flush=True)


def progress(total=None, desc="", unit="it"):
    """A tqdm progress bar (a plain stderr printer without tqdm)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainProgress(total, desc, unit)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                mininterval=0.5)


def timed_progress(seconds, desc):
    """A bar that fills with wall time, for phases measured in seconds;
    returns (bar, tick) where tick() advances it to the current time."""
    bar = progress(total=round(seconds, 1), desc=desc, unit="s")
    t0 = time.monotonic()
    state = {"done": 0.0}

    def tick():
        now = min(seconds, time.monotonic() - t0)
        step = round(now - state["done"], 1)
        if step > 0:
            bar.update(step)
            state["done"] += step
    return bar, tick


# -- outputs ----------------------------------------------------------------------

def machine_info():
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "loadavg": list(os.getloadavg()),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}


def markdown_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out)


def output_stem(output_dir, scenario):
    """``<output_dir>/<timestamp>-<scenario>``: the common name of one run's
    files (taken once, so that files a run writes early, like py-spy's raw
    samples, share it with the summary written at the end)."""
    os.makedirs(output_dir, exist_ok=True)
    return os.path.join(output_dir, "%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), scenario))


def write_outputs(result, output_dir, plot=None, stem=None):
    """Write ``<stem>.json``, ``.md`` and (with ``plot``) ``.png``; print the
    summary; return the paths.  ``stem`` defaults to a new
    ``output_stem(output_dir, result["scenario"])``."""
    stem = stem or output_stem(output_dir, result["scenario"])
    paths = {"json": stem + ".json", "md": stem + ".md"}
    summary = result.get("summary_md", "")
    if plot is not None:
        try:
            import matplotlib
            matplotlib.use("Agg")
        except ImportError:
            result.setdefault("notes", []).append(
                "no plot: matplotlib is not installed (pip install -e .[bench])")
        else:
            paths["png"] = stem + ".png"
            log("plotting")
            plot(result, paths["png"])
            summary += "\n\n![plot](%s)\n" % os.path.basename(paths["png"])
    result["outputs"] = paths
    with open(paths["json"], "w") as f:
        json.dump(result, f, indent=1, default=str)
    with open(paths["md"], "w") as f:
        f.write(summary + "\n")
    print("\n" + summary + "\n", flush=True)
    for kind, path in paths.items():
        print("%s: %s" % (kind, path), flush=True)
    return paths
