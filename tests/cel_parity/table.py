"""The parity table's types and shared checks (pure): a :class:`Case` (a base object, the
edits that break one rule, the field the API server names), the rules of the generated CRDs
(:func:`crd_rules`), the same rules evaluated client-side (:func:`client_refusal`), and the
models' verdict on a whole object (:func:`python_refusal`). Used by the case modules of this
package and by the unit and e2e parity tests.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from appstack.controllers.registry import ALL
from appstack.manifests.crds import all_crds
from appstack.sdk.cel import Violation, rules_of
from appstack.sdk.kind import CustomObject


class _Delete:
    """An edit's value: remove the field. Named in test ids as ``DELETE`` (an address would
    differ between the processes of a parallel run, which must collect the same ids)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()
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
    name metadata fields). ``server``: why the API server cannot be shown refusing it with
    the CRD we serve; None when it can. ``also``:
    the change cannot help breaking another rule too (a stack name of 64 characters is
    also too long for ``<stack>-<member>``)."""

    kind: str
    path: str
    message: str
    edits: Edits
    field: str = ""
    refused: bool = True
    old: Edits | None = None
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


def client_refusal(case: Case, base: dict[str, Any]) -> list[Violation]:
    """What the CRD's rules, evaluated client-side (:mod:`appstack.sdk.cel`), refuse of the
    case's write: a create, or an update of ``case.old``."""
    return rules_of(model_of(case.kind).KIND).violations(case.obj(base), case.old_obj(base))


def said_by(violations: list[Violation], rule: Rule) -> list[Violation]:
    """The violations that are ``rule``'s (its message, or its messageExpression's text,
    which starts with the message)."""
    return [v for v in violations if v.message.startswith(rule.message)]


def python_refusal(kind: str, obj: dict[str, Any]) -> list[str] | None:
    """The errors of ``kind``'s model for the whole object ``obj`` (its CEL rules
    client-side, then what only Python checks) as ``<location>: <message>`` (the location
    dotted, ``spec.components[0]``); None when it accepts the object."""
    try:
        model_of(kind).model_validate(obj)
    except ValidationError as error:
        return [f"{_location(e['loc'])}: {e['msg']}" for e in error.errors()]
    return None


def _location(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in loc).lstrip(".")
