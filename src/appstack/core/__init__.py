"""The no-I/O core every other package stands on: how a kind is addressed
(:class:`~appstack.core.resource.Resource`). Like kube-rs's ``kube-core``: no client, no
models, no dependencies beyond the standard library.
"""
