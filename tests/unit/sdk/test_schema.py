"""The structural schema generator (sdk/schema.py) on a small model, without a cluster."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from appstack.sdk.model import IntOrString, KubeModel
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
