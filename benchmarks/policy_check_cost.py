"""Cost of one policy check of the compute API, before and after oslo.policy.

Run from the repository root (the "before" module is api/policy.py as of
commit e22c8de, the Python predicates):
    git show e22c8de:api/policy.py > /tmp/old_policy.py
    .venv/bin/python -m benchmarks.policy_check_cost /tmp/old_policy.py
"""
import sys
import importlib.util
import timeit
from volattach import context
from volattach.api import policy as new
from tests.unit.api.conftest import make_conf
spec = importlib.util.spec_from_file_location("old_policy", sys.argv[1])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
new.init(make_conf())
ctx = context.from_noauth_token("alice:p1")
A = "os_compute_api:os-volumes-attachments:index"
t = {"project_id": "p1"}
assert old.check(ctx, A, t) and new.check(ctx, A, t)
for name, mod in (("before (Python predicates)", old), ("after (oslo.policy)", new)):
    n = 20000
    best = min(timeit.repeat(lambda: mod.check(ctx, A, t), number=n, repeat=5))
    print("%s: %.2f us per check" % (name, best / n * 1e6))
