"""The AppStack model (api/appstack.py) refuses a name the children of its members cannot
have (``<stack>-<member>``, ``<stack>-<middleware>``), as admission does."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack


def _validate(model: Any, name: str, spec: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return str(caught.value)


def test_the_model_refuses_names_its_members_children_cannot_have() -> None:
    one = {"components": [{"name": "c" * 33, "image": "x"}]}
    assert "<stack>-<member>" in _validate(AppStack, "s" * 30, one)
    managed = {
        "middleware": [{"name": "m" * 22, "type": "redis", "managed": {}}],
        "components": [{"name": "a", "image": "x"}],
    }
    assert "<stack>-<middleware>" in _validate(AppStack, "s" * 30, managed)
    AppStack.model_validate({"metadata": {"name": "s" * 29}, "spec": managed})
