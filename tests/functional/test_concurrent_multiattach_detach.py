"""Two detaches of one multiattach volume at once, from two servers, against
volattach's own volume service (issue 20; real Cinder: the guest tier's
test_real_cinder_rbd.py).

The first detach makes the volume ``detaching`` (os-begin_detaching) until
its attachment is deleted; the volume service, as Cinder 29, answers the
second's os-begin_detaching with 400 meanwhile.  Nova fails the second
detach there; volattach detaches it too.  Each compute detach takes 1 s
here (``[fake_driver] detach_latency``), so the second always lands while
the first holds the volume.  A second detach of the SAME attachment still
fails (400), and leaves the first one to finish."""
import concurrent.futures
import time


from tests.functional.test_attach_detach import _new_server

CONF_OVERRIDES = {
    ("fake_driver", "detach_latency"): 1.0,
}
MV = "2.105"



def _volume(volumes, **fields):
    status, body, _ = volumes.create_volume(size=1, **fields)
    assert status == 202, body
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def _attach(api, volumes, server_id, volume_id, mode="rw"):
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV,
                                        attach_mode=mode)
    assert status == 202, body
    deadline = time.monotonic() + 60
    while True:     # the volume lists completed attachments only
        volume = volumes.wait_for_volume_status(volume_id, "in-use")
        if server_id in [a["server_id"] for a in volume["attachments"]]:
            return
        assert time.monotonic() < deadline, volume
        time.sleep(0.1)


def _attachments(volumes, volume_id):
    status, body, _ = volumes.list_attachments(volume_id=volume_id,
                                               microversion="3.27")
    assert status == 200, body
    return body["attachments"]


def test_two_detaches_of_a_multiattach_volume_at_once(api, volumes,
                                                      multiattach_type):
    servers = [_new_server(api, name="ma-detach-%d" % n) for n in range(2)]
    volume_id = _volume(volumes, volume_type=multiattach_type)
    _attach(api, volumes, servers[0], volume_id, "rw")
    _attach(api, volumes, servers[1], volume_id, "ro")
    assert len(_attachments(volumes, volume_id)) == 2

    def detach(server_id):
        return api.detach_volume(server_id, volume_id, microversion=MV)[:2]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(detach, servers[0])
        # the first holds the volume detaching (its compute takes 1 s)
        volumes.wait_for_volume_status(volume_id, "detaching",
                                       interval=0.05)
        second = pool.submit(detach, servers[1])
        answers = [first.result(timeout=60), second.result(timeout=60)]
    assert [status for status, _ in answers] == [202, 202], answers
    for server_id in servers:
        api.wait_for_volume_attachment_gone(server_id, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
    assert _attachments(volumes, volume_id) == []
    # nothing left behind: the volume attaches and detaches again
    _attach(api, volumes, servers[1], volume_id)
    status, body = detach(servers[1])
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")


def test_a_second_detach_of_the_same_attachment_still_fails(api, volumes):
    server_id = _new_server(api, name="same-detach")
    volume_id = _volume(volumes)
    _attach(api, volumes, server_id, volume_id)
    status, body, _ = api.detach_volume(server_id, volume_id, microversion=MV)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "detaching",
                                       interval=0.05)
    status, body, _ = api.detach_volume(server_id, volume_id, microversion=MV)
    assert status == 400, body
    assert "Unable to detach volume" in body["badRequest"]["message"], body
    # the first one finishes
    api.wait_for_volume_attachment_gone(server_id, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
    assert _attachments(volumes, volume_id) == []
