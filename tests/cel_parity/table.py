"""The parity table's types and shared checks (pure): a :class:`Case` (a base object, the
edits that break one rule, the field the API server names), the rules of the generated CRDs
(:func:`crd_rules`), and the Python side (:func:`python_refusal`, :func:`names_field`).
Used by the case modules of this package and by the unit and e2e parity tests.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from appstack.controllers.registry import ALL
from appstack.manifests.crds import all_crds
from appstack.sdk.kind import CustomObject

DELETE = object()  # an edit's value: remove the field
Edits = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Rule:
    """One CEL rule of a generated CRD: the kind, where it sits in the schema (``.spec``,
    ``.spec.components[*]``, ``""`` at the root), its message and fieldPath."""

    kind: str
    path: str
    message: str
    field_path: str
    rule: str

    @property
    def transition(self) -> bool:
        return "oldSelf" in self.rule

    def __str__(self) -> str:
        return f"{self.kind} {self.path or '<root>'}: {self.message}"


@dataclass(frozen=True)
class Case:
    """An object that breaks exactly one rule (``refused``), or a boundary that both the API
    server and the models accept. ``message`` starts the rule's message (with ``kind`` and
    ``path``, it names one rule). ``edits`` change the kind's base object; ``old``, for a
    transition rule, makes the object the change is an update of. ``field``: what the API
    server names (``spec.components[0].ports``; ``""`` for rules at the root, which cannot
    name metadata fields). ``python``: why the models cannot check it (a transition rule:
    they see no old object); None when they must refuse it too. ``server``: why the API
    server cannot be shown refusing it with the CRD we serve; None when it can. ``also``:
    the change cannot help breaking another rule too (a stack name of 64 characters is
    also too long for ``<stack>-<member>``)."""

    kind: str
    path: str
    message: str
    edits: Edits
    field: str = ""
    refused: bool = True
    old: Edits | None = None
    python: str | None = None
    server: str | None = None
    also: bool = False

    @property
    def id(self) -> str:
        verdict = "refused" if self.refused else "accepted"
        return f"{self.kind}{self.path or '<root>'}:{self.message[:40]}:{verdict}:{self.edits!r}"

    def obj(self, base: dict[str, Any]) -> dict[str, Any]:
        return edited(base, self.edits)

    def old_obj(self, base: dict[str, Any]) -> dict[str, Any] | None:
        return None if self.old is None else edited(base, self.old)


def crd_rules() -> list[Rule]:
    """Every CEL rule of every CRD we generate (``make manifests`` writes the same)."""
    rules: list[Rule] = []
    for crd in all_crds():
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            _walk(kind, version["schema"]["openAPIV3Schema"], "", rules)
    return rules


def _walk(kind: str, node: dict[str, Any], path: str, out: list[Rule]) -> None:
    for r in node.get("x-kubernetes-validations", []):
        out.append(Rule(kind, path, r["message"], r.get("fieldPath", ""), r["rule"]))
    for name, sub in (node.get("properties") or {}).items():
        _walk(kind, sub, f"{path}.{name}", out)
    if isinstance(node.get("items"), dict):
        _walk(kind, node["items"], f"{path}[*]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(kind, node["additionalProperties"], f"{path}{{*}}", out)


def rule_of(case: Case, rules: list[Rule]) -> list[Rule]:
    """The rules ``case`` names (exactly one when the table is right)."""
    return [
        r
        for r in rules
        if (r.kind, r.path) == (case.kind, case.path) and r.message.startswith(case.message)
    ]


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def edited(base: dict[str, Any], edits: Edits) -> dict[str, Any]:
    """``base`` with each ``(path, value)`` set (``spec.components[0].ports``; ``DELETE``
    removes the field)."""
    obj = copy.deepcopy(base)
    for path, value in edits:
        steps: list[str | int] = [
            name if name else int(index) for name, index in _STEP.findall(path)
        ]
        node: Any = obj
        for step in steps[:-1]:
            node = node[step]
        if value is DELETE:
            del node[steps[-1]]
        else:
            node[steps[-1]] = copy.deepcopy(value)
    return obj


def model_of(kind: str) -> type[CustomObject]:
    """The model the reconciler validates objects of ``kind`` with."""
    return next(c.kind.model for c in ALL if c.kind.kind == kind)


def python_refusal(kind: str, obj: dict[str, Any]) -> list[str] | None:
    """The errors of ``kind``'s model for ``obj`` as ``<location>: <message>`` (the
    location dotted, ``spec.components[0]``); None when it accepts the object."""
    try:
        model_of(kind).model_validate(obj)
    except ValidationError as error:
        return [f"{_location(e['loc'])}: {e['msg']}" for e in error.errors()]
    return None


def _location(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in loc).lstrip(".")


def names_field(errors: list[str], field: str) -> bool:
    """Some error sits on ``field`` or a parent of it, and says the field's name."""
    leaf = re.sub(r"\[\d+\]$", "", field).rsplit(".", 1)[-1] if field else "metadata.name"
    for error in errors:
        location, _, message = error.partition(": ")
        inside = not location or field == location or field.startswith(location + ".")
        inside = inside or field.startswith(location + "[")
        if inside and (leaf in message or re.sub(r"\[\d+\]$", "", location).endswith(leaf)):
            return True
    return False
