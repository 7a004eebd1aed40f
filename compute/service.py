"""The compute daemon's service: the compute manager's RPC server, with
registration and heartbeats through the conductor (a compute never touches
the database), and the host's connection counts rebuilt before it serves.
Its row carries the host's volume connector and the images its driver can
boot (refreshed on every state report)."""
from volattach.compute import manager as compute_manager
from volattach.compute import rpcapi as compute_rpcapi
from volattach.compute import virt
from volattach.conductor import rpcapi as conductor_rpcapi
from volattach import context as volattach_context
from volattach.conf import CONF
from volattach.objects import base as objects_base
from volattach import service


class ComputeService(service.Service):
    """A compute on ``host``.  Object calls go to the conductor:
    process-wide for a compute daemon, per thread with
    ``in_process_with_conductor`` (volattach-all, the functional tests),
    where a conductor serves the database in the same process; there
    ``indirection_api`` may name how (volattach-all's
    ``conductor.local_indirection.LocalIndirection``: in the calling
    thread), else over the bus (``conductor.rpcapi.ConductorAPI``)."""

    def __init__(self, host=None, in_process_with_conductor=False,
                 indirection_api=None):
        host = host or CONF.compute.host
        self.driver = virt.load_driver(CONF.compute.virt_driver, host)
        self.manager = compute_manager.ComputeManager(
            host, virt.logged(self.driver))
        if indirection_api is None or not in_process_with_conductor:
            indirection_api = conductor_rpcapi.ConductorAPI()
        if not in_process_with_conductor:
            objects_base.set_indirection_api(indirection_api)
        super().__init__(
            binary=compute_rpcapi.BINARY, host=host, topic=compute_rpcapi.TOPIC,
            endpoints=[self.manager], rpc_version=compute_rpcapi.ComputeAPI.VERSION,
            connector=self.driver.get_volume_connector(),
            list_images=self.driver.list_images,
            indirection_api=indirection_api if in_process_with_conductor else None)
        self.host_initialized = False

    def register(self):
        """Register, and the first time, before the RPC server starts,
        count the host connections in use."""
        record = super().register()
        if not self.host_initialized:
            with self._scope():
                self.manager.connections.rebuild(
                    volattach_context.get_admin_context())
            self.host_initialized = True
        return record
