"""The compute API: a Nova-compatible HTTP API served by Falcon under gunicorn.

Layout (placement's pattern):

- ``wsgi``: the WSGI assembly (``application`` for gunicorn, ``make_app``)
  and, in its docstring, the middleware order;
- ``middleware``, ``auth``: the WSGI middleware of that order;
- ``microversions``: the one ordered list of microversions and negotiation;
- ``faults``: domain exceptions -> HTTP status and Nova's error bodies;
- ``policy``: who may call what;
- ``routes``: the one declarative route table;
- ``handlers``: one module per resource (policy -> validate -> call the
  compute facade -> serialize);
- ``schemas``: JSON schemas of request bodies and query strings, named by
  the microversion they start at; ``validation`` applies them;
- ``views``: response bodies per microversion.

HTTP status codes exist only here; everything below speaks domain exceptions.
"""
