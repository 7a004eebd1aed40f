"""Storage backends of the volume service other than the embedded fake
one (``volume/backend.py``); ``[volume] backend`` selects one."""
