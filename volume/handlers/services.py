"""/os-services: this volume service's registration and heartbeat (admin)."""
from volattach.volume import views
from volattach.volume.handlers import context


class Collection:
    def __init__(self, manager, service_down_time):
        self.manager = manager
        self.service_down_time = service_down_time

    def on_get(self, req, resp):
        services = self.manager.service_list(
            context(req), host=req.get_param("host"),
            binary=req.get_param("binary"))
        resp.media = {"services": [
            views.service(s, self.service_down_time) for s in services]}
