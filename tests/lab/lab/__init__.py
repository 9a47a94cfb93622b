"""The lab: a simulated OpenShift cluster (API server, seeded day-1 objects, new hosts) for tests and demos.

It is independent of the collection on purpose: nothing here imports ``plugins/``.
"""
