"""The README's two quick-start flows, run as written, in both orders,
against one ``volattach-all`` process.

The blocks are taken from README.md itself ("Attach a volume with curl",
"Attach read-only with openstackclient": its clouds.yaml and its commands),
with only the ports changed (the deployment runs on free ports, not
8774/8776) and the ``pip install`` line left out (openstackclient comes from
``test_openstackclient``'s venv).  Each flow names its own server and cleans
up after itself, so either may run first, and again.
"""
import os
import pathlib
import re
import subprocess

import pytest

from tests.functional import test_openstackclient
from tests.functional.allinone_process import AllInOneProcess
from tests.integration import client as clients

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
TOKEN = "alice:demo"

pytestmark = pytest.mark.timeout(900)


def _section(text, title):
    """From ``title`` to the next heading of level 2 or 3."""
    start = text.index(title)
    following = re.search(r"\n#{2,3} ", text[start + len(title):])
    return text[start:start + len(title) + following.start()]


def _blocks(section, language):
    return re.findall(r"```%s\n(.*?)```" % language, section, re.S)


def readme_flows():
    text = README.read_text()
    curl = _section(text, "### Attach a volume with curl")
    osc = _section(text, "### Attach read-only with openstackclient")
    [curl_script] = _blocks(curl, "sh")
    [clouds_yaml] = _blocks(osc, "yaml")
    [osc_script] = _blocks(osc, "sh")
    return curl_script, clouds_yaml, osc_script


def _localize(text, deployment):
    return (text.replace("http://127.0.0.1:8774", deployment.api_url)
            .replace("http://127.0.0.1:8776", deployment.volume_url))


@pytest.fixture(scope="module")
def flows(tmp_path_factory):
    openstack, reason = test_openstackclient.install_openstackclient()
    if openstack is None:
        test_openstackclient._unavailable(reason)
    tmp = tmp_path_factory.mktemp("readme")
    deployment = AllInOneProcess(tmp).start()
    curl_script, clouds_yaml, osc_script = readme_flows()
    clouds = tmp / "clouds.yaml"
    clouds.write_text(_localize(clouds_yaml, deployment))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OS_")
           and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = os.path.dirname(openstack) + os.pathsep + env["PATH"]
    env["OS_CLIENT_CONFIG_FILE"] = str(clouds)

    def run(name):
        script = curl_script if name == "curl" else osc_script
        script = "\n".join(line for line in script.splitlines()
                           if not line.startswith("pip install"))
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", _localize(script, deployment)],
            env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (
            "README's %s flow failed (exit %d):\n%s\n%s\n%s" % (
                name, proc.returncode, proc.stdout[-3000:],
                proc.stderr[-3000:], deployment.log()))
        return proc.stdout

    run.deployment = deployment
    yield run
    deployment.stop()


def _check_curl(out, deployment):
    assert '"device": "/dev/vdb"' in out, out      # the synchronous attach
    assert "\n202\n" in "\n" + out, out            # the 2.101 attach
    # the attachment list after polling shows both volumes
    listed = [line for line in out.splitlines() if "volumeAttachments" in line]
    assert listed and listed[-1].count('"device"') == 2, out
    _check_clean(deployment, "curl-server", ("curl-data", "curl-data2"))


def _check_osc(out, deployment):
    assert re.search(r"Attach Mode\s*\|\s*ro\b", out), out
    assert '"attach_mode": "ro"' in out, out
    _check_clean(deployment, "osc-server", ("ro-vol", "boot-vol"))


def _check_clean(deployment, server_name, volume_names):
    """The flow cleaned up after itself (deletes finish asynchronously)."""
    api = clients.ComputeClient(deployment.api_url, token=TOKEN)
    volumes = clients.VolumeClient(deployment.volume_url, token=TOKEN)
    status, body, _ = api.list_servers(name="^%s$" % server_name)
    assert status == 200, body
    for server in body["servers"]:
        api.wait_for_server_deleted(server["id"])
    status, body, _ = volumes.list_volumes()
    assert status == 200, body
    for volume in body["volumes"]:
        if volume["name"] in volume_names:
            volumes.wait_for_volume_deleted(volume["id"])


def test_readme_flows_curl_then_openstackclient(flows):
    _check_curl(flows("curl"), flows.deployment)
    _check_osc(flows("openstackclient"), flows.deployment)


def test_readme_flows_openstackclient_then_curl(flows):
    _check_osc(flows("openstackclient"), flows.deployment)
    _check_curl(flows("curl"), flows.deployment)


# -- drift of the README's other commands (issue 33, item 8): fast checks,
# no deployment --------------------------------------------------------------

def _sh_blocks():
    return _blocks(README.read_text(), "sh")


def _code(line):
    """A shell line without its comment (a ``#`` that starts a word)."""
    return re.split(r"(?:^|\s)#", line, maxsplit=1)[0]


_COMMAND_START = re.compile(
    r"(?:^|&&|\|\||;|\||\$\(|\bthen\b|\bdo\b)\s*(volattach-[a-z]+)\b")


def test_readme_console_scripts_run_as_written():
    """After scripts/run the console scripts are in .venv/bin, not on
    PATH: a block calls them by path, or puts them on PATH first."""
    bare = []
    for block in _sh_blocks():
        on_path = False
        for line in block.splitlines():
            code = _code(line)
            if re.match(r"\s*export PATH=", code):
                on_path = True
            if not on_path:
                bare += [(m.group(1), line.strip())
                         for m in _COMMAND_START.finditer(code)]
    assert bare == [], bare


def test_readme_shell_functions_hide_no_command():
    names = set()
    for block in _sh_blocks():
        names |= set(re.findall(r"^\s*([A-Za-z_][\w-]*)\s*\(\)\s*\{", block,
                                re.M))
    assert names, "the curl flow defines its helpers"
    for name in sorted(names):
        kind = subprocess.run(["bash", "-c", "type -t %s || true" % name],
                              capture_output=True, text=True).stdout.strip()
        assert kind == "", "%s() hides the %s %s" % (name, kind, name)


def test_readme_curl_waits_time_out_with_a_message():
    curl_script = readme_flows()[0]
    [definition] = re.findall(r"^wait_for\(\) \{.*?^\}$", curl_script,
                              re.M | re.S)
    from tests import utils
    closed = "http://127.0.0.1:%d/" % utils.free_port()
    proc = subprocess.run(
        ["bash", "-c", "T=x; %s\nWAIT=2 wait_for %s never" % (definition,
                                                             closed)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "timed out waiting for never at %s" % closed in proc.stderr


def test_readme_copies_into_directories_it_created():
    missing = []
    for block in _sh_blocks():
        made = set()
        for line in block.splitlines():
            code = _code(line)
            for match in re.finditer(r"\bmkdir\s+(?:-p\s+)?(\S+)", code):
                made.add(match.group(1).rstrip("/"))
            for match in re.finditer(r"\bcp\s+(?:-\w+\s+)*\S+\s+(/\S+)", code):
                parent = match.group(1).rsplit("/", 1)[0]
                if parent not in made:
                    missing.append(line.strip())
    assert missing == [], missing


def test_readme_example_image_ids_agree():
    from volattach import conf as volattach_conf
    defaults = next(o.default for o in volattach_conf.compute_opts
                    if o.name == "fake_images")
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    text = README.read_text()
    refs = re.findall(r'"imageRef": "(%s)"' % uuid, text)
    assert refs and set(refs) <= set(defaults), (refs, defaults)
    [row] = [line for line in text.splitlines()
             if line.startswith("| `[compute] fake_images`")]
    assert re.findall(uuid, row) == list(defaults), row
