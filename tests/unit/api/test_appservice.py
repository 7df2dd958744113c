"""The AppService model (api/appservice.py) refuses what admission refuses, so ``appstack
render`` gives the same message: a name its children cannot have, a reference that is no
DNS subdomain, an image that cannot be pulled."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppService


def _validate(model: Any, name: str, spec: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return str(caught.value)


def test_the_model_refuses_names_its_children_cannot_have() -> None:
    app = {"image": "nginx"}
    assert "metadata.name must start with a lowercase letter" in _validate(AppService, "1a", app)
    assert "at most 63 characters" in _validate(AppService, "a" * 64, app)
    AppService.model_validate({"metadata": {"name": "a" * 63}, "spec": app})


def test_the_models_refuse_bad_references_and_images() -> None:
    assert "serviceAccountName" in _validate(
        AppService, "a", {"image": "x", "serviceAccountName": ".."}
    )
    assert "image" in _validate(AppService, "a", {"image": " nginx "})
