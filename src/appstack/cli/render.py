"""``appstack render``: objects from a file → what the operator would apply, offline.

Validates each document with the same Pydantic models the CRD schema is generated from and
the CRD's own CEL rules evaluated client-side (:mod:`appstack.sdk.cel`; where its engine is
not installed, a note says the rules were left to the API server), so an error here is an
error at admission, then prints the children
from the same ``desired`` functions the reconcilers apply (each registered controller's
``children``). A seed operator's object (its own API group) or one of our kinds in another
group is an error saying what to change (:mod:`appstack.api.seeds`), never passed through;
an object of another operator's kind (neither Kubernetes' nor ours) is passed on with a note
naming it.
Credentials Secrets are generated in the cluster and never printed. Used by
the CLI.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.kind import GROUP
from appstack.api.seeds import foreign_problem, third_party
from appstack.controllers.registry import ALL, by_kind
from appstack.sdk import Registration, as_object, cel_available, error_message, field_path
from appstack.sdk import to_wire as wire

PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"  # assigned by the API server
CEL_NOTE = (
    "the CRDs' CEL rules were not checked here (no CEL engine: the cel extra, "
    "pip install 'cel-expr-python>=0.1.3,<0.2' beside appstack, Python 3.11+ on Linux "
    "x86-64, macOS arm64 or Windows); the API server checks them when the objects are applied"
)


class RenderError(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def render_documents(documents: list[Any], notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The children of our objects and the other objects as they are; ``notes`` gets a line
    for each object of a kind neither Kubernetes nor appstack serves (passed on, said)."""
    problems: list[str] = []
    rendered: list[dict[str, Any]] = []
    validated = 0  # objects of our kinds, checked against their CRD's CEL rules if we can
    supported = ", ".join(c.kind.kind for c in ALL)
    ours = {c.kind.kind for c in ALL}
    for index, doc in enumerate(d for d in documents if d):
        label = f"document {index + 1}"
        if not isinstance(doc, dict):
            problems.append(f"{label}: not a Kubernetes object (a YAML {type(doc).__name__})")
            continue
        kind = doc.get("kind")
        missing = _missing_type(doc)
        if missing is not None:
            name = (doc.get("metadata") or {}).get("name")
            problems.append(f"{label}{f' ({kind} {name})' if kind else ''}: {missing}")
            continue
        foreign = foreign_problem(doc, ours)
        if foreign is not None:
            name = (doc.get("metadata") or {}).get("name")
            problems.append(f"{label} ({kind} {name}): {foreign}")
            continue
        if not str(doc.get("apiVersion", "")).startswith(f"{GROUP}/"):
            rendered.append(doc)  # an ordinary object in the same file: applied as it is
            note = third_party(doc)
            if note is not None and notes is not None:
                name = (doc.get("metadata") or {}).get("name")
                notes.append(f"{label} ({kind} {name}): {note}")
            continue
        controller = by_kind(str(kind))
        if controller is None:
            problems.append(f"{label}: kind {kind!r} is not supported ({supported})")
            continue
        validated += 1
        rendered += _children(controller, doc, label, problems)
    if validated and notes is not None and not cel_available():
        notes.append(CEL_NOTE)
    if problems:
        raise RenderError(problems)
    return rendered


def _children(
    controller: Registration, doc: dict[str, Any], label: str, problems: list[str]
) -> list[dict[str, Any]]:
    """The children of one object of our kinds, validated as admission validates it; its
    problems are added to ``problems`` instead."""
    kind, name = doc["kind"], (doc.get("metadata") or {}).get("name")
    if not name:
        problems.append(f"{label}: metadata.name: required")
        return []
    try:
        parsed = controller.kind.model.model_validate(doc)
    except ValidationError as error:
        problems += [
            f"{kind} {name}: {field_path(item['loc'])}: {error_message(item)}"
            for item in error.errors()
        ]
        return []
    obj = parsed.to_dict()
    obj["metadata"] = {"namespace": "default", **obj["metadata"], "uid": PLACEHOLDER_UID}
    if controller.children is None:  # every appstack kind declares its children
        return []
    return list(map(wire, controller.children(as_object(obj), parsed.spec)))


def _missing_type(doc: dict[str, Any]) -> str | None:
    """What is missing of an object's ``apiVersion`` and ``kind`` (both required)."""
    if not doc.get("kind"):
        return "kind: required" + ("" if doc.get("apiVersion") else "; apiVersion: required")
    if not doc.get("apiVersion"):
        controller = by_kind(str(doc["kind"]))
        ours = f" ({controller.kind.resource.api_version})" if controller is not None else ""
        return f"apiVersion: required{ours}"
    return None
