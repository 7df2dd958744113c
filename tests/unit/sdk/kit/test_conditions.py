"""Status conditions and problems (sdk/kit/conditions.py): Pydantic errors as ``spec.<field>:
<message>``, a condition's ``lastTransitionTime`` moving only when its status flips, the
conditions as last written read back by type, and a child's condition as cached."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from appstack.sdk.kit.conditions import (
    Problem,
    condition,
    condition_read,
    describe_validation,
    field_path,
    last_condition,
    now_rfc3339,
    only_ready_false,
    previous_conditions,
)
from appstack.sdk.kit.kubeobject import KubeObject


class _Port(BaseModel):
    port: int = Field(ge=1)


class _Spec(BaseModel):
    image: str
    ports: list[_Port] = []

    @field_validator("image")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if " " in value:
            raise ValueError("an image has no spaces")
        return value


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("ports", 0, "port"), "ports[0].port"),
        (("image",), "image"),
        ((0, "name"), "[0].name"),
        ((), ""),
    ],
)
def test_an_error_location_is_a_field_path(loc: tuple[Any, ...], path: str) -> None:
    assert field_path(loc) == path


def test_validation_errors_are_named_by_their_spec_field_without_pydantics_prefix() -> None:
    with pytest.raises(ValidationError) as caught:
        _Spec.model_validate({"image": "a b", "ports": [{"port": 80}, {"port": 0}]})
    described = describe_validation(caught.value)
    first, second = described.split("; ")
    assert first == "spec.image: an image has no spaces"  # "Value error, " dropped
    assert second.startswith("spec.ports[1].port: ")
    assert "greater than or equal to 1" in second


def test_the_transition_time_moves_only_when_the_status_flips() -> None:
    previous = previous_conditions(
        {
            "metadata": {"name": "web"},
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": "then"},
                    {"type": "Progressing", "status": "False"},
                ]
            },
        }
    )
    same = condition(
        "Ready", "True", "Available", "2/2", generation=3, previous=previous, now="now"
    )
    assert (same.last_transition_time, same.observed_generation) == ("then", 3)
    assert (same.reason, same.message) == ("Available", "2/2")
    flipped = condition("Ready", "False", "Down", "", generation=3, previous=previous, now="now")
    assert flipped.last_transition_time == "now"
    new = condition("Degraded", "True", "X", "", generation=None, previous=previous, now="now")
    assert new.last_transition_time == "now"
    assert new.observed_generation is None
    # the same status without a time written: now
    untimed = condition("Progressing", "False", "Y", "", generation=1, previous=previous, now="now")
    assert untimed.last_transition_time == "now"


def test_the_last_conditions_are_read_by_type_and_a_missing_one_is_only_its_type() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Available"}
    owner: KubeObject = {"metadata": {"name": "web"}, "status": {"conditions": [ready]}}
    assert previous_conditions(owner) == {"Ready": ready}
    assert last_condition(owner, "Ready") == ready
    assert last_condition(owner, "Degraded") == {"type": "Degraded"}
    assert previous_conditions({"metadata": {"name": "new"}}) == {}
    assert previous_conditions({"metadata": {"name": "x"}, "status": {"conditions": None}}) == {}


def test_a_childs_condition_is_cached_without_its_times() -> None:
    raw = {
        "type": "Available",
        "status": "False",
        "reason": "MinimumReplicasUnavailable",
        "message": "Deployment does not have minimum availability.",
        "lastUpdateTime": "2026-11-26T03:02:01Z",
        "lastTransitionTime": "2026-11-26T03:02:01Z",
    }
    assert condition_read(raw) == {k: raw[k] for k in ("type", "status", "reason", "message")}
    assert condition_read(raw, message=False) == {
        "type": "Available",
        "status": "False",
        "reason": "MinimumReplicasUnavailable",
    }
    assert condition_read({"type": "Ready", "status": "True"}) == {
        "type": "Ready",
        "status": "True",
    }


def test_now_is_utc_to_the_second() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_rfc3339())


def test_where_the_operator_does_not_act_the_one_condition_is_ready_false() -> None:
    """Nothing else beside it (the install's kinds policy admits no other condition where
    the namespace is not enabled); its transition time kept while it stays False."""
    since = "2026-01-01T00:00:00Z"
    owner: KubeObject = {
        "metadata": {"name": "x", "generation": 3},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": since},
                {"type": "Degraded", "status": "True", "lastTransitionTime": since},
            ]
        },
    }
    (ready,) = only_ready_false(owner, Problem("NamespaceNotEnabled", "say so"), now_rfc3339())
    assert (ready.type, ready.status, ready.reason, ready.message) == (
        "Ready",
        "False",
        "NamespaceNotEnabled",
        "say so",
    )
    assert ready.observed_generation == 3
    assert ready.last_transition_time == since
