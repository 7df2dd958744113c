"""Reconcile one AppService: make its Deployment and Service match, then report status.

Level-based: everything is read from the informer cache (the AppService, and its children
through a cache that holds only objects labelled ``app.kubernetes.io/managed-by=appstack``).
Children are written through :class:`~appstack.sdk.kit.children.ChildWriter`: applied
only when the cached one differs, never taking over a same-named object we do not control.

Problems the user must fix (a nodePort already taken, a child name in use, a rejected
child) become ``Ready=False``/``Degraded=True`` with the reason and a Warning Event, and the
key is retried with backoff; other AppServices are unaffected. Pods that cannot start (image
pull, crash loop, unschedulable) are reported the same way while the rollout is not done,
read from the cached pods, whose changes wake the AppService. Deletion is left to the
garbage collector (children carry a controller ownerReference).
"""

from __future__ import annotations

from appstack.api.appservice import AppService, AppServiceSpec, AppServiceStatus
from appstack.controllers.appservice import desired, status
from appstack.controllers.util import podsecurity
from appstack.controllers.util.workloads import deployment_rollout, replica_failure
from appstack.runtime import DEPLOYMENT, POD, SERVICE, Result
from appstack.sdk import (
    COMPONENT_LABEL,
    INSTANCE_LABEL,
    POD_INDEXERS,
    KindReconciler,
    KubeObject,
    Problem,
    instance_labels,
    label_selector,
    pod_mapper,
    pod_problem,
    pods_of,
    recheck_after,
)


def _selector(app: KubeObject) -> str:
    """The pods' label selector, as the scale subresource reports it."""
    return label_selector(instance_labels(app["metadata"]["name"]))


class AppServiceReconciler(KindReconciler[AppServiceSpec]):
    """AppService → Deployment (+ Service when it has ports) → status."""

    kind = AppService.KIND
    owns = (DEPLOYMENT, SERVICE)
    watches = ((POD, pod_mapper(INSTANCE_LABEL, **{COMPONENT_LABEL: desired.COMPONENT})),)
    indexers = POD_INDEXERS
    status_changes = False  # its status is ours, computed from the children

    def invalid_status(self, obj: KubeObject, problem: Problem) -> AppServiceStatus:
        return status.from_children(
            obj,
            size=int((obj.get("spec") or {}).get("size") or 0),
            deployment=None,
            service_expected=False,
            service=None,
            problem=problem,
            selector=_selector(obj),
        )

    async def apply(self, obj: KubeObject, spec: AppServiceSpec) -> Result | None:
        level = await podsecurity.level(
            self.namespaces, obj["metadata"]["namespace"], spec.pod_security
        )
        synced, problems = await self.writer.sync_all(obj, desired.children(obj, spec, level))
        if not synced.wrote("Service"):
            await self.writer.delete(obj, SERVICE, "no ports")
        # A rejected child, or a Deployment that cannot create pods (quota, admission).
        deployment = synced.one("Deployment")
        rejected = problems[0] if problems else replica_failure(deployment)
        rollout = deployment_rollout(deployment, spec.size)  # decided once per reconcile
        pods = recheck = None
        if rejected is None and not rollout.done:
            # Why the pods do not come up (pull, crash, scheduling, a readiness probe that
            # does not pass), from the cached pods.
            meta = obj["metadata"]
            cached = pods_of(self.cache, meta["namespace"], instance_labels(meta["name"]))
            pods = pod_problem(cached)
            recheck = recheck_after(cached)
        if rejected is not None:
            await self.writer.report(obj, rejected)
        elif pods is not None:
            await self.writer.report_new(obj, pods)
        observed = status.from_children(
            obj,
            size=spec.size,
            deployment=deployment,
            service_expected=synced.wrote("Service"),
            service=synced.one("Service"),
            problem=rejected or pods,
            selector=_selector(obj),
            rollout=rollout,
        )
        # what the status says of it (Progressing: rolling out, no problem, in its deadline)
        rolling = any(
            c.type == "Progressing" and c.status == "True" for c in observed.conditions or []
        )
        wait = await self.writer.write_status(obj, observed, rolling=rolling)
        if wait is not None or recheck is not None:
            # a rollout step: written with the next one, or in `wait` s; a container not
            # ready yet: looked at again when it has had its grace
            return Result(requeue_after=min(w for w in (wait, recheck) if w is not None))
        # A rejected child is retried with backoff; pods wake us when they change.
        return Result(requeue=True) if rejected is not None else None
