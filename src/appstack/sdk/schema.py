"""Turn a Pydantic model into a Kubernetes *structural* OpenAPI v3 schema (our controller-gen).

Pydantic's JSON Schema is close, but the API server wants: every ``$ref`` inlined; no
``anyOf [X, null]`` for optional fields (absent means unset); int-or-string as
``x-kubernetes-int-or-string`` instead of ``anyOf [integer, string]``; ``const`` as a
one-value ``enum``; no ``title`` or ``additionalProperties: false``; maps as
``additionalProperties: <schema>``. ``x-kubernetes-*`` keys given in ``json_schema_extra``
pass through (CEL rules, list types). Model docstrings and field descriptions become
``description`` (what ``kubectl explain`` shows). Pure; :mod:`appstack.manifests.crds`
applies it to the spec and status models of every declared kind
(:class:`~appstack.api.kind.CustomKind`); tested in tests/unit/api/test_schema.py and pinned
by the ``deploy/`` staleness test.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

_DROP = {"title", "discriminator"}


def root_schema(model: Any, spec: type[BaseModel], status: type[BaseModel]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a custom kind: ``model`` (its top-level model, with its
    ``NAME_RULES`` as CEL at the root), ``spec`` and ``status`` (their models). What a CRD
    serves (:mod:`appstack.sdk.crds`) and what :mod:`appstack.sdk.cel` evaluates."""
    rules = [rule.schema() for rule in model.NAME_RULES if rule.cel is not None]
    return {
        "type": "object",
        "description": inspect.cleandoc(model.__doc__ or ""),
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of this object."},
            "kind": {"type": "string", "description": "Kind of this object."},
            "metadata": {"type": "object"},
            "spec": structural_schema(spec),
            "status": structural_schema(status),
        },
        "required": ["spec"],
        **({"x-kubernetes-validations": rules} if rules else {}),
    }


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(
        by_alias=True, mode="validation", schema_generator=_TrailingMixinsLast
    )
    defs = raw.pop("$defs", {})
    converted: dict[str, Any] = _convert(raw, defs)
    return converted


class _TrailingMixinsLast(GenerateJsonSchema):
    """Pydantic lists inherited fields first; a mixin that marks itself
    ``__schema_trailing__`` (the SDK's ``PodScheduling``) has its fields listed after the
    model's own, as ``kubectl explain`` should show them: what the kind is about first."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        out = super().model_schema(schema)
        properties = out.get("properties")
        if not isinstance(properties, dict):
            return out
        trailing: list[str] = []
        for base in schema["cls"].__mro__[1:]:
            if issubclass(base, BaseModel) and base.__dict__.get("__schema_trailing__"):
                trailing += [f.alias or n for n, f in base.model_fields.items()]
        if trailing:
            last = [k for k in properties if k in trailing]
            out["properties"] = {
                **{k: v for k, v in properties.items() if k not in trailing},
                **{k: properties[k] for k in last},
            }
        return out


def _convert(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_convert(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = _resolve(dict(node), defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or _pointless(key, value):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {name: _convert(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _convert(value, defs)
        else:
            out[key] = value
    if "enum" in out and "type" not in out:
        out["type"] = _json_type(out["enum"][0])
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    return out


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$ref`` and collapse ``anyOf`` until neither is left."""
    while "$ref" in node or "anyOf" in node:
        if "$ref" in node:
            target = copy.deepcopy(defs[node.pop("$ref").rsplit("/", 1)[-1]])
            # Keep the referring field's own description/default over the referenced model's.
            node = {**target, **node}
        else:
            node = _collapse_any_of(node)
    return node


def _pointless(key: str, value: Any) -> bool:
    """A null default, or ``additionalProperties: false`` (structural schemas prune anyway)."""
    return (key == "default" and value is None) or (key == "additionalProperties" and not value)


def _collapse_any_of(node: dict[str, Any]) -> dict[str, Any]:
    options = [o for o in node.pop("anyOf") if o.get("type") != "null"]
    types = {o.get("type") for o in options}
    if len(options) == 1:
        merged = {**options[0], **node}
    elif types == {"integer", "string"}:
        merged = {**node, "x-kubernetes-int-or-string": True}
        for option in options:  # keep string constraints (e.g. a quantity pattern)
            merged.update({k: v for k, v in option.items() if k not in ("type",)})
    else:
        raise ValueError(f"cannot express anyOf {options} in a structural schema")
    return merged


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "string"
