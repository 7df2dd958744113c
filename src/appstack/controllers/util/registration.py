"""A controller as the rest of appstack sees it: :class:`Registration`.

Each controller package exports one (``CONTROLLER``) and
:data:`appstack.controllers.registry.ALL` lists them; the operator process, the generated
CRDs and RBAC, ``appstack render``, the CLI help and the e2e fixtures iterate over that
list, so a new kind is registered in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from appstack.api.kind import CustomKind
from appstack.controllers.util.meta import CHILD_SELECTOR
from appstack.controllers.util.rbac import Rule
from appstack.controllers.util.reconciler import KindReconciler
from appstack.core.resource import Resource
from appstack.runtime.builder import Builder
from appstack.runtime.controller import Controller
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager

Children = Callable[[dict[str, Any], Any], list[dict[str, Any]]]


@dataclass(frozen=True)
class Registration:
    """One controller: its kind (model, CRD names), reconciler, RBAC rules, and the pure
    function from an object and its validated spec to the children it wants."""

    name: str
    reconciler: type[KindReconciler[Any]]
    rbac_rules: Sequence[Rule]
    children: Children
    share: float = 1.0  # of the operator's --concurrency
    resync: float | None = None  # seconds between looks at every object (None: never)

    @property
    def kind(self) -> CustomKind:
        return self.reconciler.kind

    @property
    def owns(self) -> tuple[Resource, ...]:
        return self.reconciler.owns

    def workers(self, concurrency: int) -> int:
        return max(1, int(concurrency * self.share))

    def setup(
        self,
        manager: Manager,
        recorder: EventRecorder,
        *,
        concurrency: int | None = None,
        resync: float | None = None,
        **options: Any,
    ) -> Controller:
        """Wire the reconciler into ``manager``: watch the kind, the children it owns and
        the objects it watches (cached only when labelled as ours), ``concurrency``
        workers (default: its share of 4); ``options`` go to the reconciler (e.g. the
        AppStack's ``external_ips``)."""
        watched = self.reconciler.watches
        for resource in (*self.owns, *(resource for resource, _ in watched)):
            manager.cache.set_label_selector(resource, CHILD_SELECTOR)
        for resource, transform in self.reconciler.transforms.items():
            manager.cache.set_transform(resource, transform)
        builder = Builder(manager, self.name).for_(
            self.kind.resource, status_changes=self.reconciler.status_changes
        )
        for resource in self.owns:
            builder = builder.owns(resource)
        for resource, mapper in watched:
            builder = builder.watches(resource, mapper)
        return (
            builder.with_concurrency(concurrency or self.workers(4))
            .with_resync(self.resync if resync is None else resync)
            .complete(self.reconciler(manager.client, manager.cache, recorder, **options))
        )
