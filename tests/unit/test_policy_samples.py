"""The policy samples in etc/volattach/ are what oslopolicy-sample-generator
writes from the entry points, and the enforcer entry points load."""
import pathlib

import pytest
from oslo_config import cfg
from oslo_policy import generator

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("service", ["compute", "volume"])
def test_sample_is_up_to_date(service, tmp_path):
    out = tmp_path / "sample.yaml"
    generator.generate_sample(
        args=["--namespace", "volattach-%s" % service,
              "--output-file", str(out)], conf=cfg.ConfigOpts())
    committed = ROOT / "etc" / "volattach" / ("policy-%s.yaml.sample"
                                             % service)
    assert out.read_text() == committed.read_text(), (
        "regenerate with: oslopolicy-sample-generator --config-file "
        "etc/volattach/volattach-policy-%s-generator.conf" % service)


@pytest.mark.parametrize("service, rule", [
    ("compute", "os_compute_api:os-volumes-attachments:index"),
    ("volume", "volume_extension:services:index")])
def test_enforcer_entry_point_loads_the_rules(service, rule):
    enforcer = generator._get_enforcer("volattach-%s" % service)
    enforcer.load_rules()
    assert rule in enforcer.rules
