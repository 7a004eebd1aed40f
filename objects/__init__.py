"""Versioned objects (oslo.versionedobjects): what crosses RPC and what the
API and conductor load and save.

``register_all()`` imports every object module; the registry then exposes the
newest version of each class as ``objects.<Name>`` (Nova's pattern), so code
writes ``objects.Instance.get_by_uuid(ctxt, uuid)``.  On a compute, remotable
methods go through the conductor (``indirection_api``), never to the database.
"""


def register_all():
    __import__("volattach.objects.flavor")
    __import__("volattach.objects.instance")
    __import__("volattach.objects.block_device")
    __import__("volattach.objects.service")
    __import__("volattach.objects.instance_action")
    __import__("volattach.objects.keypair")
    __import__("volattach.objects.migration")
    __import__("volattach.objects.migrate_data")
    __import__("volattach.objects.notification")
    __import__("volattach.objects.external_event")
