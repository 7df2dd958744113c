"""A controller as an operator sees it: :class:`Registration` — its reconciler (whose class
declares the kind, what it owns and watches), its RBAC rules, and how it is wired into a
manager (:meth:`Registration.setup`).

An operator lists its registrations (appstack: :data:`appstack.controllers.registry.ALL`;
a scaffolded project: its ``controllers`` registry); the operator's assembly
(:func:`appstack.sdk.operator.run_operator`), the generated CRDs and RBAC and the tests
iterate over that list, so a new kind is registered in one line. The RBAC rules are the
ones given, or derived from the reconciler's declaration (:func:`appstack.sdk.rbac.derived_rules`).
Every controller resyncs: each object is reconciled again every sync period
(``--sync-period``, default :data:`~appstack.core.duration.DEFAULT_SYNC_PERIOD`), or more
often if the kind needs it (:attr:`Registration.resync`).

A registration also carries what the tools looking at the kind from outside its reconciler
read (:mod:`.observers`; all optional, none used by :meth:`Registration.setup`): its ready
condition, its own gauges, its status view, its dashboard panels and its alerts. The operator's
metrics, dashboards, health checks and command line iterate over the registrations, so
what a kind is known by lives with its controller, not in lists keyed by kind names.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from appstack.core.duration import DEFAULT_SYNC_PERIOD, parse_duration
from appstack.core.resource import Resource
from appstack.runtime.builder import Builder, Mapper
from appstack.runtime.cache import NAMESPACES
from appstack.runtime.controller import Controller
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.kit.namespaces import shared_gate
from appstack.sdk.kit.objects import ObjectReconciler, object_rules
from appstack.sdk.kit.observers import Alert, Gauges, Panels, StatusView
from appstack.sdk.kit.parts import Manifest
from appstack.sdk.kit.policies import AdmissionPolicy, KindPolicy, PolicyError, check
from appstack.sdk.kit.reconciler import KindReconciler
from appstack.sdk.kit.references import referrers
from appstack.sdk.kit.webhooks import Declaration, KindWebhook, Mutator, Validator
from appstack.sdk.rbac import Rule, derived_rules

Children = Callable[[KubeObject, Any], list[Manifest]]


@dataclass(frozen=True)
class Registration:
    """One controller: its kind (model, CRD names), reconciler, RBAC rules (None: derived
    from the reconciler's declaration), and the pure function from an object and its
    validated spec to the children it wants (for ``render``-like previews; optional).

    What outside tools read of its objects (:mod:`.observers`): ``ready_condition``, the
    condition type whose ``True`` means an object is up (default ``Ready``); ``gauges``,
    its own metric families and their samples from a cached object; ``status_view``, how a
    command line shows an object; ``dashboard``, the panels of its own metrics;
    ``alerts``, Prometheus alerting rules over them (the operator's PrometheusRule:
    :func:`~appstack.sdk.kit.kind_metrics.alert_rules`). Each is optional; a kind declares
    what it has.

    ``webhooks``: admission webhooks of its kind (:class:`~.webhooks.Validator`,
    :class:`~.webhooks.Mutator`), served by the operator when any registration declares
    one (:func:`appstack.sdk.operator.assemble`).

    ``policies``: ValidatingAdmissionPolicies of its kind (or of a kind it owns, watches or
    refers to: :class:`~.policies.AdmissionPolicy`), evaluated by the API server, generated
    into the install; checked here, when the registration is made."""

    name: str
    reconciler: type[KindReconciler[Any]] | type[ObjectReconciler]
    rbac_rules: Sequence[Rule] | None = None
    children: Children | None = None
    share: float = 1.0  # of the operator's --concurrency
    # At most this many seconds between looks at every object, whatever the sync period
    # (for inputs that are not watched; None: the sync period alone).
    resync: float | None = None
    ready_condition: str = "Ready"
    gauges: Gauges | None = None
    status_view: StatusView | None = None
    dashboard: Panels | None = None
    alerts: tuple[Alert, ...] = ()
    # admission webhooks of its kind, served by the operator (:mod:`.webhooks`)
    webhooks: tuple[Validator | Mutator, ...] = ()
    # ValidatingAdmissionPolicies of its kind, evaluated by the API server (:mod:`.policies`)
    policies: tuple[AdmissionPolicy, ...] = ()

    def __post_init__(self) -> None:
        for i, policy in enumerate(self.policies):
            resource = self._policy_resource(policy)
            check(policy, f"{resource.kind} (registration {self.name})", f"policies[{i}]")

    def _policy_resource(self, policy: AdmissionPolicy) -> Resource:
        """The kind ``policy`` is about: its ``resource``, which the controller must
        reconcile, own, watch or refer to (default: its primary)."""
        if policy.resource is None:
            return self.primary
        known = [
            self.primary,
            *self.owns,
            *(r for r, _ in self.reconciler.watches),
            *getattr(self.reconciler, "references", ()),
        ]
        wanted = policy.resource
        if not any((r.group, r.plural) == (wanted.group, wanted.plural) for r in known):
            raise PolicyError(
                f"admission policy of {wanted.kind} (registration {self.name}): "
                f"resource: the controller neither reconciles, owns, watches nor refers to "
                f"{wanted.plural}"
            )
        return wanted

    @property
    def kind(self) -> CustomKind:
        """The project's kind the reconciler reconciles (its ``kind``); a TypeError for a
        controller of a kind the project does not declare (:attr:`custom` is False: see
        :attr:`primary`)."""
        if not issubclass(self.reconciler, KindReconciler):
            raise TypeError(
                f"controller {self.name} reconciles {self.primary.kind} objects, not a kind "
                "this project declares: read its primary"
            )
        return self.reconciler.kind

    @property
    def custom(self) -> bool:
        """Whether it reconciles one of the project's own kinds (a
        :class:`~appstack.sdk.kit.reconciler.KindReconciler`), not any kind
        (:class:`~appstack.sdk.kit.objects.ObjectReconciler`)."""
        return issubclass(self.reconciler, KindReconciler)

    @property
    def primary(self) -> Resource:
        """The kind of the objects it reconciles, whoever declares it."""
        if issubclass(self.reconciler, KindReconciler):
            return self.reconciler.kind.resource
        return self.reconciler.primary

    @property
    def declared_webhooks(self) -> list[KindWebhook]:
        """Its :attr:`webhooks`, each with the kind it is about (and the model that parses
        its objects, for the project's own kind)."""
        kind = self.kind if self.custom else None
        return [KindWebhook(w, self.primary, kind) for w in self.webhooks]

    @property
    def declared_policies(self) -> list[KindPolicy]:
        """Its :attr:`policies`, each with the kind it is about."""
        return [KindPolicy(p, self._policy_resource(p)) for p in self.policies]

    @property
    def owns(self) -> tuple[Resource, ...]:
        """The kinds of the children the reconciler writes (its ``owns``)."""
        return self.reconciler.owns

    @property
    def rules(self) -> list[Rule]:
        """Its RBAC rules: as given, or derived from what its reconciler declares (its
        kind, the kinds it owns, watches and refers to; its finalizer)."""
        if self.rbac_rules is not None:
            return list(self.rbac_rules)
        if not issubclass(self.reconciler, KindReconciler):
            return object_rules(self.reconciler)
        watched = [resource for resource, _ in self.reconciler.watches]
        return derived_rules(
            self.kind,
            owns=self.owns,
            watches=[*watched, *self.reconciler.references],
            finalizer=self.reconciler.finalizer is not None,
        )

    def workers(self, concurrency: int) -> int:
        """This controller's workers: its ``share`` of the operator's ``concurrency``, at least
        1."""
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
        identity: OperatorIdentity,
        concurrency: int | None = None,
        sync_period: float | None = None,
        enable_all_namespaces: bool = False,
        **options: Any,
    ) -> Controller:
        """Wire the reconciler into ``manager``: watch the kind, the children it owns, the
        objects it watches and the objects its spec names (``references``), register its
        cache indexes, ``concurrency`` workers (default: its share of 4), every object
        reconciled again every :meth:`resync_period` of ``sync_period`` seconds (default:
        10 minutes), only in the namespaces a platform team enabled (every one with
        ``enable_all_namespaces``: :mod:`.namespaces`, shared by the controllers of one
        manager); ``options`` go to the reconciler (e.g. the AppStack's ``external_ips``).
        What the cache keeps of each kind is not set here but by the operator's assembly,
        for all its controllers at once (:func:`appstack.sdk.operator.wire`,
        :mod:`.caching`)."""
        gate = shared_gate(
            manager.client,
            manager.cache,
            label=identity.enabled_label,
            enable_all=enable_all_namespaces,
        )
        reconciler = self.reconciler(manager.client, manager.cache, recorder, **options)
        reconciler.namespaces = gate
        if isinstance(reconciler, KindReconciler):
            reconciler.not_enabled_message = identity.not_enabled_message
        referenced = self.reconciler.references
        for resource, indexes in self.reconciler.indexers.items():
            for index, func in indexes.items():
                manager.cache.add_indexer(resource, index, func)
        primary = self.primary
        builder = Builder(manager, self.name).for_(
            primary,
            status_changes=self.reconciler.status_changes,
            filter=self.reconciler.filter,
        )
        for resource in self.owns:
            builder = builder.owns(resource)
        for resource, mapper in self.reconciler.watches:
            builder = builder.watches(resource, _bound(mapper, reconciler))
        for resource in referenced:
            builder = builder.watches(resource, referrers(manager.cache, primary, resource))
        if gate.watching:  # a namespace labelled (or not any more): its objects, at once
            builder = builder.watches(NAMESPACES, gate.mapper(primary))
        return (
            builder.with_concurrency(concurrency or self.workers(4))
            .with_resync(self.resync_period(sync_period))
            .complete(reconciler)
        )


def _bound(mapper: Mapper, reconciler: object) -> Mapper:
    """A ``watches`` mapper that is a method of the reconciler's class (``def
    every_source(self, obj)``, listed in the class body), bound to the running reconciler
    so it reads ``self.cache``; any other mapper as it is."""
    method = getattr(type(reconciler), getattr(mapper, "__name__", ""), None)
    if inspect.isfunction(mapper) and method is mapper:
        return cast(Mapper, getattr(reconciler, mapper.__name__))
    return mapper


def with_webhooks(
    registrations: Sequence[Registration], modules: Sequence[str]
) -> list[Registration]:
    """``registrations`` with the admission webhooks of each of ``modules`` added to the
    registration of its kind (a scaffolded project's ``WEBHOOK_MODULES``, the modules
    ``appstack create webhook`` writes): a module names its kind as ``KIND`` (a
    :class:`~appstack.sdk.kind.CustomKind`, or the ``Resource`` of a kind the project does
    not declare) and its :class:`~.webhooks.Validator` and :class:`~.webhooks.Mutator`
    declarations as ``WEBHOOKS``. ValueError, naming the module, when it lacks either or
    no registration reconciles its kind."""
    added: dict[Resource, list[Declaration]] = {}
    for name in modules:
        module = importlib.import_module(name)
        kind, declared = getattr(module, "KIND", None), getattr(module, "WEBHOOKS", None)
        resource = kind.resource if isinstance(kind, CustomKind) else kind
        if not isinstance(resource, Resource) or not isinstance(declared, tuple | list):
            raise ValueError(
                f"{name}: a webhook module names its kind as KIND and its Validator and "
                "Mutator declarations as WEBHOOKS"
            )
        if not any(r.primary == resource for r in registrations):
            raise ValueError(
                f"{name}: no controller reconciles {resource.kind} ({resource.api_version}): "
                "webhooks are served with the controller of their kind"
            )
        added.setdefault(resource, []).extend(declared)
    return [
        replace(r, webhooks=(*r.webhooks, *added[r.primary])) if r.primary in added else r
        for r in registrations
    ]
