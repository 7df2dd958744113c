"""appstack's custom resources: each kind declared once on its Pydantic model (no I/O).

:mod:`appstack.api.kind` holds the declaration (:func:`~appstack.api.kind.custom_kind`) and
the API group; one module per kind (``appservice``, ``appstack``, ``crontab``) holds its
models. The CRDs are generated from these declarations. Nothing here talks to a cluster;
the runtime and the controllers import it, never the other way round.
"""
