"""The chaos run's checks (appstack_testbed.chaos) on made-up objects and audit events:
children compared with what each parent wants, and writes checked against the Lease's
holder at the time the API server received them."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from appstack_testbed.audit import AuditEvent
from appstack_testbed.chaos import compare, converged, tenures, unfenced_writes, wanted
from appstack_testbed.chaos_run import app_service, small_stack

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _event(  # noqa: PLR0917 - read positionally
    second: float, verb: str, resource: str, name: str, agent: str, code: int = 200
) -> AuditEvent:
    return AuditEvent(
        verb=verb,
        user="u",
        user_agent=agent,
        resource=resource,
        namespace="ns",
        name=name,
        subresource="",
        code=code,
        received=T0 + datetime.timedelta(seconds=second),
    )


def _agent(identity: str) -> str:
    return f"appstack/0.1.0 ({identity})"


def _parent(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"].update(namespace="ns", uid=uid)
    return obj


def _child(kind: str, name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "appstack"}}
    if owner is not None:
        ref = {"kind": owner["kind"], "uid": owner["metadata"]["uid"], "controller": True}
        meta["ownerReferences"] = [ref]
    return {"kind": kind, "metadata": meta}


def test_an_app_service_wants_one_deployment_and_one_service() -> None:
    assert wanted(_parent(app_service("a", "ns"), "u1")) == {("Deployment", "a"), ("Service", "a")}


def test_the_small_stack_wants_its_members_children_and_the_credentials_secret() -> None:
    stack = _parent({**small_stack(), "metadata": {"name": "s"}}, "u2")
    want = wanted(stack)
    assert len(want) == 10
    assert ("StatefulSet", "s-db") in want
    assert ("Secret", "s-db-credentials") in want
    assert ("ConfigMap", "s-web-config") in want


def test_compare_finds_missing_duplicated_and_orphaned_children() -> None:
    app = _parent(app_service("a", "ns"), "u1")
    children = [
        _child("Deployment", "a", app),
        _child("Deployment", "a-2", app),  # a second Deployment: a duplicate
        _child("Service", "gone", {"kind": "AppService", "metadata": {"uid": "old"}}),
        _child("Service", "stray", None),
        {
            "kind": "EndpointSlice",
            "metadata": {
                "name": "a-x",
                "ownerReferences": [{"kind": "Service", "uid": "s", "controller": True}],
            },
        },
    ]
    report = compare([app], children)
    assert report.missing == ["AppService/a: Service/a"]
    assert report.duplicates == ["AppService/a: Deployment/a-2"]
    assert report.orphans == ["Service/gone", "Service/stray"]
    assert not report.ok
    healthy = compare([app], [_child("Deployment", "a", app), _child("Service", "a", app)])
    assert healthy.ok
    assert healthy.found == healthy.expected == 2


def test_converged_needs_ready_and_the_current_generation() -> None:
    obj: dict[str, Any] = {"metadata": {"generation": 2}, "status": {"observedGeneration": 1}}
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert not converged(obj)
    obj["status"]["observedGeneration"] = 2
    assert converged(obj)


def test_a_write_after_the_successor_acquired_the_lease_is_unfenced() -> None:
    a, b = _agent("a_1"), _agent("b_2")
    events = [
        _event(0, "create", "leases", "appstack-operator", a),
        _event(1, "patch", "deployments", "x", a),
        _event(2, "update", "leases", "appstack-operator", a),
        _event(3, "update", "leases", "appstack-operator", b, code=409),  # not acquired
        _event(4, "update", "leases", "appstack-operator", b),  # b acquires
        _event(5, "patch", "deployments", "x", b),
        _event(6, "patch", "deployments", "y", a),  # a, after b acquired: unfenced
        _event(6, "create", "configmaps", "z", "kubectl/v1.36"),  # not a replica
    ]
    late, writes = unfenced_writes(events, "ns", "appstack-operator")
    assert [(e.name, e.user_agent) for e in late] == [("y", a)]
    assert writes == {"a_1": 2, "b_2": 1}
    history = tenures(events, "ns", "appstack-operator")
    assert [(t.identity, t.start.second, t.end and t.end.second) for t in history] == [
        ("a_1", 0, 4),
        ("b_2", 4, None),
    ]


def test_a_write_before_any_lease_write_is_unfenced() -> None:
    late, _ = unfenced_writes([_event(0, "create", "services", "s", _agent("a_1"))], "ns", "l")
    assert len(late) == 1


def test_a_retained_credentials_secret_without_an_owner_is_its_stacks_or_kept_data() -> None:
    stack = _parent({**small_stack(), "metadata": {"name": "s"}}, "u2")
    secret = _child("Secret", "s-db-credentials", None)  # retained with the volume: no owner
    secret["metadata"]["labels"]["appstack.dev/stack"] = "s"
    report = compare([stack], [secret])
    assert "AppStack/s: Secret/s-db-credentials" not in report.missing
    assert report.orphans == []
    kept = _child("Secret", "old-db-credentials", None)  # its stack was deleted: kept data
    kept["metadata"]["labels"]["appstack.dev/stack"] = "old"
    assert compare([], [kept]).orphans == []
