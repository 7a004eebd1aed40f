"""The committed etc/volattach/volattach.conf.sample matches the options.

Regenerates the sample with oslo-config-generator (in a subprocess, so that
defaults changed by other tests in this process, e.g. oslo.log's
set_defaults, cannot leak in) and compares it with the committed file.
"""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
GENERATOR_CONF = REPO / "etc" / "volattach" / "volattach-config-generator.conf"
SAMPLE = REPO / "etc" / "volattach" / "volattach.conf.sample"
REGENERATE = ("oslo-config-generator --config-file "
              "etc/volattach/volattach-config-generator.conf")


def _generate(output, namespaces=None):
    args = ["--config-file", str(GENERATOR_CONF), "--output-file", str(output)]
    if namespaces:
        args = ["--output-file", str(output), "--wrap-width", "79"]
        for namespace in namespaces:
            args += ["--namespace", namespace]
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys; from oslo_config.generator import main; "
         "sys.exit(main())"] + args,
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        "oslo-config-generator failed (is volattach installed? "
        "pip install -e .):\n" + proc.stderr[-3000:])


def test_generator_config_lists_our_namespaces():
    text = GENERATOR_CONF.read_text()
    for namespace in ("volattach", "oslo.log", "oslo.messaging"):
        assert f"namespace = {namespace}\n" in text


def _options_by_section(text):
    """{section: set of '#name = default' lines} of a generated sample."""
    sections, current = {}, "DEFAULT"
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif line.startswith("#") and " = " in line and not line.startswith("# "):
            sections.setdefault(current, set()).add(line)
    return sections


def test_sample_is_up_to_date(tmp_path):
    """Every volattach option, with its default, is in the committed sample.

    Only volattach's own namespace is compared: oslo.log and oslo.messaging
    options change with their releases, which CI installs fresh.
    """
    fresh = tmp_path / "volattach.conf.sample"
    _generate(fresh, namespaces=("volattach",))
    generated = _options_by_section(fresh.read_text())
    assert "api" in generated and "cinder" in generated
    committed = _options_by_section(SAMPLE.read_text() if SAMPLE.exists() else "")
    missing = ["[%s] %s" % (section, line)
               for section, lines in sorted(generated.items())
               for line in sorted(lines - committed.get(section, set()))]
    assert not missing, (
        "etc/volattach/volattach.conf.sample is out of date with volattach/conf.py; "
        "regenerate it with: %s\nmissing or changed:\n%s" % (REGENERATE, "\n".join(missing)))
