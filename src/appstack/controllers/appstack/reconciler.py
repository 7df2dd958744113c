"""Reconcile one AppStack: middleware first, then components in dependency order.

A component's children are created — and later updated — only when everything it depends
on (``dependsOn`` and ``uses``) is *ready*: managed middleware when its StatefulSet has all
replicas ready at the current revision, external middleware once its Service exists (a
third-party service given by URL at once; its Secret, when missing or short of a key, is
``CredentialsNotFound`` on its consumers), a
component when its Deployment has every replica updated and available. Until then the
member is ``WaitingForDependencies`` and its status names what it waits for.

Deletion: a finalizer (``<group>/teardown``) tears the stack down (:mod:`.teardown`) in *reverse*
dependency order — the consumers first, the middleware they use last — one wave at a
time, and is removed once nothing is left (also when some children were already gone).

Children no longer wanted (a member removed from the spec, a component that lost its
ports or config) are deleted; managed-middleware volumes follow the StatefulSet's
``persistentVolumeClaimRetentionPolicy`` (retained by default). Credentials Secrets are
generated once and never overwritten by us (the child writer's ``ensure_once``); the
version of a member's credentials (uid and resourceVersion, never the data) is on its
StatefulSet's and its consumers' pod templates, so a Secret the user changes (a rotated
password) rolls the instance first and its consumers once it is ready again. Everything is
read from the cache except Secrets and the ConfigMaps it does not own, which are read by name,
each at most once per reconcile (the cache keeps only their metadata: their events wake the
stacks naming them). A missing Secret is not polled: its creation wakes the stack.
"""

from __future__ import annotations

from typing import Any, ClassVar

from appstack.api.appstack import AppStack, AppStackSpec, AppStackStatus, MemberStatus
from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.api.graph import blocked_by, start_order
from appstack.api.kind import group_key
from appstack.api.security import PodSecurityLevel
from appstack.controllers.appstack import addresses, desired, labels, middleware, status
from appstack.controllers.appstack.addresses import ExternalIPPolicy
from appstack.controllers.appstack.connections import (
    credentials_secret,
    third_party_credentials_missing,
)
from appstack.controllers.appstack.references import referenced
from appstack.controllers.appstack.teardown import FINALIZER_NAME, teardown
from appstack.controllers.util import podsecurity
from appstack.controllers.util.workloads import (
    deployment_ready,
    replica_failure,
    statefulset_ready,
)
from appstack.runtime import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    PDB,
    POD,
    SECRET,
    SERVICE,
    STATEFUL_SET,
    Cache,
    Client,
    EventRecorder,
    IndexFunc,
    NotFound,
    Resource,
    Result,
    controller_key,
)
from appstack.sdk import (
    POD_INDEXERS,
    REFERENCES,
    KindReconciler,
    KubeObject,
    Manifest,
    Problem,
    Synced,
    pod_mapper,
    pod_problem,
    pods_of,
    recheck_after,
)

Wanted = set[tuple[str, str]]  # (kind, name) of every child the spec still wants
Read = dict[str, dict[str, Any] | None]  # Secrets read by name in this reconcile (None: missing)

# Problems that a watch ends (the referenced Secret appears or changes): not retried.
_WATCHED = frozenset({"CredentialsNotFound"})


class AppStackReconciler(KindReconciler[AppStackSpec]):
    """AppStack → members started wave by wave → unwanted children pruned → status."""

    kind = AppStack.KIND
    owns = (DEPLOYMENT, SERVICE, STATEFUL_SET, CONFIG_MAP, ENDPOINT_SLICE, PDB)
    watches = ((POD, pod_mapper(labels.STACK_LABEL)),)
    # Existing ConfigMaps its components mount, Secrets they read: a change wakes the stack.
    # Listed and watched as metadata only (never a Secret's data, never a page of every
    # ConfigMap's content: issue #28 P1.2); read by name when their content is needed. The
    # ConfigMaps it writes are a cache of their own, in full but only those labelled ours.
    references = (CONFIG_MAP.metadata_only(), SECRET.metadata_only())
    indexers: ClassVar[dict[Resource, dict[str, IndexFunc]]] = {
        **POD_INDEXERS,
        AppStack.KIND.resource: {REFERENCES: referenced},
    }
    finalizer = group_key(FINALIZER_NAME)

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        *,
        external_ips: ExternalIPPolicy | None = None,
    ) -> None:
        super().__init__(client, cache, recorder)
        self.external_ips = external_ips or ExternalIPPolicy()

    def invalid_status(self, obj: KubeObject, problem: Problem) -> AppStackStatus:
        return status.from_members(obj, [], problem)

    async def cleanup(self, obj: KubeObject) -> Result | None:
        return await teardown(self.writer, self.cache, self.owns, obj)

    async def apply(self, obj: KubeObject, spec: AppStackSpec) -> Result | None:
        middleware_ = {m.name: m for m in spec.middleware or []}
        components = {c.name: c for c in spec.components}
        lookup: desired.Members = {**middleware_, **components}
        edges = {c.name: c.dependencies() for c in spec.components}
        wanted: Wanted = set()
        ready: set[str] = set()
        members: list[MemberStatus] = []
        problems: list[Problem] = []
        stuck: list[Problem] = []  # members whose pods cannot start
        rechecks: list[float] = []  # when to look again at containers not ready yet
        secrets: Read = {}  # read once per reconcile, by every member that uses them
        level = await podsecurity.level(
            self.namespaces, obj["metadata"]["namespace"], spec.pod_security
        )
        for wave in start_order(edges) if edges else []:
            for name in wave:
                seen = len(problems)
                if name in middleware_:
                    member = await self._middleware(
                        obj, middleware_[name], wanted, problems, secrets
                    )
                else:
                    member = await self._component(
                        obj,
                        components[name],
                        lookup,
                        waiting=blocked_by(name, edges, ready),
                        wanted=wanted,
                        problems=problems,
                        level=level,
                        secrets=secrets,
                    )
                if member.state == "Ready":
                    ready.add(name)
                member = self._pods(obj, member, stuck, rechecks)
                members.append(status.failed_if(member, problems[seen:]))
        for name, mw in middleware_.items():  # middleware nobody depends on
            if all(m.name != name for m in members):
                seen = len(problems)
                member = await self._middleware(obj, mw, wanted, problems, secrets)
                member = self._pods(obj, member, stuck, rechecks)
                members.append(status.failed_if(member, problems[seen:]))
        await self._prune(obj, wanted)
        first = problems[0] if problems else None
        if first is not None:
            await self.writer.report(obj, first)
        elif stuck:
            await self.writer.report_new(obj, stuck[0])
        shown = first or (stuck[0] if stuck else None)
        await self.writer.write_status(obj, status.from_members(obj, members, shown))
        # A rejected child is retried with backoff; pods wake us when they change, and so
        # does the Secret a stack waits for (watched: no retry).
        retry = any(p.reason not in _WATCHED for p in problems)
        if retry:
            return Result(requeue=True)
        return Result(requeue_after=min(rechecks)) if rechecks else None

    def _pods(
        self,
        stack: KubeObject,
        entry: MemberStatus,
        stuck: list[Problem],
        rechecks: list[float],
    ) -> MemberStatus:
        """A member still starting, failed with the reason when its pods cannot start
        (``rechecks``: when to look again at a container that is not ready yet)."""
        if entry.state != "Progressing":
            return entry
        meta = stack["metadata"]
        selector = labels.selector(meta["name"], entry.name)
        pods = pods_of(self.cache, meta["namespace"], selector)
        problem = pod_problem(pods)
        recheck = recheck_after(pods)
        if recheck is not None:
            rechecks.append(recheck)
        if problem is None:
            return entry
        stuck.append(Problem(problem.reason, f"{entry.name}: {problem.message}"))
        return status.failed_if(entry, [problem])

    # ----------------------------------------------------------------------- members
    async def _sync(
        self,
        stack: KubeObject,
        objects: list[Manifest],
        wanted: Wanted,
        problems: list[Problem],
    ) -> Synced:
        wanted.update((o["kind"], o["metadata"]["name"]) for o in objects)
        synced, found = await self.writer.sync_all(stack, objects)
        problems += found
        return synced

    async def _middleware(
        self,
        stack: KubeObject,
        mw: Middleware,
        wanted: Wanted,
        problems: list[Problem],
        secrets: Read,
    ) -> MemberStatus:
        base = (mw.name, f"Middleware/{mw.type}")
        if mw.external is not None and mw.external.url is not None:  # nothing to create
            where = f"third-party {mw.external.url}"
            return status.member(base, True, "1/1", where, ready_message=where)
        if mw.external is not None and mw.external.host is not None:
            refused = await addresses.refusal(
                self.external_ips, mw.external.host, self.namespaces.exists
            )
            if refused is not None:  # nothing written for it; a slice it had is pruned
                problems.append(Problem("ExternalAddressRefused", f"{mw.name}: {refused}"))
                return status.member(base, False, "0/1", refused)
            # The Service first: its EndpointSlice is written only into a Service of ours.
            objects = middleware.children(stack, mw)
            ok = (await self._sync(stack, objects[:1], wanted, problems)).one("Service") is not None
            if ok:
                await self._sync(stack, objects[1:], wanted, problems)
            where = f"external {mw.external.host}:{mw.external.port}"
            return status.member(base, ok, "1/1" if ok else "0/1", where, ready_message=where)
        for secret in middleware.generated_secrets(stack, mw):
            current, problem = await self.writer.ensure_once(stack, SECRET, secret, "generated")
            if problem is not None:
                problems.append(problem)
            else:
                secrets[secret["metadata"]["name"]] = current
        name = credentials_secret(stack["metadata"]["name"], mw.name)
        version = desired.secrets_version([(name, secrets[name])]) if name in secrets else None
        objects = middleware.children(stack, mw, version)
        synced = await self._sync(stack, objects, wanted, problems)
        ok, count = statefulset_ready(synced.one("StatefulSet"))
        return status.member(base, ok, count, "waiting for the StatefulSet's pods")

    async def _component(
        self,
        stack: KubeObject,
        c: Component,
        members: desired.Members,
        *,
        waiting: list[str],
        wanted: Wanted,
        problems: list[Problem],
        level: PodSecurityLevel,
        secrets: Read,
    ) -> MemberStatus:
        base = (c.name, "Component")
        secrets_hash = config_version = None
        if not waiting:
            secrets_hash = await self._secrets_hash(stack, c, members, problems, secrets)
            config_version = await self._versions(stack, CONFIG_MAP, desired.used_config_maps(c))
        objects = desired.component_children(
            stack, c, members, secrets_hash, config_version, level=level
        )
        if waiting:
            # Hold creation and updates alike; keep what exists so nothing is pruned.
            wanted.update((o["kind"], o["metadata"]["name"]) for o in objects)
            meta = stack["metadata"]
            current = self.cache.get(DEPLOYMENT, f"{meta['namespace']}/{meta['name']}-{c.name}")
            return status.waiting(base, deployment_ready(current)[1], waiting)
        synced = await self._sync(stack, objects, wanted, problems)
        failure = replica_failure(synced.one("Deployment"))
        if failure is not None:
            problems.append(failure)
        ok, count = deployment_ready(synced.one("Deployment"))
        return status.member(base, ok, count, "rolling out")

    async def _secrets_hash(
        self,
        stack: KubeObject,
        c: Component,
        members: desired.Members,
        problems: list[Problem],
        secrets: Read,
    ) -> str | None:
        """Which versions of the Secrets the component reads: when one changes, its pods
        roll (:func:`.desired.secrets_version`: uid and resourceVersion, never the data).
        A third-party service's Secret that is missing, or lacks a key, is a problem.
        ``secrets``: those already read in this reconcile (more are added)."""
        names = desired.used_secrets(c, members, stack["metadata"]["name"])
        if not names:
            return None
        unread = [n for n in names if n not in secrets]
        secrets.update(await self._read(stack, SECRET, unread) if unread else [])
        found = [(n, secrets[n]) for n in names]
        for used in c.uses or []:
            member = members[used]
            if isinstance(member, Middleware):
                missing = third_party_credentials_missing(member, dict(found))
                if missing is not None:
                    problems.append(Problem("CredentialsNotFound", f"{c.name}: {missing}"))
        return desired.secrets_version(found)

    async def _versions(
        self, stack: KubeObject, resource: Resource, names: list[str]
    ) -> str | None:
        """:func:`.desired.secrets_version` of the named objects (None: no names)."""
        return desired.secrets_version(await self._read(stack, resource, names)) if names else None

    async def _read(
        self, stack: KubeObject, resource: Resource, names: list[str]
    ) -> list[tuple[str, dict[str, Any] | None]]:
        """The named objects of the stack's namespace, read by name (None: missing)."""
        read: list[tuple[str, dict[str, Any] | None]] = []
        for name in names:
            try:
                read.append(
                    (name, await self.client.get(resource, name, stack["metadata"]["namespace"]))
                )
            except NotFound:
                read.append((name, None))
        return read

    async def _prune(self, stack: KubeObject, wanted: Wanted) -> None:
        uid = stack["metadata"]["uid"]
        for resource in self.owns:
            for obj in self.cache.by_index(
                resource, "controller-uid", controller_key(stack["metadata"]["namespace"], uid)
            ):
                if (resource.kind, obj["metadata"]["name"]) not in wanted:
                    await self.writer.prune(stack, resource, obj, "no longer in spec")
