"""volattach's benchmark harness (not tests): ``python -m benchmarks.run``.

See ``benchmarks/README.md``.  The harness's modules:

- ``run``: the command line; runs scenarios A (API starvation), B
  (attach+detach throughput, multi-process), C (scale with a seeded
  PostgreSQL), D (the same cycles as B in the all-in-one process);
- ``deploy``: starts the deployments (real daemons over RabbitMQ and
  PostgreSQL, or ``volattach-all`` in a subprocess);
- ``cpu``: CPU seconds of every process of a deployment, grouped by role;
- ``load``: HTTP clients, per-request samples, attach/detach cycles;
- ``report``: statistics, the JSON/Markdown/PNG outputs, progress bars;
- ``profile_d``: profiles scenario D (py-spy, and counts of SQL statements,
  RPC messages and volume-service requests per cycle).

Other scripts here (``cinder_latency.py``, ``attach_latency_sync_vs_async.py``)
are single-purpose benchmarks run as files.
"""
