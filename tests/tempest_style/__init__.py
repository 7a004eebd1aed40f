"""Tempest-style tests shared by the functional and the integration suites.

``clients`` builds tempest's own ``ServersClient`` (its response schemas
included) against a volattach compute API without keystone; ``scenarios``
holds the test bodies.  ``tests/functional/test_tempest_volume_attachments.py``
runs them against the in-process deployment and
``tests/integration/test_tempest_volume_attachments.py`` against the real
daemons over RabbitMQ.
"""
