"""The EtcdCluster's status from an observation and the step taken (pure, unit-tested).

``Available``: a leader and a quorum of healthy voting members. ``Progressing``: a change
is under way (bootstrap, scaling, replacing, upgrading; reason is the step). ``Degraded``:
a voting member is unhealthy, or quorum is lost (then the message says what is needed).
:func:`blocked`: a TLS Secret the user must fix stops everything (``Available=False``).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.etcdcluster import desired
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import Step
from appstack.controllers.util.conditions import Problem, condition, previous_conditions
from appstack.controllers.util.meta import label_selector


def _members(obj: dict[str, Any], seen: Observation) -> list[dict[str, Any]]:
    if seen.seen.members is None:  # no member list without a leader: keep the last one
        last = (obj.get("status") or {}).get("members") or []
        return [{**m, "healthy": False, "isLeader": False} for m in last]
    out = []
    for m in seen.seen.members or []:
        out.append(
            {
                "name": m.pod or "",
                "id": f"{m.id:x}",
                "peerURL": desired.peer_url(obj, m.pod) if m.pod else "",
                "healthy": m.healthy,
                "isLeader": m.id == seen.seen.leader,
                "isLearner": m.learner,
                **({"version": m.version} if m.version else {}),
            }
        )
    return sorted(out, key=lambda m: str(m["name"]))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def from_observation(
    obj: dict[str, Any], seen: Observation, step: Step, now: str
) -> dict[str, Any]:
    old = obj.get("status") or {}
    members = seen.seen.members or []
    voters = [m for m in members if not m.learner]
    ready = sum(1 for m in voters if m.healthy)
    quorum = len(voters) // 2 + 1
    leader = next((m.pod for m in members if m.id == seen.seen.leader), "")
    versions = sorted({m.version for m in members if m.version}, key=_version_key)
    available = bool(seen.seen.leader) and ready >= quorum
    sick = sorted(m.pod or f"{m.id:x}" for m in voters if not m.healthy)
    if step.kind == "Degraded":
        degraded = ("True", "QuorumLost", step.reason)
    elif sick:
        degraded = ("True", "MemberUnhealthy", f"unhealthy member(s): {', '.join(sick)}")
    else:
        degraded = ("False", "Healthy", f"{ready} healthy voting members")
    if step.kind in ("Done", "Degraded"):
        progressing = ("False", "Idle", step.reason)
    else:
        progressing = ("True", step.kind, step.reason)
    avail = (
        ("True", "Quorum", f"{ready} of {len(voters)} voting members healthy, leader {leader}")
        if available
        else ("False", "NoQuorum", step.reason)
    )
    generation = obj["metadata"].get("generation")
    previous = previous_conditions(obj)

    def cond(type_: str, value: tuple[str, str, str]) -> dict[str, Any]:
        return condition(type_, *value, generation=generation, previous=previous, now=now)

    listed = _members(obj, seen)
    status: dict[str, Any] = {
        "members": listed,
        "replicas": len(listed),
        "selector": selector(obj),
        "readyMembers": ready,
        "leader": leader,
        "clusterID": f"{seen.cluster_id:x}" if seen.cluster_id else old.get("clusterID"),
        "clientURL": desired.service_url(obj),
        "version": versions[0] if versions else old.get("version"),
        "phase": step.kind,
        "observedGeneration": generation,
        "conditions": [
            cond("Available", avail),
            cond("Progressing", progressing),
            cond("Degraded", degraded),
        ],
    }
    for key in ("backupsTaken", "lastBackup", "lastBackupTime"):
        status[key] = old.get(key)
    return {k: v for k, v in status.items() if v is not None}


def selector(obj: dict[str, Any]) -> str:
    """The member pods' label selector, as the scale subresource reports it (HPA)."""
    return label_selector(desired.selector(obj["metadata"]["name"]))


def last_said(obj: dict[str, Any], type_: str, value: str) -> tuple[str, str] | None:
    """Reason and message of the last condition ``type_`` written, if it was ``value``
    (what a problem was already reported as: ``Available=False``, ``Degraded=True``)."""
    said = previous_conditions(obj).get(type_) or {}
    if said.get("status") != value:
        return None
    return said.get("reason", ""), said.get("message", "")


def degraded(obj: dict[str, Any], problem: Problem, now: str) -> dict[str, Any]:
    """The condition ``Degraded=True`` for ``problem``."""
    generation = obj["metadata"].get("generation")
    return condition(
        "Degraded",
        "True",
        problem.reason,
        problem.message,
        generation=generation,
        previous=previous_conditions(obj),
        now=now,
    )


def with_problem(
    obj: dict[str, Any], observed: dict[str, Any], problem: Problem, now: str
) -> dict[str, Any]:
    """``observed`` with ``Degraded=True`` for ``problem`` (the rest as observed)."""
    conditions = [c for c in observed["conditions"] if c["type"] != "Degraded"]
    return {**observed, "conditions": [*conditions, degraded(obj, problem, now)]}


def blocked(obj: dict[str, Any], problem: Problem, now: str) -> dict[str, Any]:
    """The status while a problem only the user can fix (a TLS Secret) stops the work:
    the last members and counts kept, not ``Available``, ``Degraded`` for the same reason."""
    generation = obj["metadata"].get("generation")
    previous = previous_conditions(obj)

    def cond(type_: str, value: str, reason: str, message: str) -> dict[str, Any]:
        return condition(
            type_, value, reason, message, generation=generation, previous=previous, now=now
        )

    return {
        **(obj.get("status") or {}),
        "phase": "Blocked",
        "observedGeneration": generation,
        "conditions": [
            cond("Available", "False", problem.reason, problem.message),
            cond("Progressing", "False", problem.reason, "waiting for the user"),
            cond("Degraded", "True", problem.reason, problem.message),
        ],
    }
