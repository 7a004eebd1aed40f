"""GET /limits: the project's absolute limits and usage (no rate limits).

volattach-volume enforces no quotas, so every maximum is -1 (unlimited);
the usage counts are the project's volumes and gigabytes."""
from volattach.volume.handlers import context


class Limits:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        resp.media = {"limits": {
            "rate": [], "absolute": self.manager.limits(context(req))}}
