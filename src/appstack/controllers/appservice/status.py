"""The AppService's status from what we observe (pure, unit-tested).

Replica counts come from the Deployment's status. Conditions follow the API conventions
(CamelCase reason, human message, ``lastTransitionTime`` changed only when ``status``
changes):

* ``Ready``        True when the Deployment has reconciled this generation, every desired
                   replica is updated and available, and the Service exists (if any port);
* ``Available``    the Deployment's own ``Available`` condition (its minimum availability:
                   ``kubectl wait --for=condition=Available`` means what it means for a
                   Deployment, even in the middle of a rollout);
* ``Progressing``  True while a rollout is under way;
* ``Degraded``     True when we cannot make it so (a problem the user must fix, such as a
                   nodePort already taken, or a rollout past its progress deadline).
"""

from __future__ import annotations

from typing import Any

from appstack.api.appservice import AppServiceStatus
from appstack.controllers.util.workloads import Rollout, deployment_rollout
from appstack.sdk import KubeObject, Problem, Truth, condition, now_rfc3339, previous_conditions


def from_children(
    app: KubeObject,
    *,
    size: int,
    deployment: dict[str, Any] | None,
    service_expected: bool,
    service: dict[str, Any] | None,
    problem: Problem | None,
    selector: str,
    rollout: Rollout | None = None,
    now: str | None = None,
) -> AppServiceStatus:
    """The AppService's status from its Deployment and Service as now known; ``rollout``
    is the Deployment's (:func:`~appstack.controllers.util.workloads.deployment_rollout`
    towards ``size``), when the caller has decided it already."""
    now = now or now_rfc3339()
    generation = int(app["metadata"].get("generation") or 0)
    previous = previous_conditions(app)
    if rollout is None:
        rollout = deployment_rollout(deployment, want=size)
    deadline_exceeded = any(
        c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
        for c in ((deployment or {}).get("status") or {}).get("conditions") or []
    )
    rolled_out = rollout.done
    service_ok = service is not None or not service_expected

    if problem is not None:
        ready = (False, problem.reason, problem.message)
    elif deployment is None:
        ready = (False, "DeploymentMissing", "the Deployment has not been created yet")
    elif rolled_out and service_ok:
        ready = (True, "Ready", f"{rollout.available}/{size} replicas available")
    elif not service_ok:
        ready = (False, "ServiceMissing", "the Service has not been created yet")
    else:
        ready = (
            False,
            "RollingOut",
            f"{rollout.available}/{size} replicas available, {rollout.updated}/{size} updated",
        )
    progressing = (
        not rolled_out and problem is None and not deadline_exceeded,
        "RollingOut" if not rolled_out else "RolloutComplete",
        "rollout in progress" if not rolled_out else "the latest spec is rolled out",
    )
    available = _available(deployment)
    if problem is not None:
        degraded = (True, problem.reason, problem.message)
    elif deadline_exceeded:
        degraded = (
            True,
            "ProgressDeadlineExceeded",
            "the Deployment did not make progress within its deadline",
        )
    else:
        degraded = (False, "AsExpected", "no problems")

    def truth(ok: bool) -> Truth:
        return "True" if ok else "False"

    return AppServiceStatus(
        replicas=rollout.replicas,
        ready_replicas=rollout.ready,
        available_replicas=rollout.available,
        updated_replicas=rollout.updated,
        unavailable_replicas=rollout.unavailable,
        ready=f"{rollout.ready}/{size}",
        selector=selector,
        observed_generation=generation,
        conditions=[
            condition(
                type_,
                truth(ok),
                reason,
                message,
                generation=generation,
                previous=previous,
                now=now,
            )
            for type_, (ok, reason, message) in (
                ("Ready", ready),
                ("Available", available),
                ("Progressing", progressing),
                ("Degraded", degraded),
            )
        ],
    )


def _available(deployment: dict[str, Any] | None) -> tuple[bool, str, str]:
    """The Deployment's ``Available`` condition, as (status, reason, message)."""
    if deployment is None:
        return (False, "DeploymentMissing", "the Deployment has not been created yet")
    for cond in (deployment.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Available":
            return (
                cond.get("status") == "True",
                cond.get("reason") or "Unknown",
                cond.get("message") or "",
            )
    return (False, "MinimumReplicasUnavailable", "the Deployment reports no availability yet")
