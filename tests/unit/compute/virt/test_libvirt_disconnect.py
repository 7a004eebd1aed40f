"""The libvirt driver's ``disconnect_volume`` is best effort: a host
connection it cannot close does not fail the detach, and is logged with
the volume and the reason."""
import logging

from volattach.compute.virt.libvirt import driver


class _Instance:
    uuid = "0b6d6f5e-1c4e-4f4b-9a51-6f0b7e1d2a10"


def test_a_failed_disconnect_is_logged_not_raised(caplog):
    # no libvirt connection: an unknown volume type fails before any is used
    drv = object.__new__(driver.LibvirtDriver)
    drv._host = None
    info = {"driver_volume_type": "nosuchtype",
            "data": {"volume_id": "vol-4711"}}
    with caplog.at_level(logging.WARNING, logger=driver.__name__):
        drv.disconnect_volume(info, _Instance())
    [record] = [r for r in caplog.records if r.name == driver.__name__]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "vol-4711" in message and _Instance.uuid in message
    assert "nosuchtype" in message
