"""appstack: a Kubernetes operator in Python and the small controller runtime it stands on.

Layers (enforced by import-linter, see ``pyproject.toml``):
``appstack.cli`` > ``appstack.controllers`` > ``appstack.runtime`` > ``appstack.api``.
The local cluster the tests and the demo run on is another distribution of the repository
(``appstack-testbed``, ``testbed/``): nothing here imports it.
"""

__version__ = "0.1.0"
