"""Validating a spec written against a newer CRD (pure): fields this operator's models do
not know are left out, and named, instead of making the whole object invalid.

The API server prunes what its CRD does not declare, so an unknown field reaches the
operator only when the CRD served is newer than the operator (a rollback, or version skew
during an upgrade). Refusing the object then (``InvalidSpec``) would stop reconciling every
object that uses a new field; :func:`validate_tolerant` drops exactly the fields the model
reports as unknown (``extra_forbidden``) and validates the rest — a real error (a wrong
type, a missing field) still fails. Used by :class:`~.reconciler.KindReconciler`.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError


def _remove(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Delete the field at ``loc`` from ``data`` if every step of it is there."""
    *parents, last = loc
    node = data
    for step in parents:
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
            continue
        if not (isinstance(node, dict) and step in node):
            return False
        node = node[step]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False


def validate_tolerant(model: type[BaseModel], data: dict[str, Any]) -> tuple[BaseModel, list[str]]:
    """``model`` validated from ``data`` without the fields it does not know, and their
    paths (``.ports[0].future``); raises the :class:`ValidationError` of any other error."""
    ignored: list[str] = []
    current = data
    for _ in range(8):  # unknown fields nested in unknown-free parents are found in one pass
        try:
            return model.model_validate(current), ignored
        except ValidationError as error:
            unknown = [e["loc"] for e in error.errors() if e["type"] == "extra_forbidden"]
            if not unknown or len(unknown) < len(error.errors()):
                raise
            current = copy.deepcopy(current) if current is data else current
            removed = [loc for loc in unknown if _remove(current, loc)]
            if not removed:
                raise
            ignored += [
                "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in loc) for loc in removed
            ]
    return model.model_validate(current), ignored
