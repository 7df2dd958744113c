"""AppStack's rules (api/appstack_rules.py), as the models apply them: a component's
variables and ports are declared once each."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack


def _validate(model: Any, name: str, spec: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return str(caught.value)


@pytest.mark.parametrize(
    ("component", "problem"),
    [
        ({"env": {"A": "1"}, "envs": [{"name": "A", "value": "2"}]}, "both env and envs"),
        ({"envs": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}, "duplicate"),
        ({"uses": ["order-db"], "env": {"ORDER_DB_PORT": "1"}}, "injected for order-db"),
        ({"ports": [{"port": 80}, {"port": 80, "targetPort": 81}]}, "numbers must be unique"),
        ({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}, "must be unique"),
        ({"ports": [{"port": 80}, {"port": 81, "name": "p80"}]}, "kept for ports without"),
    ],
)
def test_components_refuse_duplicate_variables_and_ports(
    component: dict[str, Any], problem: str
) -> None:
    spec = {
        "middleware": [{"name": "order-db", "type": "redis", "managed": {}}],
        "components": [{"name": "app", "image": "x", **component}],
    }
    assert problem in _validate(AppStack, "s", spec)
