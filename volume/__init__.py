"""volattach-volume: the project's own Cinder-compatible block storage service.

A Falcon WSGI application (``volume.wsgi``) speaking Cinder's v3 API for
volumes, volume types, services and the attachment calls of the new attach
flow (``cinder-new-attach-apis``), backed by its own database
(``volume.db``) and an in-process fake iSCSI backend (``volume.backend``).

Where it goes further than real Cinder (bug 1747985 fixed, shared host
connections reported on attachment GET, no 500 and no leftover reservation for
a bad connector, database-guaranteed reservations) is documented in
``volume/README.md``.  The *client* the compute side uses to talk to this
service or to a real Cinder is ``volattach.volume_client``, outside this
package.
"""
