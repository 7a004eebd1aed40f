"""Request schemas, one module per resource.

Each schema is named by the microversion it starts at (``create_v249``
applies from 2.49 until the next one); the upper-case tuples at the end of
each module list them in order for ``api.validation``.
"""
