"""``scripts/run`` (the README's first command) says what it does while it
installs, instead of a silent first minute.

The script is copied into a small project of its own (a ``setup.py`` that
takes a few seconds, a ``volattach-all`` console script that prints its
arguments), so the test installs that project into a fresh venv, never
volattach into the project's ``.venv``.  pip fetches setuptools for the
build (a package index is needed: without one the test skips, or fails under
CI).
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests import utils

REPO = pathlib.Path(__file__).resolve().parents[2]

SETUP_PY = """\
import time
from setuptools import setup
time.sleep(4)   # pip runs this at least twice
setup(name="fake-volattach", version="0.0.1", packages=["fakepkg"],
      entry_points={"console_scripts": ["volattach-all = fakepkg:main"]})
"""


@pytest.mark.timeout(600)
def test_scripts_run_prints_progress_while_it_installs(tmp_path):
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "fakepkg").mkdir()
    shutil.copy(REPO / "scripts" / "run", project / "scripts" / "run")
    (project / "setup.py").write_text(SETUP_PY)
    (project / "setup.cfg").write_text("[metadata]\nname = fake-volattach\n")
    (project / "fakepkg" / "__init__.py").write_text(
        "import sys\n\ndef main():\n    print('volattach-all', sys.argv[1:])\n")
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    env = dict(os.environ, PYTHON=base_python)
    env.pop("VIRTUAL_ENV", None)

    first = subprocess.run([str(project / "scripts" / "run"), "--version"],
                           env=env, capture_output=True, text=True,
                           timeout=500)
    if "pip install failed" in first.stderr:
        message = "pip could not install (no package index?):\n" + first.stderr
        if utils.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert lines[0].startswith("scripts/run: creating "), lines
    assert lines[1].startswith("scripts/run: installing "), lines
    progress = [line for line in lines if line.startswith("scripts/run: ... ")]
    # a line about every 5 s while pip works, each saying how long it has
    # been (this install takes at least 8 s)
    seconds = [int(line.split()[2]) for line in progress]
    assert seconds and 5 <= seconds[0] <= 7, lines
    assert all(4 <= b - a <= 7 for a, b in zip(seconds, seconds[1:])), lines
    assert lines[-1].startswith("scripts/run: installed in "), lines
    # and where the console scripts are (issue 33, item 8)
    assert ('export PATH="%s/.venv/bin:$PATH"' % project) in lines[-1], lines
    assert first.stdout == "volattach-all ['--version']\n"

    # installed: the next run starts at once, without a word
    again = subprocess.run([str(project / "scripts" / "run"), "x"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    assert again.stdout == "volattach-all ['x']\n"
