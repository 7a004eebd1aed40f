"""The conductor daemon's service: the object-proxy server on the
``conductor`` topic, the workflows' server on the task topic, and two
periodic threads, attachment reconciliation and the shelved offloader."""
from volattach.conductor import manager
from volattach.conductor import reconcile
from volattach.conductor import rpcapi
from volattach.conductor import shelve_offload
from volattach.conf import CONF
from volattach import service


class ConductorService(service.Service):
    """``volume_api``: the volume client the workflows use (the Cinder
    client by default)."""

    def __init__(self, host=None, volume_api=None):
        super().__init__(
            binary="volattach-conductor", host=host or CONF.conductor.host,
            topic=rpcapi.TOPIC, endpoints=[manager.ConductorManager()],
            rpc_version=rpcapi.ComputeTaskAPI.VERSION)
        self.task_manager = manager.ComputeTaskManager(volume_api=volume_api)
        # drift repair: one pass every [conductor] reconcile_interval
        # seconds on the leading conductor
        self.reconciler = reconcile.PeriodicReconciler(
            self.host, self.task_manager.volume_api,
            self.task_manager.compute_rpcapi,
            CONF.conductor.reconcile_interval,
            CONF.conductor.reconcile_grace_period)
        self.offloader = shelve_offload.PeriodicShelvedOffloader(self.task_manager)

    def start(self, tolerate_registration_failure=False):
        super().start(tolerate_registration_failure)
        self.add_server(rpcapi.TASK_TOPIC, [self.task_manager])
        self.reconciler.start()
        self.offloader.start()

    def stop(self):
        self.offloader.stop()
        self.reconciler.stop()
        super().stop()
