"""The child writer's pure decisions: which rejected applies are the user's to fix, and
when a child already has the quantities asked for (sdk/kit/children.py,
util/quantity.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

from appstack.runtime import errors
from appstack.sdk.kit.compare import is_subset, users_problem
from appstack.sdk.kit.conditions import Problem
from appstack.sdk.kit.pods import NOT_READY_GRACE, pod_problem, recheck_after
from appstack.sdk.kit.quantity import quantity_value, same_quantity

_SSA_500 = (
    "failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec"
    '.containers[name="app"].env: duplicate entries for key [name="A"]'
)


@pytest.mark.parametrize(
    ("code", "reason", "message", "users"),
    [
        (422, "Invalid", "spec.ports[0].port: Invalid value", True),
        (400, "BadRequest", "bad", True),
        (403, "Forbidden", "exceeded quota", True),
        (500, "InternalError", _SSA_500, True),
        (500, "InternalError", "etcdserver: request timed out", False),
        (500, "Timeout", "failed to create typed patch object", False),
        (503, "ServiceUnavailable", "etcd down", False),
        (504, "Timeout", "timeout", False),
        (429, "TooManyRequests", "slow down", False),
        (401, "Unauthorized", "token expired", False),
        (404, "NotFound", 'namespaces "x" not found', False),
        (409, "Conflict", "the object has been modified", False),
    ],
)
def test_only_refusals_of_the_object_itself_are_the_users(
    code: int, reason: str, message: str, users: bool
) -> None:
    error = errors.from_response(code, {"kind": "Status", "reason": reason, "message": message})
    assert users_problem(error) is users


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (1, Decimal(1)),
        ("0.5", Decimal("0.5")),
        ("500m", Decimal("0.5")),
        ("1Gi", Decimal(2**30)),
        ("1024Mi", Decimal(2**30)),
        ("1e3", Decimal(1000)),
        ("1k", Decimal(1000)),
        ("lots", None),
        ("1Xi", None),
        (True, None),
    ],
)
def test_quantity_values(value: object, number: Decimal | None) -> None:
    assert quantity_value(value) == number


def test_canonical_quantities_are_already_so_but_other_strings_are_compared_exactly() -> None:
    want = {
        "resources": {"limits": {"cpu": 1, "memory": "1024Mi"}, "requests": {"cpu": "0.5"}},
        "env": [{"name": "N", "value": "1.0"}],
    }
    server = {
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "env": [{"name": "N", "value": "1.0"}],
    }
    assert is_subset(want, server)
    assert not is_subset(want, {**server, "env": [{"name": "N", "value": "1"}]})
    more_cpu = {**server["resources"], "requests": {"cpu": "1"}}
    assert not is_subset(want, {**server, "resources": more_cpu})
    assert same_quantity("2Gi", "2048Mi")
    assert not same_quantity("2Gi", "2G")


def _pod(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": status}


def test_the_first_pod_that_cannot_start_says_why() -> None:
    crash = {
        "name": "app",
        "restartCount": 3,
        "lastState": {"terminated": {"exitCode": 137}},
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
    }
    running = {"name": "app", "state": {"running": {}}}
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu.",
    }
    assert pod_problem([_pod("a", containerStatuses=[running])]) is None
    assert pod_problem([_pod("b", containerStatuses=[crash]), _pod("a")]) == Problem(
        "CrashLoopBackOff",
        "pod b: container app: back-off 40s (restarted 3 times, last exit code 137)",
    )
    assert pod_problem([_pod("c", conditions=[unschedulable])]) == Problem(
        "Unschedulable", "pod c: 0/3 nodes are available: 3 Insufficient cpu."
    )
    going = {
        "metadata": {"name": "d", "deletionTimestamp": "now"},
        "status": {"containerStatuses": [crash]},
    }
    assert pod_problem([going]) is None


def test_a_container_that_runs_but_never_becomes_ready_is_reported_after_its_grace() -> None:
    """A readiness probe that does not pass: no watch event says so, so the owner looks
    again when the grace is over (recheck_after), then reports it."""
    started = "2026-01-01T00:00:00Z"
    epoch = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    unready = {"name": "app", "ready": False, "state": {"running": {"startedAt": started}}}
    pod = _pod("web-1", containerStatuses=[unready])
    assert pod_problem([pod], now=epoch + 5) is None
    assert recheck_after([pod], now=epoch + 5) == NOT_READY_GRACE - 5 + 0.5
    problem = pod_problem([pod], now=epoch + NOT_READY_GRACE + 1)
    assert problem is not None
    assert problem.reason == "ContainersNotReady"
    assert "readiness probe" in problem.message
    assert recheck_after([pod], now=epoch + NOT_READY_GRACE + 1) is None
    ready = {**unready, "ready": True}
    assert pod_problem([_pod("web-1", containerStatuses=[ready])], now=epoch + 99) is None


def test_children_written_together_are_told_apart_by_name() -> None:
    """Two Services of one owner (a replica set's headless and client Services) are both
    kept; asking for "the" Service then is an error, not one of them at random."""
    from appstack.sdk.kit.children import Synced  # noqa: PLC0415

    synced = Synced()
    synced["Service", "db-hl"] = {"metadata": {"name": "db-hl"}}
    synced["Service", "db"] = {"metadata": {"name": "db"}}
    synced["StatefulSet", "db"] = None
    assert synced["Service", "db-hl"] == {"metadata": {"name": "db-hl"}}
    assert synced.wrote("Service")
    assert not synced.wrote("Deployment")
    assert synced.one("StatefulSet") is None
    assert synced.one("Deployment") is None
    with pytest.raises(LookupError, match="2 children of kind Service"):
        synced.one("Service")
