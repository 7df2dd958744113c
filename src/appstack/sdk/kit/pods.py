"""Why the pods of a workload cannot start, told to the owner (pure, plus a cache read).

A Deployment or StatefulSet only counts pods (``0/1 available``); the reason is on the pods:
a container waiting in ``ImagePullBackOff``/``ErrImagePull``/``CrashLoopBackOff`` (and the
other kubelet reasons a user must act on), ``PodScheduled=False`` with reason
``Unschedulable``, or a container that has been running for :data:`NOT_READY_GRACE`
seconds without becoming ready — its readiness probe does not pass (``ContainersNotReady``;
before that, :func:`recheck_after` says when to look again). :func:`pod_problem` turns the
first such pod into a :class:`~appstack.sdk.kit.conditions.Problem`, which the
AppService and AppStack controllers report as ``Ready=False`` while their workload is not
ready. Pods are watched
through the shared cache, labelled with the operator's managed-by label like every
child (:func:`pod_mapper` wakes the owner when one changes; :func:`pods_of` reads them), and
cached as :func:`cached_pod` keeps them (metadata, ``spec.nodeName`` and status only) and
indexed by label (:data:`POD_INDEXERS`, registered once when a controller is set up).
The pod cache keeps every labelled pod, not only those of our kinds (ours are their
ReplicaSets' or StatefulSets'), and anyone who may create a pod may label it ours: so what
is kept of one is bounded whoever made it — our annotations only, at most
:data:`MAX_CONTAINERS` containers, images and messages of at most :data:`MAX_TEXT`
characters.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from appstack.runtime.builder import Mapper
from appstack.runtime.cache import Cache, Transform
from appstack.runtime.controller import Request
from appstack.runtime.resources import POD, Resource
from appstack.runtime.store import IndexFunc
from appstack.sdk.kit.conditions import Problem, condition_read

WAITING = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


def _container_problem(pod: str, status: Mapping[str, Any]) -> Problem | None:
    waiting = (status.get("state") or {}).get("waiting") or {}
    reason = waiting.get("reason")
    if reason not in WAITING:
        return None
    message = f"pod {pod}: container {status.get('name')}: {waiting.get('message') or reason}"
    restarts = int(status.get("restartCount") or 0)
    if restarts:
        exit_code = ((status.get("lastState") or {}).get("terminated") or {}).get("exitCode")
        message += f" (restarted {restarts} times, last exit code {exit_code})"
    return Problem(str(reason), message)


# How long a running container may take to pass its readiness probe before its pod is
# reported as not becoming ready (slow starts are normal; a probe that never passes is not).
NOT_READY_GRACE = 30.0


def _started(status: Mapping[str, Any]) -> float | None:
    """When a running, not-ready container started (epoch seconds), else None."""
    if status.get("ready"):
        return None
    started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
    if not started:
        return None
    return datetime.fromisoformat(str(started).replace("Z", "+00:00")).timestamp()


def _unready(pods: Iterable[Mapping[str, Any]]) -> list[tuple[float, str, str]]:
    """(started, pod, container) of every running container that is not ready."""
    out = []
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            started = _started(container)
            if started is not None:
                out.append((started, str(pod["metadata"]["name"]), str(container.get("name"))))
    return sorted(out, key=lambda u: (u[1], u[2]))


def recheck_after(pods: Iterable[Mapping[str, Any]], now: float | None = None) -> float | None:
    """Seconds until a running, not-ready container reaches :data:`NOT_READY_GRACE` (so that
    the owner looks again then: no watch event comes when a probe keeps failing)."""
    now = time.time() if now is None else now
    waits = [started + NOT_READY_GRACE - now for started, _, _ in _unready(pods)]
    pending = [w for w in waits if w > 0]
    return min(pending) + 0.5 if pending else None


def pod_problem(pods: Iterable[Mapping[str, Any]], now: float | None = None) -> Problem | None:
    """The first reason (by pod name) why one of ``pods`` cannot start, or None."""
    pods = list(pods)
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        for container in [
            *(status.get("initContainerStatuses") or []),
            *(status.get("containerStatuses") or []),
        ]:
            problem = _container_problem(name, container)
            if problem is not None:
                return problem
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("reason") == (
                "Unschedulable"
            ):
                return Problem("Unschedulable", f"pod {name}: {condition.get('message', '')}")
    now = time.time() if now is None else now
    for started, name, container in _unready(pods):
        if now - started >= NOT_READY_GRACE:
            return Problem(
                "ContainersNotReady",
                f"pod {name}: container {container}: running for {int(now - started)}s but "
                "not ready (its readiness probe does not pass)",
            )
    return None


_LABEL_INDEX = "namespace/label"


def _by_label(obj: dict[str, Any]) -> Iterable[str]:
    """Index values of an object: ``namespace/key=value`` for each of its labels."""
    meta = obj["metadata"]
    return [f"{meta.get('namespace')}/{k}={v}" for k, v in (meta.get("labels") or {}).items()]


#: What is read of a pod's status (:func:`pod_problem`, :func:`_unready`, EtcdCluster's
#: ``pod_view``): the rest (``hostIP(s)``, ``podIPs``, ``startTime``, ``qosClass``, each
#: container's ``image``, ``imageID``, ``containerID``, ``volumeMounts``, ``resources``, the
#: conditions' times, conditions other than ``Ready`` and ``PodScheduled``) is read by nothing.
_POD_STATUS = ("phase", "podIP", "conditions", "containerStatuses", "initContainerStatuses")
_CONDITION_TYPES = frozenset({"Ready", "PodScheduled"})
_CONTAINER = ("name", "ready", "started", "restartCount", "state", "lastState")


#: At most this many containers (and statuses of each list) are kept of a pod: ours have one
#: or two; a pod someone labelled ours with thousands must not cost thousands.
MAX_CONTAINERS = 32
#: At most this many characters of an image or a message kept of a pod: an image reference
#: is at most a few hundred, and a container's waiting message may repeat it.
MAX_TEXT = 1024


def _text(value: Any) -> Any:
    """``value``, cut to :data:`MAX_TEXT` characters if it is a longer text."""
    return value[:MAX_TEXT] if isinstance(value, str) and len(value) > MAX_TEXT else value


def _cached_status(status: dict[str, Any]) -> dict[str, Any]:
    kept = {k: status[k] for k in _POD_STATUS if k in status}
    if "conditions" in kept:
        kept["conditions"] = [
            _cut_message(condition_read(c))
            for c in kept["conditions"] or []
            if c.get("type") in _CONDITION_TYPES
        ]
    for key in ("containerStatuses", "initContainerStatuses"):
        if key in kept:
            kept[key] = [_cached_container(c) for c in (kept[key] or [])[:MAX_CONTAINERS]]
    return kept


def _cut_message(detail: dict[str, Any]) -> dict[str, Any]:
    """``detail`` (a condition, a container state) with its message cut to :data:`MAX_TEXT`
    characters (in place)."""
    if "message" in detail:
        detail["message"] = _text(detail["message"])
    return detail


def _cached_container(status: dict[str, Any]) -> dict[str, Any]:
    """A container's status as read; of a ready container's running state not its start
    (read only while it is not ready: :func:`_started`); the states' messages cut (a
    message may repeat the image)."""
    kept = {k: status[k] for k in _CONTAINER if k in status}
    running = (kept.get("state") or {}).get("running")
    if kept.get("ready") and isinstance(running, dict) and "startedAt" in running:
        kept["state"] = {
            **kept["state"],
            "running": {k: v for k, v in running.items() if k != "startedAt"},
        }
    for key in ("state", "lastState"):
        for detail in (kept.get(key) or {}).values():
            if isinstance(detail, dict):
                _cut_message(detail)
    return kept


def cached_pod(pod: dict[str, Any], domain: str = "") -> dict[str, Any]:
    """What the controllers read of a pod, the only part the cache keeps of it: metadata
    (not ``generateName``, of the annotations only those under the operator's ``domain``
    — e.g. ``appstack.dev/etcd-initial-cluster`` — none without one),
    ``spec.nodeName``, each container's name and image (EtcdCluster reads a member's
    version from it) and what is read of its status — the rest of the spec is most of a
    pod, and nothing here reads it; at most :data:`MAX_CONTAINERS` containers, images and
    messages of at most :data:`MAX_TEXT` characters. One transform for every controller:
    the cache of a kind is shared."""
    spec = pod.get("spec") or {}
    kept: dict[str, Any] = {"nodeName": spec["nodeName"]} if "nodeName" in spec else {}
    if "containers" in spec:
        kept["containers"] = [
            {k: _text(c[k]) for k in ("name", "image") if k in c}
            for c in (spec["containers"] or [])[:MAX_CONTAINERS]
        ]
    pod["spec"] = kept
    if isinstance(pod.get("metadata"), dict):
        meta = pod["metadata"]
        meta.pop("generateName", None)  # read by nothing
        keep_annotations_under(meta, domain)
    if isinstance(pod.get("status"), dict):
        pod["status"] = _cached_status(pod["status"])
    return pod


def keep_annotations_under(meta: dict[str, Any], domain: str) -> None:
    """Drop from ``meta`` every annotation not under ``<domain>/`` (the key too when none
    is left; every one without a domain): the others — kubectl's, the user's — are read
    by nothing, and anyone may label a pod of theirs as ours."""
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        return
    prefix = f"{domain}/" if domain else None
    ours = {k: v for k, v in annotations.items() if prefix and k.startswith(prefix)}
    if ours:
        meta["annotations"] = ours
    else:
        del meta["annotations"]


@functools.cache
def pod_transforms(domain: str) -> dict[Resource, Transform]:
    """The cache transforms of every controller that watches pods, keeping the annotations
    under ``domain`` (the operator's): one function per domain, as the cache of a kind is
    shared and takes one transform."""
    return {POD: functools.partial(cached_pod, domain=domain)}


def label_indexers(*resources: Resource) -> dict[Resource, dict[str, IndexFunc]]:
    """The label index :func:`labelled` reads, for ``resources`` (register at setup)."""
    return {resource: {_LABEL_INDEX: _by_label} for resource in resources}


#: The cache index :func:`pods_of` reads, registered at setup by every controller using it.
POD_INDEXERS: dict[Resource, dict[str, IndexFunc]] = label_indexers(POD)


def labelled(
    cache: Cache, resource: Resource, namespace: str, selector: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The cached objects of ``resource`` in ``namespace`` carrying every label of
    ``selector`` (looked up by an index of the first label, registered at setup by
    :func:`label_indexers`, not by scanning every cached object)."""
    if not selector:
        return cache.by_index(resource, "namespace", namespace)
    key, value = next(iter(sorted(selector.items())))
    return [
        obj
        for obj in cache.by_index(resource, _LABEL_INDEX, f"{namespace}/{key}={value}")
        if selector.items() <= (obj["metadata"].get("labels") or {}).items()
    ]


def pods_of(cache: Cache, namespace: str, selector: Mapping[str, str]) -> list[dict[str, Any]]:
    """The cached pods in ``namespace`` carrying every label of ``selector``."""
    return labelled(cache, POD, namespace, selector)


def pod_mapper(owner_label: str, **required: str) -> Mapper:
    """Map a pod to its owner, named by the pod's ``owner_label``, if it has ``required``
    labels and a problem, or a container running but not ready yet: an update wakes the
    owner when its old or new state has one (a problem appears, changes or goes away; a
    container starts waiting out its readiness grace, which the owner then schedules a
    look at — no event comes when the grace is over), not for each step of a healthy pod
    (its readiness reaches the owner through the workload's status)."""

    def mapper(pod: dict[str, Any]) -> Iterable[Request]:
        labels = pod["metadata"].get("labels") or {}
        if owner_label not in labels or any(labels.get(k) != v for k, v in required.items()):
            return []
        # the owner reads its pods only for their problems, present or to come
        if pod_problem([pod]) is None and not _unready([pod]):
            return []
        return [Request(pod["metadata"].get("namespace"), labels[owner_label])]

    return mapper
