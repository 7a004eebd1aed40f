"""The conductor facade used by the compute API (same process as the caller).

Thin: it names the workflows the API may start and forwards them to the
conductor over RPC (``rpcapi.ComputeTaskAPI``).
"""
from conductor import rpcapi


class ComputeTaskAPI:

    def __init__(self):
        self.rpcapi = rpcapi.ComputeTaskAPI()

    def build_instances(self, context, instances):
        self.rpcapi.build_instances(context, instances)

    def delete_instance(self, context, instance):
        self.rpcapi.delete_instance(context, instance)

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, do_cast=False):
        return self.rpcapi.attach_volume(context, instance, volume_id, device=device,
                                         tag=tag,
                                         delete_on_termination=delete_on_termination,
                                         do_cast=do_cast)

    def detach_volume(self, context, instance, volume_id):
        self.rpcapi.detach_volume(context, instance, volume_id)
