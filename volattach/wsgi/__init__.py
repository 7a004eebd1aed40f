"""HTTP plumbing shared by the compute API and the volume service.

Each service supplies its own versions, header names and messages; the
mechanisms live here (``body``: the request body cap and nesting bound;
``insecure``: the refusal to serve noauth on a non-loopback address;
``policy``: the oslo.policy enforcer of a service's documented defaults;
``access_log``: the line each request leaves in the log).
"""
