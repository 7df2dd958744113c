"""The custom resources' field reference (``docs/crd-reference.md``), generated from the CRDs
this package serves (pure; :mod:`appstack.manifests.crds`).

Every field of every kind, as the API server validates it: its path, type, whether it is
required, its default, its bounds, and the rules (CEL) that refuse an object, with the
message the user then sees. ``make docs`` writes it; a unit test fails when the committed
file is stale, and the docs site (``mkdocs.yml``) serves it. Used by developers and that test
only; the operator never imports it.
"""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import all_crds

HEADER = """# Custom resource reference

Generated from the CRDs (`python -m appstack.manifests.reference`, run by `make docs`); do
not edit. One section per kind: what `kubectl explain` would say, with the bounds and the
validation rules (CEL) the API server applies — a refused object names the field and the
message below.
"""

_BOUNDS = (
    ("minimum", "≥ {}"),
    ("maximum", "≤ {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
    ("maxProperties", "entries ≤ {}"),
)


def _type(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"[]{_type(schema.get('items') or {})}"
    if kind == "object" and "additionalProperties" in schema:
        values = schema["additionalProperties"]
        return f"map[string]{_type(values) if isinstance(values, dict) else 'any'}"
    return kind


def _cell(text: str) -> str:
    """``text`` as one table cell: one line, ``|`` escaped, and ``[`` outside code spans
    (``host[:port][/path]`` would be a Markdown reference link)."""
    parts = text.replace("|", "\\|").split("`")
    parts[::2] = [part.replace("[", "\\[") for part in parts[::2]]
    return " ".join("`".join(parts).split())


def _notes(schema: dict[str, Any]) -> str:
    notes = [fmt.format(schema[key]) for key, fmt in _BOUNDS if key in schema]
    if "enum" in schema:
        notes.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "pattern" in schema and len(schema["pattern"]) <= 60:
        notes.append(f"pattern `{schema['pattern']}`")
    elif "pattern" in schema:
        notes.append("a pattern (see the CRD)")
    if "format" in schema:
        notes.append(f"format {schema['format']}")
    if "default" in schema:
        notes.append(f"default `{schema['default']}`")
    return "; ".join(notes)


def _rows(schema: dict[str, Any], path: str, required: bool) -> list[str]:
    """One table row for the field at ``path`` and, depth first, one per field below it."""
    description = _cell(str(schema.get("description", "")))
    rows = [
        f"| `{path}` | {_type(schema)} | {'yes' if required else ''} | {description} | "
        f"{_cell(_notes(schema))} |"
    ]
    for rule in schema.get("x-kubernetes-validations") or []:
        said = rule.get("message") or rule.get("messageExpression") or rule["rule"]
        code = _cell("`" + rule["rule"] + "`")
        rows.append(f"| `{path}` | rule | | {_cell(str(said))} | {code} |")
    item = schema.get("items") if schema.get("type") == "array" else None
    below, prefix = (item, f"{path}[]") if item else (schema, path)
    needed = set(below.get("required") or [])
    for name, child in (below.get("properties") or {}).items():
        rows += _rows(child, f"{prefix}.{name}", name in needed)
    return rows


def kind_section(crd: dict[str, Any]) -> str:
    spec = crd["spec"]
    names = spec["names"]
    (version,) = [v for v in spec["versions"] if v.get("storage")]
    root = version["schema"]["openAPIV3Schema"]
    short = ", ".join(f"`{n}`" for n in names.get("shortNames") or []) or "none"
    subresources = ", ".join(sorted(version.get("subresources") or {})) or "none"
    lines = [
        f"## {names['kind']}",
        "",
        _cell(str(root.get("description", ""))),
        "",
        f"`apiVersion: {spec['group']}/{version['name']}` · plural `{names['plural']}` · "
        f"short names {short} · {spec['scope']} · subresources: {subresources}",
        "",
        "| field | type | required | description | bounds, default, rule |",
        "|---|---|---|---|---|",
    ]
    for top in ("spec", "status"):
        if top in root.get("properties", {}):
            lines += _rows(root["properties"][top], f".{top}", top in (root.get("required") or []))
    return "\n".join(lines) + "\n"


def render() -> str:
    crds = sorted(all_crds(), key=lambda c: c["spec"]["names"]["kind"])
    contents = [
        f"- [{c['spec']['names']['kind']}](#{c['spec']['names']['kind'].lower()})" for c in crds
    ]
    return "\n".join([HEADER, *contents, "", *(kind_section(c) for c in crds)])


if __name__ == "__main__":
    import sys

    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(render())
