"""A spec written against a newer CRD: unknown fields are dropped and named, real errors
still fail (sdk/kit/tolerant.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppServiceSpec
from appstack.api.appstack import AppStackSpec
from appstack.sdk.kit.tolerant import validate_tolerant


def test_unknown_fields_at_any_depth_are_ignored_and_named() -> None:
    data = {
        "image": "nginx:1.7.9",
        "size": 2,
        "futureField": {"x": 1},
        "ports": [{"port": 80, "futurePortOption": True}],
    }
    spec, ignored = validate_tolerant(AppServiceSpec, data)
    assert isinstance(spec, AppServiceSpec)
    assert spec.size == 2
    assert spec.ports is not None
    assert spec.ports[0].port == 80
    assert sorted(ignored) == [".futureField", ".ports[0].futurePortOption"]
    assert "futureField" in data  # the object read from the cache is not changed


def test_a_real_error_still_fails_even_beside_an_unknown_field() -> None:
    with pytest.raises(ValidationError):
        validate_tolerant(AppServiceSpec, {"image": "nginx", "size": -1, "future": 1})
    with pytest.raises(ValidationError):
        validate_tolerant(AppServiceSpec, {"size": 1})  # image missing


def test_a_known_spec_is_validated_as_before() -> None:
    spec, ignored = validate_tolerant(
        AppStackSpec, {"components": [{"name": "web", "image": "nginx:1.7.9"}]}
    )
    assert ignored == []
    assert isinstance(spec, AppStackSpec)
