"""The structural schema generator (sdk/schema.py) on a small model, without a cluster."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field, ValidationError

from appstack.sdk import PodScheduling
from appstack.sdk.model import POD_FIELD_DOCS, IntOrString, KubeModel
from appstack.sdk.schema import structural_schema


class _Inner(KubeModel):
    """An inner object."""

    port: int = Field(ge=1)


class _Sample(KubeModel):
    """A sample."""

    name: str | None = Field(None, description="Optional: plain, not anyOf with null.")
    target: IntOrString = 80
    mode: Literal["a"] = "a"
    inner: _Inner | None = None
    labels: dict[str, str] | None = None
    rules: list[str] = Field(
        default_factory=list, json_schema_extra={"x-kubernetes-list-type": "set"}
    )


def test_optional_refs_and_int_or_string_become_structural() -> None:
    schema = structural_schema(_Sample)
    props = schema["properties"]
    assert props["name"] == {
        "type": "string",
        "description": "Optional: plain, not anyOf with null.",
    }
    assert props["target"]["x-kubernetes-int-or-string"] is True
    assert "type" not in props["target"]
    assert props["mode"]["enum"] == ["a"]
    assert props["mode"]["type"] == "string"
    assert props["inner"]["properties"]["port"] == {"type": "integer", "minimum": 1}
    assert props["inner"]["description"] == "An inner object."
    assert props["labels"]["additionalProperties"] == {"type": "string"}
    assert props["rules"]["x-kubernetes-list-type"] == "set"
    assert not {"$ref", "anyOf", "title", "$defs"} & _keys(schema)


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in _keys(value)}
    if isinstance(node, list):
        return {k for item in node for k in _keys(item)}
    return set()


class _WidgetSpec(PodScheduling):
    """A user's kind with the SDK's scheduling fields."""

    image: str
    size: int = 1


def test_pod_scheduling_fields_come_after_the_kinds_own_and_validate_alike() -> None:
    props = structural_schema(_WidgetSpec)["properties"]
    assert list(props) == [
        "image",
        "size",
        "nodeSelector",
        "tolerations",
        "affinity",
        "topologySpreadConstraints",
    ]
    # The same bounds as every other kind with the field (the SDK's one declaration).
    # 32 tolerations: EtcdCluster's bound before it used PodScheduling, now every kind's.
    assert props["tolerations"]["maxItems"] == 32
    assert props["topologySpreadConstraints"]["maxItems"] == 8
    assert props["nodeSelector"]["maxProperties"] == 64


def test_pod_scheduling_gives_the_pod_spec_wire_form() -> None:
    spec = _WidgetSpec.model_validate(
        {
            "image": "nginx",
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        }
    )
    assert spec.pod_scheduling() == {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    }
    assert _WidgetSpec(image="nginx").pod_scheduling() == {}
    with pytest.raises(ValidationError, match="nodeSelector"):
        _WidgetSpec.model_validate({"image": "x", "nodeSelector": {"bad key!": "v"}})


class _DefaultingSpec(PodScheduling):
    """A kind whose controller fills in an affinity left unset."""

    __scheduling_defaults__: ClassVar[dict[str, str]] = {
        "affinity": "Default: away from each other."
    }

    image: str


class _Holder(KubeModel):
    """A model embedding it (the spec as a CRD's root embeds it: through a reference)."""

    spec: _DefaultingSpec


def test_a_kinds_scheduling_default_follows_the_shared_description() -> None:
    said = f"{POD_FIELD_DOCS['affinity']} Default: away from each other."
    assert structural_schema(_DefaultingSpec)["properties"]["affinity"]["description"] == said
    nested = structural_schema(_Holder)["properties"]["spec"]["properties"]
    assert nested["affinity"]["description"] == said
    assert nested["tolerations"]["description"] == POD_FIELD_DOCS["tolerations"]
    # the shared declaration and the other kinds keep theirs; validation is the same
    for other in (_WidgetSpec, PodScheduling):
        plain = structural_schema(other)["properties"]["affinity"]["description"]
        assert plain == POD_FIELD_DOCS["affinity"]
    with pytest.raises(ValidationError, match="tolerations"):
        _DefaultingSpec.model_validate({"image": "x", "tolerations": [{"key": "bad key!"}]})


def test_a_scheduling_default_for_no_such_field_is_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match=r"names no field: \['priorityClassName'\]"):

        class _Wrong(PodScheduling):
            __scheduling_defaults__: ClassVar[dict[str, str]] = {
                "priorityClassName": "Default: high."
            }
