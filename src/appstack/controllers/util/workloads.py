"""Workload fields and readiness, the same for every controller that runs pods (pure).

:func:`container` builds a container from the API's fields (env, resources, probes, ...),
with the securityContext of a Pod Security level (:data:`BASELINE`, :data:`RESTRICTED`:
:mod:`appstack.api.security` says which applies) and the user's overrides
(:func:`security_context`);
:func:`deployment_rollout` and :func:`statefulset_ready` say whether a workload has rolled
out its current spec, from its status as the cache holds it; :func:`replica_failure`
whether it cannot create pods at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from appstack.api.security import PodSecurityLevel
from appstack.sdk import (
    Container,
    ContainerPort,
    ContainerSecurity,
    EnvFromSource,
    EnvVarDict,
    Probe,
    Problem,
    ResourceRequirements,
    SecurityContext,
    user_probe,
    user_resources,
    user_security,
)

# Hardening that never stops an ordinary image (root ones included): within the `baseline`
# Pod Security Standard, plus no privilege escalation and the runtime's seccomp profile.
BASELINE: ContainerSecurity = {
    "allowPrivilegeEscalation": False,
    "seccompProfile": {"type": "RuntimeDefault"},
}
# The `restricted` Pod Security Standard, per container.
RESTRICTED: ContainerSecurity = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
LEVELS: dict[PodSecurityLevel, ContainerSecurity] = {"baseline": BASELINE, "restricted": RESTRICTED}


def security_context(
    user: SecurityContext | None,
    base: ContainerSecurity | None = None,
    level: PodSecurityLevel = "restricted",
) -> ContainerSecurity:
    """The ``level``'s settings, then ``base`` (e.g. an engine's user id), then what the
    user set.

    A container the user makes privileged or gives ``CAP_SYS_ADMIN`` may not also have the
    level's ``allowPrivilegeEscalation: false`` (the API server refuses that pair as invalid,
    a message about a field the user never wrote): the default is left out then, and
    what decides is the writes policy and the namespace's Pod Security level."""
    own = user_security(user)
    out: ContainerSecurity = {**LEVELS[level], **(base or {}), **own}
    added = (own.get("capabilities") or {}).get("add") or []
    escalates = own.get("privileged") or {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(added)
    if escalates and "allowPrivilegeEscalation" not in own:
        out.pop("allowPrivilegeEscalation", None)
    return out


def container(
    name: str,
    image: str,
    *,
    ports: list[ContainerPort] | None = None,
    env: list[EnvVarDict] | None = None,
    env_from: Sequence[EnvFromSource] | None = None,
    resources: ResourceRequirements | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    readiness_probe: Probe | None = None,
    liveness_probe: Probe | None = None,
    security: ContainerSecurity | None = None,
) -> Container:
    """A container with only the fields that are set (server-side apply owns no others),
    and a securityContext (``security``, default: :data:`RESTRICTED`)."""
    out: Container = {"name": name, "image": image}
    if ports:
        out["ports"] = unique_ports(ports)
    if env:
        out["env"] = env
    if env_from:
        out["envFrom"] = [e.to_dict() for e in env_from]
    if resources:
        out["resources"] = user_resources(resources)
    if command:
        out["command"] = list(command)
    if args:
        out["args"] = list(args)
    if readiness_probe:
        out["readinessProbe"] = user_probe(readiness_probe)
    if liveness_probe:
        out["livenessProbe"] = user_probe(liveness_probe)
    out["securityContext"] = security or RESTRICTED.copy()
    return out


def unique_ports(ports: list[ContainerPort]) -> list[ContainerPort]:
    """Container ports without repeats: Service ports sharing a target port declare it once
    (a container port is keyed by number and protocol, and names are unique)."""
    out: list[ContainerPort] = []
    for port in ports:
        key = (port["containerPort"], port.get("protocol", "TCP"))
        if any((p["containerPort"], p.get("protocol", "TCP")) == key for p in out):
            continue
        named = port.get("name") and any(p.get("name") == port["name"] for p in out)
        out.append(_unnamed(port) if named else port)
    return out


def _unnamed(port: ContainerPort) -> ContainerPort:
    out = port.copy()
    out.pop("name", None)
    return out


def generation_seen(obj: dict[str, Any]) -> bool:
    """The workload's controller has looked at its current spec."""
    status = obj.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int(obj["metadata"].get("generation") or 0)


@dataclass(frozen=True)
class Rollout:
    """A Deployment's replica counts against what is wanted."""

    want: int
    replicas: int = 0
    ready: int = 0
    available: int = 0
    updated: int = 0
    unavailable: int = 0
    generation_seen: bool = False

    @property
    def done(self) -> bool:
        """Every wanted replica runs the current template and is available, none extra."""
        return (
            self.generation_seen
            and self.updated == self.want
            and self.available == self.want
            and self.replicas == self.want
        )


def deployment_rollout(deployment: dict[str, Any] | None, want: int | None = None) -> Rollout:
    """The rollout of ``deployment`` towards ``want`` replicas (default: its spec's)."""
    if deployment is None:
        return Rollout(want=want or 0)
    status = deployment.get("status") or {}
    return Rollout(
        # (no spec: a Deployment none of our kinds controls is cached as metadata only)
        want=int((deployment.get("spec") or {}).get("replicas") or 0) if want is None else want,
        replicas=int(status.get("replicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        available=int(status.get("availableReplicas") or 0),
        updated=int(status.get("updatedReplicas") or 0),
        unavailable=int(status.get("unavailableReplicas") or 0),
        generation_seen=generation_seen(deployment),
    )


def replica_failure(deployment: dict[str, Any] | None) -> Problem | None:
    """The Deployment cannot create pods (``ReplicaFailure``: quota, Pod Security or other
    admission refusals) — a problem the user must fix, not a rollout in progress."""
    for c in ((deployment or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            why = c.get("message") or c.get("reason") or "pods cannot be created"
            name = (deployment or {})["metadata"]["name"]
            return Problem("ReplicaFailure", f"Deployment {name} cannot create pods: {why}")
    return None


def deployment_ready(deployment: dict[str, Any] | None) -> tuple[bool, str]:
    """Rolled out, and ``available/wanted`` for status."""
    rollout = deployment_rollout(deployment)
    return rollout.done, f"{rollout.available}/{rollout.want}"


def statefulset_ready(sts: dict[str, Any] | None) -> tuple[bool, str]:
    """Every replica ready at the current revision, and ``ready/wanted`` for status."""
    if sts is None:
        return False, "0/1"
    status = sts.get("status") or {}
    want = int((sts.get("spec") or {}).get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    current = status.get("currentRevision") == status.get("updateRevision")
    return generation_seen(sts) and ready == want and current, f"{ready}/{want}"
