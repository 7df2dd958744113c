"""Checks a status against the ``status`` schema of a generated CRD (``deploy/crds``) the
way the API server reads it: types, enums, bounds, patterns, required fields, and no field
the schema does not know (the server would prune it silently). Used by
``test_status_schema``; a small structural checker, not a full JSON-schema validator."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def status_schema(plural: str) -> dict[str, Any]:
    """The ``status`` schema of the generated CRD of ``plural`` (e.g. ``appservices``)."""
    (path,) = CRDS.glob(f"{plural}.*.yaml")
    crd = yaml.safe_load(path.read_text())
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return schema


def violations(value: Any, schema: dict[str, Any], path: str = "status") -> list[str]:
    """Where ``value`` does not conform to ``schema`` (empty when it does)."""
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null"]
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: not an int or string"]
    kind = schema.get("type")
    if kind is not None:
        wrong_bool = isinstance(value, bool) and kind in ("integer", "number")
        if not isinstance(value, _TYPES[kind]) or wrong_bool:
            return [f"{path}: {value!r} is not of type {kind}"]
    out = _scalar(value, schema, path)
    if isinstance(value, list):
        for i, item in enumerate(value):
            out += violations(item, schema.get("items") or {}, f"{path}[{i}]")
    if isinstance(value, dict):
        out += _object(value, schema, path)
    return out


def _scalar(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            out.append(f"{path}: longer than {schema['maxLength']}")
        if len(value) < schema.get("minLength", 0):
            out.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: {value!r} does not match {schema['pattern']}")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        out.append(f"{path}: {value} out of bounds")
    return out


def _object(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    out = [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if properties is not None and key in properties:
            out += violations(item, properties[key], f"{path}.{key}")
        elif isinstance(extra, dict):
            out += violations(item, extra, f"{path}.{key}")
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            out.append(f"{path}.{key}: unknown field (pruned by the API server)")
    return out
