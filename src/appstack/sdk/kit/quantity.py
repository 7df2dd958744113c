"""Kubernetes resource quantities as numbers, so ``1``, ``"1"`` and ``"1000m"`` compare equal
(pure).

The API server stores quantities in canonical form (``cpu: 1`` becomes ``"1"``, ``"0.5"``
becomes ``"500m"``, ``"1024Mi"`` becomes ``"1Gi"``): :func:`quantity_value` lets
:func:`appstack.sdk.kit.children.is_subset` see that a child already has the quantity
asked for, so an idle resync applies nothing.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_FORM = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{s: Decimal(1024**i) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1)},
}


def quantity_value(value: object) -> Decimal | None:
    """The number a quantity stands for, or None when ``value`` is not a quantity."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    match = _FORM.match(str(value))
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        if suffix in _SUFFIXES:
            return Decimal(number) * _SUFFIXES[suffix]
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
    except (InvalidOperation, ValueError):
        return None
    return None


def same_quantity(desired: object, actual: object) -> bool:
    """``desired`` and ``actual`` are the same quantity (``1`` and ``"1000m"``), or equal."""
    if desired == actual:
        return True
    want, have = quantity_value(desired), quantity_value(actual)
    return want is not None and want == have
