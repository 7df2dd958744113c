"""AppStack's rules (api/appstack_rules.py), as a whole object's validation applies them
(the CRD's CEL rules client-side, and what only Python checks): a component's variables
and ports are declared once each, and each refusal names the component's field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack


def _refused(model: Any, name: str, spec: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return caught.value


COMPONENT = ("spec", "components", 0)


@pytest.mark.parametrize(
    ("component", "problem", "field"),
    [
        (
            {"env": {"A": "1"}, "envs": [{"name": "A", "value": "2"}]},
            "a variable may be set in env or in envs, not in both",
            (*COMPONENT, "envs"),
        ),
        (
            {"envs": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            "duplicate environment variable names: A",
            (*COMPONENT, "envs"),
        ),
        ({"uses": ["order-db"], "env": {"ORDER_DB_PORT": "1"}}, "injected for order-db", COMPONENT),
        (
            {"ports": [{"port": 80}, {"port": 80, "targetPort": 81}]},
            "port numbers must be unique",
            (*COMPONENT, "ports"),
        ),
        (
            {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]},
            "port names must be unique",
            (*COMPONENT, "ports"),
        ),
        (
            {"ports": [{"port": 80}, {"port": 81, "name": "p80"}]},
            "kept for ports without",
            (*COMPONENT, "ports"),
        ),
    ],
)
def test_components_refuse_duplicate_variables_and_ports(
    component: dict[str, Any], problem: str, field: tuple[str | int, ...]
) -> None:
    spec = {
        "middleware": [{"name": "order-db", "type": "redis", "managed": {}}],
        "components": [{"name": "app", "image": "x", **component}],
    }
    (error,) = _refused(AppStack, "s", spec).errors()
    assert problem in error["msg"]
    assert error["loc"] == field
