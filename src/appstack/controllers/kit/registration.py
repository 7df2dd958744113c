"""A controller as the rest of appstack sees it: :class:`Registration`.

Each controller package exports one (``CONTROLLER``) and
:data:`appstack.controllers.registry.ALL` lists them; the operator process, the generated
CRDs and RBAC, ``appstack render``, the CLI help and the e2e fixtures iterate over that
list, so a new kind is registered in one line. Every controller resyncs: each object is
reconciled again every sync period (``appstack run --sync-period``, default
:data:`~appstack.core.duration.DEFAULT_SYNC_PERIOD`), or more often if the kind needs it
(:attr:`Registration.resync`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from appstack.controllers.kit.namespaces import NAMESPACES, shared_gate
from appstack.controllers.kit.reconciler import KindReconciler
from appstack.controllers.util.kubeobject import KubeObject
from appstack.controllers.util.meta import child_selector
from appstack.controllers.util.parts import Manifest
from appstack.controllers.util.references import referrers
from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration
from appstack.core.resource import Resource
from appstack.runtime.builder import Builder
from appstack.runtime.controller import Controller
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.sdk.kind import CustomKind
from appstack.sdk.rbac import Rule

Children = Callable[[KubeObject, Any], list[Manifest]]


@dataclass(frozen=True)
class Registration:
    """One controller: its kind (model, CRD names), reconciler, RBAC rules, and the pure
    function from an object and its validated spec to the children it wants."""

    name: str
    reconciler: type[KindReconciler[Any]]
    rbac_rules: Sequence[Rule]
    children: Children
    share: float = 1.0  # of the operator's --concurrency
    # At most this many seconds between looks at every object, whatever the sync period
    # (for inputs that are not watched; None: the sync period alone).
    resync: float | None = None

    @property
    def kind(self) -> CustomKind:
        return self.reconciler.kind

    @property
    def owns(self) -> tuple[Resource, ...]:
        return self.reconciler.owns

    def workers(self, concurrency: int) -> int:
        return max(1, int(concurrency * self.share))

    def resync_period(self, sync_period: float | None = None) -> float:
        """Seconds between looks at every object: the sync period (default 10 minutes),
        or the kind's own :attr:`resync` if that is shorter."""
        period = parse_duration(DEFAULT_SYNC_PERIOD) if sync_period is None else sync_period
        return period if self.resync is None else min(period, self.resync)

    def setup(
        self,
        manager: Manager,
        recorder: EventRecorder,
        *,
        concurrency: int | None = None,
        sync_period: float | None = None,
        enable_all_namespaces: bool = False,
        **options: Any,
    ) -> Controller:
        """Wire the reconciler into ``manager``: watch the kind, the children it owns and
        the objects it watches (cached only when labelled as ours; of a child kind, an
        object none of the kinds owning it controls is cached as metadata only:
        :meth:`~appstack.runtime.cache.Cache.keep_children_of`), the objects its spec
        names (``references``), register its cache indexes, ``concurrency``
        workers (default: its share of 4), every object reconciled again every
        :meth:`resync_period` of ``sync_period`` seconds (default: 10 minutes), only in
        the namespaces a platform team enabled (every one with
        ``enable_all_namespaces``: :mod:`.namespaces`, shared by the controllers of one
        manager); ``options`` go to the reconciler (e.g. the AppStack's ``external_ips``)."""
        gate = shared_gate(manager.client, manager.cache, enable_all=enable_all_namespaces)
        watched, referenced = self.reconciler.watches, self.reconciler.references
        selectors = self.reconciler.selectors
        for resource in (*self.owns, *(resource for resource, _ in watched)):
            if resource not in referenced:  # a user's objects are not labelled as ours
                selector = selectors.get(resource) or child_selector(resource.kind)
                manager.cache.set_label_selector(resource, selector)
        for resource in self.owns:  # of the others labelled ours, only their metadata
            manager.cache.keep_children_of(resource, self.kind.resource)
        for resource in {resource for resource, _ in watched} | set(referenced):
            manager.cache.keep_everything(resource)  # read though we do not control them
        for resource, transform in self.reconciler.transforms.items():
            manager.cache.set_transform(resource, transform)
        for resource, indexes in self.reconciler.indexers.items():
            for index, func in indexes.items():
                manager.cache.add_indexer(resource, index, func)
        builder = Builder(manager, self.name).for_(
            self.kind.resource, status_changes=self.reconciler.status_changes
        )
        for resource in self.owns:
            builder = builder.owns(resource)
        for resource, mapper in watched:
            builder = builder.watches(resource, mapper)
        for resource in referenced:
            builder = builder.watches(
                resource, referrers(manager.cache, self.kind.resource, resource)
            )
        if gate.watching:  # a namespace labelled (or not any more): its objects, at once
            builder = builder.watches(NAMESPACES, gate.mapper(self.kind.resource))
        reconciler = self.reconciler(manager.client, manager.cache, recorder, **options)
        reconciler.namespaces = gate
        return (
            builder.with_concurrency(concurrency or self.workers(4))
            .with_resync(self.resync_period(sync_period))
            .complete(reconciler)
        )
