"""Build the conductor and compute services (used by their daemons, by
volattach-all and by the functional tests)."""
import socket

from volattach.compute import manager as compute_manager
from volattach.compute import rpcapi as compute_rpcapi
from volattach.compute import virt
from volattach.conductor import manager as conductor_manager
from volattach.conductor import reconcile
from volattach.conductor import shelve_offload
from volattach.conductor import rpcapi as conductor_rpcapi
from volattach import context as volattach_context
from volattach import service
from volattach.conf import CONF


def conductor_service(host=None, volume_api=None):
    svc = service.Service(
        binary="volattach-conductor", host=host or socket.gethostname(),
        topic=conductor_rpcapi.TOPIC,
        endpoints=[conductor_manager.ConductorManager()],
        rpc_version=conductor_rpcapi.ComputeTaskAPI.VERSION)
    svc.task_manager = conductor_manager.ComputeTaskManager(volume_api=volume_api)
    # drift repair (conductor/reconcile.py): a daemon thread, one pass every
    # [conductor] reconcile_interval seconds on the leading conductor
    svc.reconciler = reconcile.PeriodicReconciler(
        svc.host, svc.task_manager.volume_api, svc.task_manager.compute_rpcapi,
        CONF.conductor.reconcile_interval, CONF.conductor.reconcile_grace_period)
    svc.offloader = shelve_offload.PeriodicShelvedOffloader(svc.task_manager)
    original_start = svc.start
    original_stop = svc.stop

    def start():
        original_start()
        svc.add_server(conductor_rpcapi.TASK_TOPIC, [svc.task_manager])
        svc.reconciler.start()
        svc.offloader.start()

    def stop():
        svc.offloader.stop()
        svc.reconciler.stop()
        original_stop()
    svc.start = start
    svc.stop = stop
    return svc


def compute_service(host=None, in_process_with_conductor=False):
    """A compute service.  It never touches the database: object calls go to
    the conductor, process-wide for a compute daemon, per thread when it
    shares a process with a conductor (volattach-all, functional tests)."""
    host = host or CONF.compute.host
    driver = virt.load_driver(CONF.compute.virt_driver, host)
    manager = compute_manager.ComputeManager(host, driver)
    indirection_api = conductor_rpcapi.ConductorAPI()
    if not in_process_with_conductor:
        from volattach.objects import base as objects_base
        objects_base.set_indirection_api(indirection_api)
    svc = service.Service(
        binary=compute_rpcapi.BINARY, host=host, topic=compute_rpcapi.TOPIC,
        endpoints=[manager], rpc_version=compute_rpcapi.ComputeAPI.VERSION,
        connector=driver.get_volume_connector(),
        indirection_api=indirection_api if in_process_with_conductor else None)
    svc.manager = manager
    svc.driver = driver
    original_register = svc.register

    def register():
        # before the RPC server starts: count the host connections in use
        record = original_register()
        if not getattr(svc, "host_initialized", False):
            with svc._scope():
                manager.connections.rebuild(
                    volattach_context.get_admin_context())
            svc.host_initialized = True
        return record
    svc.register = register
    return svc
