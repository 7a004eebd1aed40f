"""JSON schemas of the volume API's request bodies, one module per
resource; a schema's name says the microversion it starts at (``create``
is the first, ``create_v354`` the one from 3.54 on)."""
