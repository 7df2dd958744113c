"""appstack: a Kubernetes operator in Python and the small controller runtime it stands on.

Layers (enforced by import-linter, see ``pyproject.toml``):
``appstack.cli`` > ``appstack.controllers`` > ``appstack.runtime`` > ``appstack.api``.
``appstack.testing`` (the local control plane) is used only by the CLI's ``cluster``
commands and by the tests.
"""

__version__ = "0.1.0"
