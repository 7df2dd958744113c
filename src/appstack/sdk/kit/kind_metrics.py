"""Metrics about what an operator's users run, not its internals, for every kind it
registers: per object whether the kind's ready condition is True (``<prefix>_object_ready``,
the condition its :class:`~appstack.sdk.kit.registration.Registration` names, e.g. an
EtcdCluster's ``Available``) and the kind's own gauges (its registration's ``gauges``).

Read at scrape time from the manager's cache — no API request, nothing kept between
scrapes — by :class:`KindMetrics`, a Prometheus collector the SDK's assembly
(:func:`appstack.sdk.operator.assemble`) registers for every operator built on it, so a
gauge a scaffolded operator declares reaches its ``/metrics`` as appstack's own do.
:func:`families` and :func:`samples` are pure (appstack's alerts and dashboards, and the
unit tests, read them), as is :func:`alert_rules`, the alerting rules the registrations
declare over those metrics, and :func:`operator_alerts`, those every operator built on the
SDK gets over the runtime's metrics (appstack's PrometheusRule, a scaffolded project's
``config/prometheus/alerts.yaml``: :func:`alerting_rules` is both). Nothing here names a kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from appstack.runtime.cache import Cache
from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.observers import Alert, Sample
from appstack.sdk.kit.registration import Registration
from appstack.sdk.options import OperatorOptions

__all__ = [
    "KindMetrics",
    "alert_rules",
    "alerting_rules",
    "families",
    "operator_alerts",
    "ready_metric",
    "samples",
]


def ready_metric(identity: OperatorIdentity) -> str:
    """The readiness gauge's name: ``<metric prefix>_object_ready``."""
    return f"{identity.metric_prefix}_object_ready"


def _ready_help(controllers: Sequence[Registration]) -> str:
    """The readiness gauge's help, naming the kinds whose ready condition is not Ready."""
    others = [
        f"{c.kind.kind}: {c.ready_condition}"
        for c in controllers
        if c.custom and c.ready_condition != "Ready"
    ]
    which = f" ({', '.join(others)})" if others else ""
    return f"1 if the object's Ready condition{which} is True"


def families(controllers: Sequence[Registration], identity: OperatorIdentity) -> dict[str, str]:
    """name → help of every gauge :func:`samples` may give: the readiness of every object,
    then each kind's own families. A name two kinds both declare is refused."""
    found = {ready_metric(identity): _ready_help(controllers)}
    for controller in controllers:
        for name, text in (controller.gauges.families if controller.gauges else {}).items():
            if name in found:
                raise ValueError(f"{controller.primary.kind}: the gauge {name} is declared twice")
            found[name] = text
    return found


def alert_rules(controllers: Sequence[Registration]) -> list[dict[str, Any]]:
    """The alerting rules every registration declares (``alerts``), in order, as a
    PrometheusRule's group lists them. An alert name two of them declare is refused."""
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for controller in controllers:
        for alert in controller.alerts:
            if alert.name in seen:
                raise ValueError(
                    f"{controller.primary.kind}: the alert {alert.name} is declared twice"
                )
            seen.add(alert.name)
            rules.append(alert.rule())
    return rules


def _title(project: str) -> str:
    """``guestbook`` → ``Guestbook``, ``my-op`` → ``MyOp``: the operator's alerts' prefix."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_.]", project) if part)


def matching(names: Iterable[str]) -> str:
    """A PromQL regex matcher's string (``=~"..."``) matching exactly ``names``: each
    regex-escaped, then its backslashes escaped for the double-quoted PromQL string (a
    controller named ``guest-book`` is ``guest\\\\-book`` there; ``guest\\-book`` is an
    unknown escape sequence and the whole rule fails to load)."""
    return "|".join(re.escape(name) for name in names).replace("\\", "\\\\")


def _listing(controllers: Sequence[Registration]) -> str:
    """How a user lists the operator's objects: ``kubectl get <category>`` when every kind
    shares one, else its plurals."""
    kinds = [c.kind for c in controllers if c.custom]
    shared = set.intersection(*(set(k.categories) for k in kinds)) if kinds else set()
    what = min(shared) if shared else ",".join(dict.fromkeys(c.primary.plural for c in controllers))
    return f"kubectl get {what} -A -o wide"


def operator_alerts(
    identity: OperatorIdentity,
    controllers: Sequence[Registration],
    *,
    lease_duration: float | None = None,
) -> tuple[Alert, ...]:
    """The alerts every operator built on the SDK gets, over the runtime's metrics of its
    ``controllers`` (named ``<Project>...``): a controller that keeps failing to reconcile
    (15 minutes of errors), a workqueue that has items and processes none (a standby
    replica's is not counted), no replica holding the leader Lease (critical), an object
    of its kinds not up for 15 minutes (:func:`ready_metric`; only with kinds of its own),
    and a sharded operator's keys unassigned longer than a Lease (``lease_duration``
    seconds, default the operator's own default, :class:`~appstack.sdk.OperatorOptions`: a
    key waiting that long is not waiting for a gone shard's Lease to expire). Each series
    is the operator's own: its controllers' names, its Lease, its prefix."""
    if lease_duration is None:
        lease_duration = OperatorOptions().lease_duration
    title = _title(identity.project)
    names = matching(c.name for c in controllers)
    leader = f'leader_election_master_status{{name="{identity.lease_name}"}}'
    alerts = [
        Alert(
            f"{title}ReconcileErrors",
            "sum by (controller) (rate(controller_runtime_reconcile_errors_total"
            f'{{controller=~"{names}"}}[5m])) > 0',
            f"{identity.project} controller {{{{ $labels.controller }}}} keeps failing to "
            "reconcile",
            for_="15m",
            description="Reconcile errors for 15 minutes: see the operator's log and the "
            f"objects' Ready condition ({_listing(controllers)}).",
        ),
        Alert(
            f"{title}WorkqueueStuck",
            # A standby replica (leader_election_master_status 0) queues what its warm
            # cache sees and works on none of it until it leads: not a stuck queue.
            f'max by (name) (workqueue_depth{{name=~"{names}"}} unless on (instance) '
            f"({leader} == 0)) > 0 and sum by (name) "
            f'(rate(workqueue_work_duration_seconds_count{{name=~"{names}"}}[10m])) == 0',
            f"{identity.project} workqueue {{{{ $labels.name }}}} has items but processes none",
            for_="15m",
        ),
        Alert(
            f"{title}NoLeader",
            f"(max({leader}) or vector(0)) < 1",
            f"No {identity.project} operator replica holds the leader Lease: nothing reconciles",
            severity="critical",
        ),
    ]
    if any(c.custom for c in controllers):
        alerts.append(
            Alert(
                f"{title}ObjectNotReady",
                # ``max by``: one series per object when several replicas are scraped
                f"max by (kind, namespace, name) ({ready_metric(identity)}) == 0",
                "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} has not "
                "been Ready for 15 minutes",
                for_="15m",
                description="Its Ready condition and Events say why: kubectl describe -n "
                "{{ $labels.namespace }} {{ $labels.kind }} {{ $labels.name }}",
            )
        )
    alerts.append(
        Alert(
            f"{title}ShardKeysUnassigned",
            f"max by (resource) ({identity.metric_prefix}_shard_oldest_unassigned_seconds)"
            f" > {lease_duration:g}",
            "{{ $labels.resource }}: keys unassigned for {{ $value | humanizeDuration }}",
            for_="1m",
            description="Objects no shard reconciles, the oldest waiting longer than a "
            "lease. No Ready shard takes them: are the replicas running and their shard "
            f"Leases renewed (kubectl get leases -A -l {identity.key('shard-of')}), or are "
            "the coordinator's label patches refused (its log: label patch refused)? See "
            "docs/sharding.md.",
        )
    )
    return tuple(alerts)


def alerting_rules(
    identity: OperatorIdentity,
    controllers: Sequence[Registration],
    *,
    lease_duration: float | None = None,
) -> list[dict[str, Any]]:
    """Every alerting rule of the operator: :func:`operator_alerts`, then those its kinds
    declare (:func:`alert_rules`); an alert name two of them use is refused."""
    own = [a.rule() for a in operator_alerts(identity, controllers, lease_duration=lease_duration)]
    declared = alert_rules(controllers)
    taken = {rule["alert"] for rule in own} & {rule["alert"] for rule in declared}
    if taken:
        raise ValueError(f"the alert {min(taken)} is the operator's own: name yours otherwise")
    return [*own, *declared]


def _up(obj: dict[str, Any], wanted: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == wanted:
            return bool(condition.get("status") == "True")
    return False


def _samples(
    controller: Registration, ready: str, objects: Iterable[dict[str, Any]]
) -> Iterator[Sample]:
    kind, gauges = controller.primary.kind, controller.gauges
    for obj in objects:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        if controller.custom:  # any other kind has no ready condition of ours
            yield (
                ready,
                {"kind": kind, "namespace": namespace, "name": name},
                (1.0 if _up(obj, controller.ready_condition) else 0.0),
            )
        if gauges is not None:
            yield from gauges.samples(obj, {"namespace": namespace, "name": name})


def samples(
    controllers: Sequence[Registration],
    identity: OperatorIdentity,
    kind: str,
    objects: Iterable[dict[str, Any]],
) -> Iterator[Sample]:
    """Every sample the cached ``objects`` of ``kind`` give (pure; none for a kind that
    none of ``controllers`` registers)."""
    for controller in controllers:
        if controller.primary.kind == kind:
            yield from _samples(controller, ready_metric(identity), objects)
            return


class KindMetrics(Collector):
    """The gauges of :func:`families`, from the cache of every kind of ``controllers``."""

    def __init__(
        self, cache: Cache, controllers: Sequence[Registration], identity: OperatorIdentity
    ) -> None:
        self.cache = cache
        self.controllers = list(controllers)
        self.ready = ready_metric(identity)
        self.families = families(self.controllers, identity)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One family per name of :func:`families`; every object is read from the cache one
        at a time and its samples added at once (a scrape holds the samples, never the
        cache decoded)."""
        built: dict[str, tuple[GaugeMetricFamily, list[str]]] = {}
        for controller in self.controllers:
            objects = self.cache.iter_objects(controller.primary)
            for name, labels, value in _samples(controller, self.ready, objects):
                if name not in built:
                    keys = sorted(labels)
                    family = GaugeMetricFamily(name, self.families[name], labels=keys)
                    built[name] = family, keys
                family, keys = built[name]
                family.add_metric([labels[key] for key in keys], value)
        for name, help_text in self.families.items():
            yield built[name][0] if name in built else GaugeMetricFamily(name, help_text)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families, without reading the cache (prometheus_client calls this at
        registration)."""
        for name, help_text in self.families.items():
            yield GaugeMetricFamily(name, help_text)
