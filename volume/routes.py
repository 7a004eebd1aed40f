"""The route table of the volume API, in one place.

Every resource is served both with and without the project id in the path
(``/v3/{project_id}/volumes`` and ``/v3/volumes``), as Cinder does; the auth
middleware checks and drops ``project_id`` before the handler runs.
"""
from volattach.volume.handlers import attachments
from volattach.volume.handlers import extra_specs
from volattach.volume.handlers import limits
from volattach.volume.handlers import services
from volattach.volume.handlers import type_encryption
from volattach.volume.handlers import types
from volattach.volume.handlers import versions
from volattach.volume.handlers import volume_actions
from volattach.volume.handlers import volumes

# (path under /v3[/{project_id}], handler class)
ROUTES = [
    ("/volumes", volumes.Collection),
    ("/volumes/detail", volumes.Detail),
    ("/volumes/summary", volumes.Summary),
    ("/volumes/{volume_id}", volumes.Item),
    ("/volumes/{volume_id}/action", volume_actions.Action),
    ("/types", types.Collection),
    ("/types/{type_id}", types.Item),
    ("/types/{type_id}/extra_specs", extra_specs.Collection),
    ("/types/{type_id}/extra_specs/{key}", extra_specs.Item),
    ("/types/{type_id}/encryption", type_encryption.Collection),
    ("/types/{type_id}/encryption/{key}", type_encryption.Item),
    ("/limits", limits.Limits),
    ("/attachments", attachments.Collection),
    ("/attachments/detail", attachments.Detail),
    ("/attachments/{attachment_id}", attachments.Item),
    ("/attachments/{attachment_id}/action", attachments.Action),
    ("/os-services", services.Collection),
]

VERSION_ROUTES = [
    ("/", versions.Root),
    ("/v3", versions.V3),
    ("/v3/", versions.V3),
]

PREFIXES = ("/v3/{project_id}", "/v3")


def install(app, manager, conf):
    for path, handler in VERSION_ROUTES:
        app.add_route(path, handler())
    for path, handler_cls in ROUTES:
        if handler_cls is services.Collection:
            handler = handler_cls(manager, conf.service_down_time)
        else:
            handler = handler_cls(manager)
        for prefix in PREFIXES:
            app.add_route(prefix + path, handler)
