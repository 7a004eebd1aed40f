"""Packaging guards: the wheel installs one top-level name, ``volattach``,
and no module imports a role folder by its bare name.

Running pytest from the repository root puts the root on ``sys.path``, so a
stray ``import api`` would still work here (and load a second copy of the
module) while failing for anyone who installed the wheel: the AST scan
below is what catches it.
"""
import ast
import pathlib
import subprocess
import sys
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ROLE_NAMES = {"api", "compute", "conductor", "db", "objects", "rpc", "volume"}
SCANNED = ("api", "compute", "conductor", "db", "objects", "rpc", "volume",
           "volattach", "tests", "benchmarks", "tools", "setup.py")


def _python_files():
    for entry in SCANNED:
        path = REPO / entry
        if path.is_file():
            yield path
        else:
            yield from path.rglob("*.py")


def _bare_role_imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None)
              in ("__import__", "import_module") and node.args
              and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        else:
            continue
        for name in names:
            if name.split(".")[0] in ROLE_NAMES:
                yield "%s:%d: %s" % (path.relative_to(REPO), node.lineno, name)


def test_no_module_imports_a_role_folder_by_its_bare_name():
    offenders = [hit for path in _python_files() for hit in _bare_role_imports(path)]
    assert offenders == [], "import these as volattach.<role>:\n" + "\n".join(offenders)


def test_the_scan_sees_a_bare_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import objects\nfrom compute import manager\n"
                      "from volattach.compute import rpcapi\n"
                      "__import__('rpc.inproc')\n")
    hits = [h.split(": ")[1] for h in _bare_role_imports_at(sample)]
    assert hits == ["objects", "compute", "rpc.inproc"]


def _bare_role_imports_at(path):
    global REPO
    saved, REPO = REPO, path.parent
    try:
        return list(_bare_role_imports(path))
    finally:
        REPO = saved


@pytest.mark.timeout(300)
def test_wheel_installs_only_the_volattach_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(tmp_path), str(REPO)],
        check=True, capture_output=True, timeout=280)
    (wheel,) = tmp_path.glob("volattach-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"volattach"}
    # every role is inside, with its data files (migrations)
    for role in sorted(ROLE_NAMES):
        assert "volattach/%s/__init__.py" % role in names
    assert "volattach/db/migrations/versions/0001_initial.py" in names
    assert "volattach/volume/db/migrations/versions/0001_initial.py" in names
    assert "volattach/volume/db/migrations/script.py.mako" in names
    dist_info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as zf:
        entry_points = zf.read(dist_info).decode()
    for script in ("api", "conductor", "compute", "volume", "manage", "all"):
        assert "volattach-%s = volattach.cmd.%s:main" % (script, script) in entry_points
    assert "volattach-inproc = volattach.rpc.inproc:InProcessDriver" in entry_points
