"""Reconcile one AppStack: middleware first, then components in dependency order.

A component's children are created — and later updated — only when everything it depends
on (``dependsOn`` and ``uses``) is *ready*: managed middleware when its StatefulSet has all
replicas ready at the current revision, external middleware once its Service exists, a
component when its Deployment has every replica updated and available. Until then the
member is ``WaitingForDependencies`` and its status names what it waits for.

Deletion: a finalizer (``appstack.dev/teardown``) tears the stack down in *reverse*
dependency order — the consumers first, the middleware they use last — one wave at a
time, and is removed once nothing is left (also when some children were already gone).

Children no longer wanted (a member removed from the spec, a component that lost its
ports or config) are deleted; managed-middleware volumes follow the StatefulSet's
``persistentVolumeClaimRetentionPolicy`` (retained by default). Credentials Secrets are
generated once and never overwritten. Everything is read from the cache except Secrets,
which are only ever read by name.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from appstack.api.appstack import AppStackSpec, Component, Middleware
from appstack.api.graph import blocked_by, start_order, teardown_order
from appstack.controllers.appstack import desired
from appstack.controllers.children import (
    ChildWriter,
    Problem,
    condition,
    controlled_by,
    describe_validation,
    now_rfc3339,
    previous_conditions,
)
from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    SECRET,
    SERVICE,
    STATEFUL_SET,
    Resource,
)

APP_STACK = Resource("appstack.dev", "v1", "AppStack", "appstacks")
FINALIZER = "appstack.dev/teardown"
CHILD_KINDS = {
    "Deployment": DEPLOYMENT,
    "Service": SERVICE,
    "StatefulSet": STATEFUL_SET,
    "ConfigMap": CONFIG_MAP,
    "EndpointSlice": ENDPOINT_SLICE,
}


def _member(
    base: dict[str, str], ok: bool, count: str, progress: str, ready_message: str = "ready"
) -> dict[str, Any]:
    """One entry of ``status.members``."""
    return {
        **base,
        "ready": count,
        "state": "Ready" if ok else "Progressing",
        "message": ready_message if ok else progress,
    }


def _failed_if(member: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """A member whose children were rejected is Failed, with the reason."""
    if not problems:
        return member
    return {**member, "state": "Failed", "message": f"{problems[0].reason}: {problems[0].message}"}


def desired_member(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("labels", {}).get(desired.MEMBER_LABEL, ""))


def _generation_seen(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    return int(status.get("observedGeneration") or 0) >= int(obj["metadata"].get("generation") or 0)


def statefulset_ready(sts: dict[str, Any] | None) -> tuple[bool, str]:
    if sts is None:
        return False, "0/1"
    status = sts.get("status") or {}
    want = int(sts["spec"].get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    current = status.get("currentRevision") == status.get("updateRevision")
    return _generation_seen(sts) and ready == want and current, f"{ready}/{want}"


def deployment_ready(dep: dict[str, Any] | None) -> tuple[bool, str]:
    if dep is None:
        return False, "0/0"
    status = dep.get("status") or {}
    want = int(dep["spec"].get("replicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    total = int(status.get("replicas") or 0)
    ok = _generation_seen(dep) and available == want and updated == want and total == want
    return ok, f"{available}/{want}"


class AppStackReconciler:
    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        self.client = client
        self.cache = cache
        self.children = ChildWriter(client, cache, recorder, APP_STACK)

    async def reconcile(self, request: Request) -> Result | None:
        stack = self.cache.get(APP_STACK, request.key)
        if stack is None:
            return None
        finalizers = list(stack["metadata"].get("finalizers") or [])
        if stack["metadata"].get("deletionTimestamp"):
            return await self._teardown(stack, finalizers) if FINALIZER in finalizers else None
        if FINALIZER not in finalizers:
            await self._set_finalizers(stack, [*finalizers, FINALIZER])
        try:
            spec = AppStackSpec.model_validate(stack.get("spec") or {})
        except ValidationError as error:
            problem = Problem("InvalidSpec", describe_validation(error))
            await self.children.report(stack, problem)
            await self.children.write_status(stack, self._status(stack, [], problem))
            return None

        middleware = {m.name: m for m in spec.middleware or []}
        components = {c.name: c for c in spec.components}
        edges = {c.name: c.dependencies() for c in spec.components}
        wanted: set[tuple[str, str]] = set()
        ready: set[str] = set()
        members: list[dict[str, Any]] = []
        problems: list[Problem] = []
        for wave in start_order(edges) if edges else []:
            for name in wave:
                seen = len(problems)
                if name in middleware:
                    member = await self._middleware(stack, middleware[name], wanted, problems)
                else:
                    waiting = blocked_by(name, edges, ready)
                    member = await self._component(
                        stack,
                        components[name],
                        middleware,
                        waiting=waiting,
                        wanted=wanted,
                        problems=problems,
                    )
                if member["state"] == "Ready":
                    ready.add(name)
                members.append(_failed_if(member, problems[seen:]))
        for name, mw in middleware.items():  # middleware nobody depends on
            if all(m["name"] != name for m in members):
                seen = len(problems)
                member = await self._middleware(stack, mw, wanted, problems)
                members.append(_failed_if(member, problems[seen:]))
        await self._prune(stack, wanted)
        first = problems[0] if problems else None
        if first is not None:
            await self.children.report(stack, first)
        await self.children.write_status(stack, self._status(stack, members, first))
        return Result(requeue=True) if first is not None else None

    # ----------------------------------------------------------------------- members
    async def _sync_all(
        self,
        stack: dict[str, Any],
        objects: list[dict[str, Any] | None],
        wanted: set[tuple[str, str]],
        problems: list[Problem],
    ) -> dict[str, dict[str, Any] | None]:
        out: dict[str, dict[str, Any] | None] = {}
        for obj in objects:
            if obj is None:
                continue
            wanted.add((obj["kind"], obj["metadata"]["name"]))
            current, problem = await self.children.sync(stack, CHILD_KINDS[obj["kind"]], obj)
            if problem is not None:
                problems.append(problem)
            out[obj["kind"]] = current
        return out

    async def _middleware(
        self,
        stack: dict[str, Any],
        mw: Middleware,
        wanted: set[tuple[str, str]],
        problems: list[Problem],
    ) -> dict[str, Any]:
        base = {"name": mw.name, "kind": f"Middleware/{mw.type}"}
        if mw.external is not None:
            synced = await self._sync_all(
                stack, list(desired.external(stack, mw)), wanted, problems
            )
            ok = synced.get("Service") is not None
            where = f"external {mw.external.host}:{mw.external.port}"
            return _member(base, ok, "1/1" if ok else "0/1", where, ready_message=where)
        problem = await self._ensure_credentials(stack, mw)
        if problem is not None:
            problems.append(problem)
        synced = await self._sync_all(
            stack,
            [*desired.managed_services(stack, mw), desired.stateful_set(stack, mw)],
            wanted,
            problems,
        )
        ok, count = statefulset_ready(synced.get("StatefulSet"))
        return _member(base, ok, count, "waiting for the StatefulSet's pods")

    async def _component(
        self,
        stack: dict[str, Any],
        c: Component,
        middleware: dict[str, Middleware],
        *,
        waiting: list[str],
        wanted: set[tuple[str, str]],
        problems: list[Problem],
    ) -> dict[str, Any]:
        base = {"name": c.name, "kind": "Component"}
        secrets_hash = None if waiting else await self._secrets_hash(stack, c, middleware)
        objects = [
            desired.config_map(stack, c),
            desired.deployment(stack, c, middleware, secrets_hash),
            desired.component_service(stack, c),
        ]
        if waiting:
            # Hold creation and updates alike; keep what exists so nothing is pruned.
            for obj in objects:
                if obj is not None:
                    wanted.add((obj["kind"], obj["metadata"]["name"]))
            current = self.cache.get(
                DEPLOYMENT, f"{stack['metadata']['namespace']}/{stack['metadata']['name']}-{c.name}"
            )
            return {
                **base,
                "ready": deployment_ready(current)[1],
                "state": "WaitingForDependencies",
                "message": f"waiting for {', '.join(waiting)}",
            }
        synced = await self._sync_all(stack, objects, wanted, problems)
        ok, count = deployment_ready(synced.get("Deployment"))
        return _member(base, ok, count, "rolling out")

    async def _secrets_hash(
        self, stack: dict[str, Any], c: Component, middleware: dict[str, Middleware]
    ) -> str | None:
        """A digest of the Secrets the component reads: when one changes, its pods roll."""
        names = desired.used_secrets(c, middleware)
        if not names:
            return None
        digest = hashlib.sha256()
        for name in names:
            try:
                secret = await self.client.get(SECRET, name, stack["metadata"]["namespace"])
                data = secret.get("data") or {}
            except errors.NotFound:
                data = {"<missing>": ""}
            digest.update(json.dumps([name, data], sort_keys=True).encode())
        return digest.hexdigest()[:16]

    async def _ensure_credentials(self, stack: dict[str, Any], mw: Middleware) -> Problem | None:
        secret = desired.credentials(stack, mw)
        meta = secret["metadata"]
        try:
            current = await self.client.get(SECRET, meta["name"], meta["namespace"])
        except errors.NotFound:
            try:
                await self.client.create(SECRET, secret)
            except errors.AlreadyExists:
                return None
            await self.children.recorder.event(
                stack, "Normal", "Created", f"Created Secret {meta['name']} (credentials)"
            )
            return None
        if not controlled_by(current, stack):
            return Problem(
                "SecretConflict",
                f"Secret {meta['name']} already exists and is not managed by this AppStack",
            )
        return None  # generated once, never overwritten

    async def _prune(self, stack: dict[str, Any], wanted: set[tuple[str, str]]) -> None:
        uid = stack["metadata"]["uid"]
        for kind, res in CHILD_KINDS.items():
            for obj in self.cache.by_index(res, "controller-uid", uid):
                name = obj["metadata"]["name"]
                if (kind, name) not in wanted:
                    await self.client.delete(
                        res, name, obj["metadata"]["namespace"], uid=obj["metadata"]["uid"]
                    )
                    await self.children.recorder.event(
                        stack, "Normal", "Pruned", f"Deleted {kind} {name}: no longer in spec"
                    )

    # ---------------------------------------------------------------------- teardown
    async def _set_finalizers(self, stack: dict[str, Any], finalizers: list[str]) -> None:
        meta = stack["metadata"]
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        try:  # the resourceVersion makes it fail rather than drop someone else's finalizer
            await self.client.patch(APP_STACK, meta["name"], patch, namespace=meta["namespace"])
        except errors.Conflict:
            pass  # the cache will bring the newer object and another reconcile
        except errors.NotFound:
            pass

    def _owned(self, stack: dict[str, Any]) -> list[tuple[Resource, dict[str, Any]]]:
        uid = stack["metadata"]["uid"]
        return [
            (res, obj)
            for res in CHILD_KINDS.values()
            for obj in self.cache.by_index(res, "controller-uid", uid)
        ]

    async def _teardown(self, stack: dict[str, Any], finalizers: list[str]) -> Result | None:
        try:
            spec = AppStackSpec.model_validate(stack.get("spec") or {})
            edges = {c.name: c.dependencies() for c in spec.components}
            waves = teardown_order(edges)
        except (ValidationError, ValueError):
            waves = []  # an invalid spec has no order: everything goes at once
        owned = self._owned(stack)
        for wave in [*waves, None]:
            batch = [
                (res, obj) for res, obj in owned if wave is None or desired_member(obj) in wave
            ]
            if not batch:
                continue
            for res, obj in batch:
                if not obj["metadata"].get("deletionTimestamp"):
                    await self.client.delete(
                        res,
                        obj["metadata"]["name"],
                        obj["metadata"]["namespace"],
                        uid=obj["metadata"]["uid"],
                    )
            members = sorted({desired_member(obj) for _, obj in batch})
            await self.children.recorder.event(
                stack, "Normal", "TearingDown", f"deleting {', '.join(members)}", action="Delete"
            )
            return Result(requeue_after=0.5)  # wait for this wave to be gone
        await self._set_finalizers(stack, [f for f in finalizers if f != FINALIZER])
        return None

    # ------------------------------------------------------------------------ status
    def _status(
        self, stack: dict[str, Any], members: list[dict[str, Any]], problem: Problem | None
    ) -> dict[str, Any]:
        ready = sum(1 for m in members if m["state"] == "Ready")
        total = len(members)
        waiting = [m["name"] for m in members if m["state"] != "Ready"]
        if problem is not None:
            state = ("False", problem.reason, problem.message)
        elif total and ready == total:
            state = ("True", "Ready", f"all {total} members are ready")
        else:
            state = (
                "False",
                "Progressing",
                f"{ready}/{total} ready; waiting: {', '.join(waiting)}",
            )
        generation = stack["metadata"].get("generation")
        stamp = {
            "generation": generation,
            "previous": previous_conditions(stack),
            "now": now_rfc3339(),
        }
        return {
            "observedGeneration": generation,
            "readyMembers": f"{ready}/{total}",
            "members": members,
            "conditions": [
                condition("Ready", *state, **stamp),
                condition(
                    "Progressing",
                    "True" if waiting and problem is None else "False",
                    "RollingOut" if waiting else "Complete",
                    "members are starting" if waiting else "every member is ready",
                    **stamp,
                ),
                condition(
                    "Degraded",
                    "True" if problem else "False",
                    problem.reason if problem else "AsExpected",
                    problem.message if problem else "no problems",
                    **stamp,
                ),
            ],
        }
