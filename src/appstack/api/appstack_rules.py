"""The AppStack's rules that span members, as CEL for admission and in Python for the models
(pure): names of the children derived from ``<stack>-<member>``. Used by
:mod:`appstack.api.appstack`.
"""

from __future__ import annotations

from typing import Any

from appstack.api.names import NameRule


def _longest_member(spec: Any, managed: bool) -> int:
    """The longest name of the managed middleware, or of the other members."""
    names = [m.name for m in spec.middleware or [] if (m.managed is not None) == managed]
    names += [] if managed else [c.name for c in spec.components]
    return max((len(n) for n in names), default=0)


# Children are named <stack>-<member>: a Service name (<= 63), and for managed middleware
# a StatefulSet name (<= 52, so that its pods' controller-revision-hash label fits in 63).
MEMBER_NAME_RULES = (
    NameRule(
        "self.spec.components.all(c, size(self.metadata.name) + size(c.name) <= 62) && "
        "(!has(self.spec.middleware) || self.spec.middleware.all(m, has(m.managed) || "
        "size(self.metadata.name) + size(m.name) <= 62))",
        "<stack>-<member> names a Service and must be at most 63 characters: shorten the "
        "stack's metadata.name or the member's name",
        lambda name, spec: len(name) + _longest_member(spec, managed=False) <= 62,
    ),
    NameRule(
        "!has(self.spec.middleware) || self.spec.middleware.all(m, !has(m.managed) || "
        "size(self.metadata.name) + size(m.name) <= 51)",
        "<stack>-<middleware> names the StatefulSet of managed middleware and must be at most "
        "52 characters: shorten the stack's metadata.name or the middleware's name",
        lambda name, spec: len(name) + _longest_member(spec, managed=True) <= 51,
    ),
)
