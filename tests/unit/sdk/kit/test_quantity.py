"""Kubernetes resource quantities as numbers (sdk/kit/quantity.py): ``500m``, ``1Gi``,
``1e3``, a plain number; anything else is no quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from appstack.sdk.kit.quantity import quantity_value


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (1, Decimal(1)),
        ("0.5", Decimal("0.5")),
        ("500m", Decimal("0.5")),
        ("1Gi", Decimal(2**30)),
        ("1024Mi", Decimal(2**30)),
        ("1e3", Decimal(1000)),
        ("1k", Decimal(1000)),
        ("lots", None),
        ("1Xi", None),
        (True, None),
    ],
)
def test_quantity_values(value: object, number: Decimal | None) -> None:
    assert quantity_value(value) == number
