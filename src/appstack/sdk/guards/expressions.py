"""The small CEL builders every admission guard is written with (pure; no operator named):
string and list literals, a label test, ownership without an owner, finalizers only added
from a list, a field left unchanged by an update, and one refusal (its expression, the
message naming the field and the fix). Used by the guards of :mod:`appstack.sdk.guards`
and by the policies an operator adds of its own (appstack's Secrets, EndpointSlices).
"""

from __future__ import annotations

from collections.abc import Iterable

#: A validation of a ValidatingAdmissionPolicy: expression, message (or
#: messageExpression) and reason.
Validation = dict[str, str]


def cel_string(text: str) -> str:
    """``text`` as a CEL string literal (single-quoted)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(items: Iterable[str]) -> str:
    """CEL list of the strings ``items``."""
    return "[" + ", ".join(cel_string(i) for i in items) + "]"


def labelled(label: str, value: str = "true", meta: str = "namespaceObject.metadata") -> str:
    """CEL: the object whose metadata is ``meta`` carries ``label=value`` (by default the
    request's namespace)."""
    labels = f"{meta}.labels"
    return f"(has({labels}) && '{label}' in {labels} && {labels}['{label}'] == '{value}')"


def ownerless(target: str) -> str:
    """CEL: ``target`` has no controller ownerReference at all."""
    return (
        f"(!has({target}.metadata.ownerReferences) || "
        f"!{target}.metadata.ownerReferences.exists(r, has(r.controller) && r.controller))"
    )


def finalizers_added_only(allowed: Iterable[str]) -> str:
    """CEL: every finalizer of ``object`` was already on ``oldObject`` (an update) or is
    one of ``allowed``: a write may remove finalizers and add only those."""
    old = "oldObject.metadata.finalizers"
    return (
        "(!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, "
        f"f in {cel_list(allowed)} || (request.operation == 'UPDATE' && has({old}) && "
        f"f in {old})))"
    )


def unchanged(field: str) -> str:
    """CEL: ``object.<field>`` equals ``oldObject.<field>`` (both absent counts)."""
    *parent, last = field.split(".")
    new = ".".join(["object", *parent])
    old = ".".join(["oldObject", *parent])
    return (
        f"(has({new}.{last}) == has({old}.{last}) && "
        f"(!has({new}.{last}) || {new}.{last} == {old}.{last}))"
    )


def refusal(expression: str, message: str) -> Validation:
    """A validation: ``expression`` must hold, else the write is refused (``Forbidden``)
    with ``message`` — which names the field and what to do about it."""
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def refusal_said(expression: str, message_expression: str) -> Validation:
    """:func:`refusal` whose message is a CEL expression (the request's namespace, the
    object's name)."""
    return {
        "expression": expression,
        "messageExpression": message_expression,
        "reason": "Forbidden",
    }
