"""The compute: ``api.py`` is the facade the HTTP API calls (it runs in the API
process), ``rpcapi.py`` the client the conductor uses to reach a compute
host, ``manager.py`` the endpoints a compute daemon serves.  A compute does
host-local work only (device names, host connections, the virt driver): it
makes no Cinder calls and has no database access; it reads and saves objects
through the conductor.
"""
