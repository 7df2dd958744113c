"""The CronTab model (api/crontab.py) refuses a name its CronJob's Jobs cannot have, as
admission does."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.crontab import CronTab


def _validate(model: Any, name: str, spec: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return str(caught.value)


def test_the_model_refuses_names_its_jobs_cannot_have() -> None:
    app = {"image": "nginx"}
    assert "at most 52 characters" in _validate(CronTab, "a" * 53, {"cronSpec": "@daily", **app})
