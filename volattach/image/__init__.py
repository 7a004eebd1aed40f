"""The image service (Glance) as the compute API and the computes see it."""
