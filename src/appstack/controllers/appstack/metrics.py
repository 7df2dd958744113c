"""The AppStack's own gauges — its members by state, read from its typed status — and the
dashboard row that shows them. Declared on its registration (:data:`.CONTROLLER`); the
operator's per-kind collector reads them at scrape time
(:mod:`appstack.controllers.kind_metrics`) and its dashboard is drawn by
:mod:`appstack.manifests.grafana`. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from appstack.api.appstack import AppStackStatus
from appstack.sdk import Gauges, Panel, Sample

MEMBERS = "appstack_appstack_members"
FAMILIES = {MEMBERS: "An AppStack's members, by state"}
#: Every state a member may be in, each with a sample (0 when no member is in it).
STATES = ("Ready", "Progressing", "WaitingForDependencies", "Failed")


def samples(obj: dict[str, Any], who: dict[str, str]) -> Iterator[Sample]:
    """How many of the stack's members are in each state (none for a status that is not
    the kind's)."""
    try:
        status = AppStackStatus.model_validate(obj.get("status") or {})
    except ValidationError:
        return
    states: Counter[str] = Counter(member.state for member in status.members or [])
    for state in STATES:
        yield MEMBERS, {**who, "state": state}, states[state]


def panels(who: str) -> Sequence[Panel]:
    """The dashboard row of :data:`FAMILIES`, for the objects ``who`` selects."""
    return [
        (
            "Members by state",
            "short",
            [f"sum by (namespace, name, state) ({MEMBERS}{{{who}}})"],
        ),
    ]


GAUGES = Gauges(FAMILIES, samples)
