"""The EtcdCluster's status from an observation and the step taken (pure, unit-tested).

``Available``: a leader and a quorum of healthy voting members. ``Progressing``: a change
is under way (bootstrap, scaling, replacing, upgrading; reason is the step). ``Degraded``:
a voting member is unhealthy, or quorum is lost (then the message says what is needed);
the maintenance problems (``NoSpace``, ``QuotaBelowDatabaseSize``) are added by the
reconciler (:func:`with_problem`). Members carry their database sizes; ``alarms`` lists
what etcd raised.
:func:`blocked`: a TLS Secret the user must fix stops everything (``Available=False``).
"""

from __future__ import annotations

from appstack.api.etcdcluster import EtcdClusterStatus, EtcdMember
from appstack.controllers.etcdcluster import desired
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import Step
from appstack.sdk import (
    Condition,
    KubeObject,
    Problem,
    Truth,
    condition,
    label_selector,
    last_condition,
    previous_conditions,
)

#: The condition whose True means the cluster is up (a leader and a quorum): what its
#: registration names as its ready condition (readiness gauge, health check, status view).
UP = "Available"

#: A condition as (status, reason, message).
Said = tuple[Truth, str, str]


def _members(obj: KubeObject, seen: Observation) -> list[EtcdMember]:
    if seen.seen.members is None:  # no member list without a leader: keep the last one
        last = (obj.get("status") or {}).get("members") or []
        return [EtcdMember.model_validate({**m, "healthy": False, "isLeader": False}) for m in last]
    out = []
    for m in seen.seen.members or []:
        member = EtcdMember(
            name=m.pod or "",
            id=f"{m.id:x}",
            peerURL=desired.peer_url(obj, m.pod) if m.pod else "",
            healthy=m.healthy,
            is_leader=m.id == seen.seen.leader,
            is_learner=m.learner,
        )
        if m.version:
            member.version = m.version
        own = seen.statuses.get(m.pod)
        if own is not None and own.member_id == m.id:
            member.db_size, member.db_size_in_use = own.db_size, own.db_size_in_use
        out.append(member)
    return sorted(out, key=lambda m: m.name)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def from_observation(obj: KubeObject, seen: Observation, step: Step, now: str) -> EtcdClusterStatus:
    old = obj.get("status") or {}
    members = seen.seen.members or []
    voters = [m for m in members if not m.learner]
    ready = sum(1 for m in voters if m.healthy)
    quorum = len(voters) // 2 + 1
    leader = next((m.pod for m in members if m.id == seen.seen.leader), "")
    versions = sorted({m.version for m in members if m.version}, key=_version_key)
    available = bool(seen.seen.leader) and ready >= quorum
    sick = sorted(m.pod or f"{m.id:x}" for m in voters if not m.healthy)
    degraded: Said
    progressing: Said
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
    avail: Said = (
        ("True", "Quorum", f"{ready} of {len(voters)} voting members healthy, leader {leader}")
        if available
        else ("False", "NoQuorum", step.reason)
    )
    generation = obj["metadata"].get("generation")
    previous = previous_conditions(obj)

    def cond(type_: str, value: Said) -> Condition:
        return condition(type_, *value, generation=generation, previous=previous, now=now)

    listed = _members(obj, seen)
    status = EtcdClusterStatus(
        members=listed,
        replicas=len(listed),
        selector=selector(obj),
        ready_members=ready,
        leader=leader,
        clientURL=desired.service_url(obj),
        phase=step.kind,
        observed_generation=generation,
        conditions=[
            cond(UP, avail),
            cond("Progressing", progressing),
            cond("Degraded", degraded),
        ],
    )
    # what is not known now is left out (the merge patch keeps what was written)
    kept = EtcdClusterStatus.model_validate(
        {
            k: old[k]
            for k in ("clusterID", "version", "defragmentation", *BACKUP_FIELDS)
            if old.get(k) is not None
        }
    )
    status.defragmentation = kept.defragmentation
    if seen.statuses:  # what the members say now (empty: none raised)
        status.alarms = sorted({a for s in seen.statuses.values() for a in s.alarms})
    cluster_id = f"{seen.cluster_id:x}" if seen.cluster_id else kept.cluster_id
    if cluster_id is not None:
        status.cluster_id = cluster_id
    version = versions[0] if versions else kept.version
    if version is not None:
        status.version = version
    return with_backups(status, kept)


#: The status fields that record the snapshots taken.
BACKUP_FIELDS = (
    "backupsTaken",
    "lastBackup",
    "lastBackupTime",
    "backups",
    "backupRequest",
    "lastBackupError",
    "lastBackupFailureTime",
)


def with_backups(status: EtcdClusterStatus, taken: EtcdClusterStatus) -> EtcdClusterStatus:
    """``status`` with the snapshot fields ``taken`` has (those it does not: unchanged)."""
    if taken.backups_taken is not None:
        status.backups_taken = taken.backups_taken
    if taken.last_backup is not None:
        status.last_backup = taken.last_backup
    if taken.last_backup_time is not None:
        status.last_backup_time = taken.last_backup_time
    for field in ("backups", "backup_request", "last_backup_error", "last_backup_failure_time"):
        if getattr(taken, field) is not None:
            setattr(status, field, getattr(taken, field))
    return status


def selector(obj: KubeObject) -> str:
    """The member pods' label selector, as the scale subresource reports it (HPA)."""
    return label_selector(desired.selector(obj["metadata"]["name"]))


def last_said(obj: KubeObject, type_: str, value: str) -> tuple[str, str] | None:
    """Reason and message of the last condition ``type_`` written, if it was ``value``
    (what a problem was already reported as: ``Available=False``, ``Degraded=True``)."""
    said = last_condition(obj, type_)
    if said.get("status") != value:
        return None
    return said.get("reason", ""), said.get("message", "")


def degraded(obj: KubeObject, problem: Problem, now: str) -> Condition:
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
    obj: KubeObject, observed: EtcdClusterStatus, problem: Problem, now: str
) -> EtcdClusterStatus:
    """``observed`` with ``Degraded=True`` for ``problem`` (the rest as observed)."""
    conditions = [c for c in observed.conditions or [] if c.type != "Degraded"]
    out = observed.model_copy()
    out.conditions = [*conditions, degraded(obj, problem, now)]
    return out


def blocked(obj: KubeObject, problem: Problem, now: str) -> EtcdClusterStatus:
    """The status while a problem only the user can fix (a TLS Secret) stops the work:
    the last members and counts kept, not ``Available``, ``Degraded`` for the same reason."""
    generation = obj["metadata"].get("generation")
    previous = previous_conditions(obj)

    def cond(type_: str, value: Truth, reason: str, message: str) -> Condition:
        return condition(
            type_, value, reason, message, generation=generation, previous=previous, now=now
        )

    out = EtcdClusterStatus.model_validate(obj.get("status") or {})
    out.phase = "Blocked"
    out.observed_generation = generation
    out.conditions = [
        cond(UP, "False", problem.reason, problem.message),
        cond("Progressing", "False", problem.reason, "waiting for the user"),
        cond("Degraded", "True", problem.reason, problem.message),
    ]
    return out


def invalid(obj: KubeObject, problem: Problem, now: str) -> EtcdClusterStatus:
    """The status of a cluster whose spec is invalid: the rest as it was, ``Degraded``."""
    out = EtcdClusterStatus.model_validate(obj.get("status") or {})
    out.observed_generation = obj["metadata"].get("generation")
    out.conditions = [degraded(obj, problem, now)]
    return out
