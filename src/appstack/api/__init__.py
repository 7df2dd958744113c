"""Types of appstack's custom resources (Pydantic models, no I/O).

The CRD schemas are generated from these models. Nothing here talks to a cluster; the
runtime and the controllers import it, never the other way round.
"""
