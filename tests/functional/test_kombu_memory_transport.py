"""The all-in-one deployment on kombu's in-memory transport
(``transport_url = kombu+memory:////``) rather than its
default in-process driver: the attach/detach workflow, a failure carried
back over RPC, and notifications, re-run from their own modules on this
module's deployment."""
# (the notification tests first: the others' notifications, nobody
# listening, wait in the notifications queue as on a broker)
from tests.functional.test_notifications import (  # noqa: F401
    CONF_OVERRIDES,
    collector,
    test_attach_and_detach_notifications_carry_attach_mode,
    test_failed_attach_sends_error_notification,
)
from tests.functional.test_attach_detach import (  # noqa: F401,I100
    test_attach_list_show_detach_delete,
    test_failed_attach_in_driver_leaves_nothing,
    test_services_are_listed_up,
)

TRANSPORT_URL = "kombu+memory:////"


def test_deployment_runs_on_kombu_memory(deployment):
    from kombu import transport as kombu_transport

    from volattach import rpc
    assert str(rpc.TRANSPORT._driver._url).startswith("kombu+memory:")
    # kombu's own transport: nothing of volattach's patched in
    assert kombu_transport.TRANSPORT_ALIASES["memory"] == (
        "kombu.transport.memory:Transport")
