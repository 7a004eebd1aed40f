"""rpc/queues.py: the queue names volattach-manage rpc queues looks at and
the kombu URL of a transport URL naming several RabbitMQ nodes."""
import pytest

from volattach.rpc import queues


def test_queue_names_of_topics_and_hosts():
    names = queues.queue_names(["c1"], ["h2", "h1"])
    assert names == ["conductor", "conductor.c1", "conductor_compute_task",
                     "conductor_compute_task.c1", "compute", "compute.h1",
                     "compute.h2"]


def test_kombu_url_names_every_node_with_the_vhost():
    url = queues.kombu_url("rabbit://u:p@127.0.0.1:5681,u:p@127.0.0.1:5682/vh")
    assert url == ("amqp://u:p@127.0.0.1:5681/vh;"
                   "amqp://u:p@127.0.0.1:5682/vh")


def test_kombu_url_refuses_another_transport():
    with pytest.raises(ValueError):
        queues.kombu_url("volattach-inproc://")
