"""The compute daemon: ``rpcapi.py`` is the client the conductor uses to
reach a compute host, ``manager.py`` the endpoints a compute daemon serves,
``service.py`` the daemon's service.  A compute does host-local work only
(device names, host connections and their locks, the virt driver): it makes
no Cinder calls and has no database access; it reads and saves objects
through the conductor.  The compute API facade the HTTP layer calls lives in
``volattach.api.compute``.
"""
