"""A server's tags (2.26) and metadata: read, set, add, delete.

Changes need the server in a state Nova allows them in (409 otherwise) and,
for metadata, unlocked (409); the metadata_items quota caps the merged
result (403).  The database does each change in one transaction on the
server's locked row (``db.api.server_tags_metadata``)."""
from volattach.api.compute import base
from volattach.db import api as db_api
from volattach import exception
from volattach.objects import instance as instance_obj

# Nova's limit of tags per server
MAX_TAG_COUNT = 50
CHANGE_VM_STATES = (instance_obj.ACTIVE, instance_obj.PAUSED,
                    instance_obj.SUSPENDED, instance_obj.STOPPED)


class ServerTagsMetadataAPI(base.FacadeBase):

    # -- tags -------------------------------------------------------------------
    @staticmethod
    def get_tags(context, instance):
        return db_api.tag_get_all(instance.uuid)

    @staticmethod
    def tags_by_instances(context, instances):
        return db_api.tags_by_instances([i.uuid for i in instances])

    def _check_tag_state(self, instance, method):
        self._check_state(instance, method, CHANGE_VM_STATES,
                          task_states=(instance.task_state,))

    def add_tag(self, context, instance, tag):
        """True when added, False when the server had it."""
        self._check_tag_state(instance, "update tag")
        return db_api.tag_add(instance.uuid, tag, MAX_TAG_COUNT)

    def set_tags(self, context, instance, tags):
        self._check_tag_state(instance, "update tags")
        return db_api.tag_set_all(instance.uuid, tags)

    def delete_tag(self, context, instance, tag):
        self._check_tag_state(instance, "delete tag")
        db_api.tag_delete(instance.uuid, tag)

    def delete_tags(self, context, instance):
        self._check_tag_state(instance, "delete tags")
        db_api.tag_delete_all(instance.uuid)

    # -- metadata -------------------------------------------------------------------
    def update_metadata(self, context, instance, metadata, replace=False):
        """Merge (or with ``replace`` set) the server's metadata; the
        result."""
        self._check_locked(context, instance)
        self._check_state(instance, "update metadata", CHANGE_VM_STATES)
        return db_api.instance_metadata_update(
            instance.uuid, metadata, replace=replace,
            max_items=self.metadata_limit(context, instance.project_id))

    def delete_metadata_item(self, context, instance, key):
        self._check_locked(context, instance)
        self._check_state(instance, "delete metadata", CHANGE_VM_STATES)
        try:
            db_api.instance_metadata_update(instance.uuid, {}, delete_key=key)
        except KeyError:
            raise exception.NotFound(message="Metadata item was not found")
