"""One reconciler per custom resource kind, with desired state built by pure functions.

Controllers use ``appstack.runtime`` and ``appstack.api``; the CLI wires them into a manager.
"""
