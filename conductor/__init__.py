"""The conductor: owns every multi-step workflow (build, attach, detach,
swap, shelve, live migration, delete) and its rollback, runs the Cinder
calls, and proxies the object reads and saves of the computes to the
database.

``api.py`` is the facade the compute API calls, ``rpcapi.py`` the RPC
clients, ``manager.py`` the endpoints, ``tasks/`` one module per workflow,
``service.py`` the daemon's service.  Two RPC servers on two topics keep
object proxying (``conductor``) from ever waiting behind workflows
(``conductor_compute_task``) that themselves wait on computes.
"""
