"""Instance actions of a server (os-instance-actions)."""
from volattach import objects
from volattach.api.compute import base
from volattach import exception


class InstanceActionsAPI(base.FacadeBase):

    def get_instance_actions(self, context, instance):
        return list(objects.InstanceActionList.get_by_instance_uuid(context, instance.uuid))

    def get_instance_action(self, context, instance, request_id):
        action = objects.InstanceAction.get_by_request_id(context, instance.uuid, request_id)
        if action is None:
            raise exception.InstanceActionNotFound(request_id=request_id,
                                                   instance_uuid=instance.uuid)
        events = list(objects.InstanceActionEventList.get_by_action(context, action.id))
        return action, events
