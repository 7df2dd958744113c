"""Status conditions and problems, the same in every controller (pure).

A :class:`Problem` is something only the user can fix (an invalid spec, a name in use, a
rejected child): it is reported as ``Ready=False`` with its reason and a Warning Event.
:func:`condition` follows the API conventions (``lastTransitionTime`` moves only when the
status flips); :func:`describe_validation` turns Pydantic errors into ``spec.<field>:
<message>`` for status, events and previews (``render``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from typing_extensions import Required, TypedDict

from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.model import Condition

#: The ``status`` of a condition.
Truth = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Problem:
    """Something the user must fix; reported as Ready=False and a Warning Event."""

    reason: str
    message: str


def field_path(loc: tuple[Any, ...]) -> str:
    """A Pydantic error location as a field path: ``ports[0].port``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def error_message(item: Any) -> str:
    """One Pydantic error's message, without Pydantic's ``Value error, `` prefix."""
    return str(item["msg"]).removeprefix("Value error, ")


def describe_validation(error: ValidationError) -> str:
    """Pydantic errors as ``spec.<field>: <message>``, for status and events."""
    parts = []
    for item in error.errors():
        path = field_path(item["loc"])
        parts.append(f"spec{'.' + path if path else ''}: {error_message(item)}")
    return "; ".join(parts)


def condition(
    type_: str,
    status: Truth,
    reason: str,
    message: str,
    *,
    generation: int | None,
    previous: dict[str, StoredCondition],
    now: str,
) -> Condition:
    """A condition per the API conventions: ``lastTransitionTime`` moves only when the
    status flips (``previous`` maps type -> the condition as last written)."""
    old = previous.get(type_)
    since = now
    if old is not None and old.get("status") == status:
        since = old.get("lastTransitionTime", now)
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        observed_generation=generation,
        last_transition_time=since,
    )


class StoredCondition(TypedDict, total=False):
    """A condition as the API server stored it (what the last status write said)."""

    type: Required[str]
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


def only_ready_false(owner: KubeObject, problem: Problem, now: str) -> list[Condition]:
    """The one condition an object gets where the operator does not act (a namespace not
    enabled): ``Ready=False`` with ``problem`` — no other beside it, so that a reader (and
    the install's admission policy, which admits nothing else there) sees exactly why."""
    generation = owner["metadata"].get("generation")
    return [
        condition(
            "Ready",
            "False",
            problem.reason,
            problem.message,
            generation=generation,
            previous=previous_conditions(owner),
            now=now,
        )
    ]


def previous_conditions(owner: KubeObject) -> dict[str, StoredCondition]:
    """The owner's conditions as last written, by type (what :func:`condition` needs)."""
    return {c["type"]: c for c in (owner.get("status") or {}).get("conditions") or []}


def last_condition(owner: KubeObject, type_: str) -> StoredCondition:
    """The condition ``type_`` as last written (only its type when there is none)."""
    return previous_conditions(owner).get(type_) or {"type": type_}


def now_rfc3339() -> str:
    """Now, as a condition's ``lastTransitionTime`` (UTC, seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: What is read of a child's condition (a pod's, a Deployment's, a Job's): its times are
#: read by nothing, so the cache transforms drop them.
CONDITION_READ = ("type", "status", "reason", "message")


def condition_read(condition: dict[str, Any], *, message: bool = True) -> dict[str, Any]:
    """A child's condition as cached: its type, status, reason and, if ``message``, its
    message (:data:`CONDITION_READ`)."""
    return {
        k: condition[k] for k in CONDITION_READ if k in condition and (message or k != "message")
    }
