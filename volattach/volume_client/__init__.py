"""The client of the block storage API (Cinder v3, or volattach-volume):
what the compute API and the conductor use to call a Cinder-compatible
service.  ``cinder.VolumeAPI`` is the client, ``http_transport`` its
urllib3 transport.  It lives outside ``volattach.volume`` (the service) so
that a caller loads none of the service's code."""
