"""The conductor facade used by the compute API (same process as the caller).

Thin: it names the workflows the API may start and forwards them to the
conductor over RPC (``rpcapi.ComputeTaskAPI``).
"""
from volattach.conductor import rpcapi


class ComputeTaskAPI:

    def __init__(self):
        self.rpcapi = rpcapi.ComputeTaskAPI()

    def build_instances(self, context, instances):
        self.rpcapi.build_instances(context, instances)

    def delete_instance(self, context, instance):
        self.rpcapi.delete_instance(context, instance)

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, do_cast=False, attach_mode=None,
                      multiattach=None):
        return self.rpcapi.attach_volume(context, instance, volume_id, device=device,
                                         tag=tag,
                                         delete_on_termination=delete_on_termination,
                                         do_cast=do_cast, attach_mode=attach_mode,
                                         multiattach=multiattach)

    def detach_volume(self, context, instance, volume_id):
        self.rpcapi.detach_volume(context, instance, volume_id)

    def stop_instance(self, context, instance):
        self.rpcapi.stop_instance(context, instance)

    def start_instance(self, context, instance):
        self.rpcapi.start_instance(context, instance)

    def pause_instance(self, context, instance):
        self.rpcapi.pause_instance(context, instance)

    def unpause_instance(self, context, instance):
        self.rpcapi.unpause_instance(context, instance)

    def suspend_instance(self, context, instance):
        self.rpcapi.suspend_instance(context, instance)

    def resume_instance(self, context, instance):
        self.rpcapi.resume_instance(context, instance)

    def reboot_instance(self, context, instance, reboot_type):
        self.rpcapi.reboot_instance(context, instance, reboot_type)

    def rebuild_instance(self, context, instance, reimage_image_id=None):
        self.rpcapi.rebuild_instance(context, instance,
                                     reimage_image_id=reimage_image_id)

    def shelve_instance(self, context, instance, offload):
        self.rpcapi.shelve_instance(context, instance, offload)

    def shelve_offload_instance(self, context, instance):
        self.rpcapi.shelve_offload_instance(context, instance)

    def unshelve_instance(self, context, instance):
        self.rpcapi.unshelve_instance(context, instance)

    def swap_volume(self, context, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        self.rpcapi.swap_volume(context, instance, old_volume_id, new_volume_id,
                                new_attachment_id)

    def live_migrate_instance(self, context, instance, host=None):
        self.rpcapi.live_migrate_instance(context, instance, host=host)

    def can_send(self, method):
        """Whether the (capped) conductor takes ``method``."""
        return self.rpcapi.can_send(method)

    def external_instance_event(self, context, events):
        self.rpcapi.external_instance_event(context, events)
