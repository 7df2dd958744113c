"""The lazy door of a package: its public names imported from their homes on first use
(PEP 562's module ``__getattr__``), so importing the package costs nothing until a name is
used. :mod:`appstack.sdk` and :mod:`appstack.runtime` are built on it; each keeps its table
of homes (``name -> "module"`` or ``"module:attribute"``) beside a ``TYPE_CHECKING`` block
of the same imports, kept equal by tests/unit/test_public_api_door.py.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load(package: str, homes: Mapping[str, str], name: str, namespace: dict[str, Any]) -> Any:
    """The public ``name`` of ``package`` from its home in ``homes``, kept in the package's
    ``namespace`` (its globals) so it is imported once; AttributeError for any other."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, _, attribute = home.partition(":")
    value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
    namespace[name] = value
    return value
