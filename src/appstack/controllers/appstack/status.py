"""The AppStack's status from its members (pure).

Each member gets an entry in ``status.members`` (``Ready``, ``Progressing``,
``WaitingForDependencies`` or ``Failed`` — the last when its children were rejected, with
the reason); ``readyMembers`` counts them, and the conditions follow the API conventions:
``Ready`` when every member is, ``Progressing`` while some start, ``Degraded`` with the
first problem the user must fix.
"""

from __future__ import annotations

from appstack.api.appstack import AppStackStatus, MemberStatus
from appstack.sdk import KubeObject, Problem, Truth, condition, now_rfc3339, previous_conditions

#: A member's name and kind (``Component``, ``Middleware/<type>``).
Base = tuple[str, str]


def member(
    base: Base, ok: bool, count: str, progress: str, ready_message: str = "ready"
) -> MemberStatus:
    """One entry of ``status.members``."""
    return MemberStatus(
        name=base[0],
        kind=base[1],
        ready=count,
        state="Ready" if ok else "Progressing",
        message=ready_message if ok else progress,
    )


def waiting(base: Base, count: str, blockers: list[str]) -> MemberStatus:
    """A member held back until what it depends on is ready."""
    return MemberStatus(
        name=base[0],
        kind=base[1],
        ready=count,
        state="WaitingForDependencies",
        message=f"waiting for {', '.join(blockers)}",
    )


def failed_if(entry: MemberStatus, problems: list[Problem]) -> MemberStatus:
    """A member whose children were rejected is Failed, with the reason."""
    if not problems:
        return entry
    message = f"{problems[0].reason}: {problems[0].message}"
    return MemberStatus(
        name=entry.name, kind=entry.kind, ready=entry.ready, state="Failed", message=message
    )


def from_members(
    stack: KubeObject, members: list[MemberStatus], problem: Problem | None
) -> AppStackStatus:
    """The AppStack's status: its members, how many are ready, and the conditions."""
    ready = sum(1 for m in members if m.state == "Ready")
    total = len(members)
    not_ready = [m.name for m in members if m.state != "Ready"]
    state: tuple[Truth, str, str]
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
    previous, now = previous_conditions(stack), now_rfc3339()
    return AppStackStatus(
        observed_generation=generation,
        ready_members=f"{ready}/{total}",
        members=members,
        conditions=[
            condition("Ready", *state, generation=generation, previous=previous, now=now),
            condition(
                "Progressing",
                "True" if not_ready and problem is None else "False",
                "RollingOut" if not_ready else "Complete",
                "members are starting" if not_ready else "every member is ready",
                generation=generation,
                previous=previous,
                now=now,
            ),
            condition(
                "Degraded",
                "True" if problem else "False",
                problem.reason if problem else "AsExpected",
                problem.message if problem else "no problems",
                generation=generation,
                previous=previous,
                now=now,
            ),
        ],
    )


def deleting(stack: KubeObject, reason: str, message: str) -> AppStackStatus:
    """The status while the stack is torn down: ``Ready=False`` with ``reason``
    (``TearingDown``, or ``DeletionBlocked`` naming what does not go); the rest as it was."""
    old = AppStackStatus.model_validate(stack.get("status") or {})
    ready = condition(
        "Ready",
        "False",
        reason,
        message,
        generation=stack["metadata"].get("generation"),
        previous=previous_conditions(stack),
        now=now_rfc3339(),
    )
    old.conditions = [ready, *(c for c in old.conditions or [] if c.type != "Ready")]
    return old
