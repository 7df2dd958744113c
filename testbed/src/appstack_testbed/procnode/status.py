"""A process-node pod's ``status`` as the kubelet would write it (pure functions).

Phase: ``Pending`` until the containers run, ``Running`` while any runs or restarts,
``Succeeded``/``Failed`` once every container has exited for good. Conditions:
``PodScheduled``, ``PodReadyToStartContainers``, ``Initialized``, ``ContainersReady`` and
``Ready`` (all containers ready), each with a stable ``lastTransitionTime``. Written with a
JSON merge patch, so the lists are replaced whole.

Used by :mod:`appstack_testbed.procnode.pod`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from appstack_testbed.procnode.container import now_rfc3339

if TYPE_CHECKING:
    from appstack_testbed.procnode.pod import PodWorker


def previous_restarts(pod: Mapping[str, Any], container: str) -> int:
    """restartCount to continue from when an agent restarts and adopts a running pod
    (its process died with the old agent: one more restart)."""
    for entry in (pod.get("status") or {}).get("containerStatuses") or []:
        if entry.get("name") == container:
            return int(entry.get("restartCount", 0)) + (1 if entry.get("state") else 0)
    return 0


def env_references(container: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of every Secret ("secret") and ConfigMap ("configmap") env reads."""
    out = set()
    for source in container.get("envFrom") or []:
        if "secretRef" in source:
            out.add(("secret", source["secretRef"]["name"]))
        if "configMapRef" in source:
            out.add(("configmap", source["configMapRef"]["name"]))
    for var in container.get("env") or []:
        value_from = var.get("valueFrom") or {}
        if "secretKeyRef" in value_from:
            out.add(("secret", value_from["secretKeyRef"]["name"]))
        if "configMapKeyRef" in value_from:
            out.add(("configmap", value_from["configMapKeyRef"]["name"]))
    return out


def phase(worker: PodWorker) -> str:
    runners = worker.runners
    if not worker.init_done or not runners:
        if (
            runners
            and all(r.finished for r in runners)
            and worker.pod["spec"].get("restartPolicy") == "Never"
        ):
            return "Failed"
        return "Pending"
    if all(r.finished for r in runners):
        codes = [r.state["terminated"]["exitCode"] for r in runners]
        return "Succeeded" if all(c == 0 for c in codes) else "Failed"
    return "Running"


def pod_status(worker: PodWorker, host_ip: str) -> dict[str, Any]:
    ready = worker.init_done and bool(worker.runners) and all(r.ready for r in worker.runners)
    flags = {
        "PodScheduled": True,
        "PodReadyToStartContainers": worker.error is None,
        "Initialized": worker.init_done,
        "ContainersReady": ready,
        "Ready": ready,
    }
    conditions = []
    for kind, value in flags.items():
        text = "True" if value else "False"
        since = worker.transitions.get(kind)
        if since is None or since[0] != text:
            since = (text, now_rfc3339())
            worker.transitions[kind] = since
        conditions.append({"type": kind, "status": text, "lastTransitionTime": since[1]})
    containers = [r.status() for r in worker.runners] if worker.init_done else []
    inits = [] if worker.init_done else [r.status() for r in worker.runners]
    if not containers:
        reason = "ContainerCreating" if worker.error is None else worker.error_reason
        containers = [_waiting(c, reason, worker.error) for c in worker.pod["spec"]["containers"]]
    return {
        "phase": phase(worker),
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": worker.ip,
        "podIPs": [{"ip": worker.ip}],
        "startTime": worker.started_at,
        "containerStatuses": containers,
        "initContainerStatuses": inits or None,
        "message": worker.error,
    }


def _waiting(container: Mapping[str, Any], reason: str, error: str | None) -> dict[str, Any]:
    waiting: dict[str, Any] = {"reason": reason}
    if error is not None:
        waiting["message"] = error
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": waiting},
    }
