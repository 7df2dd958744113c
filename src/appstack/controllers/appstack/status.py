"""The AppStack's status from its members (pure).

Each member gets an entry in ``status.members`` (``Ready``, ``Progressing``,
``WaitingForDependencies`` or ``Failed`` — the last when its children were rejected, with
the reason); ``readyMembers`` counts them, and the conditions follow the API conventions:
``Ready`` when every member is, ``Progressing`` while some start, ``Degraded`` with the
first problem the user must fix.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util.conditions import (
    Problem,
    condition,
    now_rfc3339,
    previous_conditions,
)


def member(
    base: dict[str, str], ok: bool, count: str, progress: str, ready_message: str = "ready"
) -> dict[str, Any]:
    """One entry of ``status.members``."""
    return {
        **base,
        "ready": count,
        "state": "Ready" if ok else "Progressing",
        "message": ready_message if ok else progress,
    }


def waiting(base: dict[str, str], count: str, blockers: list[str]) -> dict[str, Any]:
    """A member held back until what it depends on is ready."""
    return {
        **base,
        "ready": count,
        "state": "WaitingForDependencies",
        "message": f"waiting for {', '.join(blockers)}",
    }


def failed_if(entry: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """A member whose children were rejected is Failed, with the reason."""
    if not problems:
        return entry
    return {**entry, "state": "Failed", "message": f"{problems[0].reason}: {problems[0].message}"}


def from_members(
    stack: dict[str, Any], members: list[dict[str, Any]], problem: Problem | None
) -> dict[str, Any]:
    """The AppStack's status: its members, how many are ready, and the conditions."""
    ready = sum(1 for m in members if m["state"] == "Ready")
    total = len(members)
    not_ready = [m["name"] for m in members if m["state"] != "Ready"]
    if problem is not None:
        state = ("False", problem.reason, problem.message)
    elif total and ready == total:
        state = ("True", "Ready", f"all {total} members are ready")
    else:
        state = (
            "False",
            "Progressing",
            f"{ready}/{total} ready; waiting: {', '.join(not_ready)}",
        )
    generation = stack["metadata"].get("generation")
    stamp = {
        "generation": generation,
        "previous": previous_conditions(stack),
        "now": now_rfc3339(),
    }
    return {
        "observedGeneration": generation,
        "readyMembers": f"{ready}/{total}",
        "members": members,
        "conditions": [
            condition("Ready", *state, **stamp),
            condition(
                "Progressing",
                "True" if not_ready and problem is None else "False",
                "RollingOut" if not_ready else "Complete",
                "members are starting" if not_ready else "every member is ready",
                **stamp,
            ),
            condition(
                "Degraded",
                "True" if problem else "False",
                problem.reason if problem else "AsExpected",
                problem.message if problem else "no problems",
                **stamp,
            ),
        ],
    }


def deleting(stack: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    """The status while the stack is torn down: ``Ready=False`` with ``reason``
    (``TearingDown``, or ``DeletionBlocked`` naming what does not go); the rest as it was."""
    old = dict(stack.get("status") or {})
    ready = condition(
        "Ready",
        "False",
        reason,
        message,
        generation=stack["metadata"].get("generation"),
        previous=previous_conditions(stack),
        now=now_rfc3339(),
    )
    others = [c for c in old.get("conditions") or [] if c["type"] != "Ready"]
    return {**old, "conditions": [ready, *others]}
