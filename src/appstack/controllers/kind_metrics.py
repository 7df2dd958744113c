"""Metrics about what users run, not the operator's internals, for every registered kind
(:data:`appstack.controllers.registry.ALL`): per object whether its kind's ready condition
is True (``appstack_object_ready``; the condition its registration names, e.g. an
EtcdCluster's ``Available``), and the kind's own gauges (its registration's ``gauges``:
an AppStack's members by state, an EtcdCluster's quorum, backups and database sizes, a
CronTab's last run; each kind's ``metrics`` module). Read at scrape time from the
manager's cache (no API request, nothing kept between scrapes) by :class:`KindMetrics`, a
Prometheus collector the operator registers (:mod:`appstack.operator`); the alerts
(:mod:`appstack.manifests.dashboard`) and the dashboards (:mod:`appstack.manifests.grafana`)
use them. :func:`samples` is pure and unit-tested. Nothing here names a kind: a kind's
metrics are declared with its controller.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from appstack.controllers.registry import ALL, by_kind
from appstack.runtime.cache import Cache
from appstack.sdk.kit.observers import Sample
from appstack.sdk.kit.registration import Registration

READY = "appstack_object_ready"


def _ready_help() -> str:
    """The readiness gauge's help, naming the kinds whose ready condition is not Ready."""
    others = [f"{c.kind.kind}: {c.ready_condition}" for c in ALL if c.ready_condition != "Ready"]
    which = f" ({', '.join(others)})" if others else ""
    return f"1 if the object's Ready condition{which} is True"


#: name → help; every gauge :func:`samples` may produce (also what the tests check against):
#: the readiness of every object, then each kind's own families.
FAMILIES: dict[str, str] = {
    READY: _ready_help(),
    **{name: text for c in ALL if c.gauges for name, text in c.gauges.families.items()},
}


def _up(obj: dict[str, Any], wanted: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == wanted:
            return bool(condition.get("status") == "True")
    return False


def _samples(controller: Registration, objects: Iterable[dict[str, Any]]) -> Iterator[Sample]:
    kind, gauges = controller.kind.kind, controller.gauges
    for obj in objects:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        who = {"kind": kind, "namespace": namespace, "name": name}
        yield READY, who, 1.0 if _up(obj, controller.ready_condition) else 0.0
        if gauges is not None:
            yield from gauges.samples(obj, {"namespace": namespace, "name": name})


def samples(kind: str, objects: Iterable[dict[str, Any]]) -> Iterator[Sample]:
    """Every sample one kind's cached ``objects`` give (pure; none for a kind not ours)."""
    controller = by_kind(kind)
    if controller is not None:
        yield from _samples(controller, objects)


class KindMetrics(Collector):
    """The gauges of :data:`FAMILIES`, from the cache of every registered kind."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One family per name of :data:`FAMILIES`; every object is read from the cache one
        at a time and its samples added at once (a scrape holds the samples, never the
        cache decoded)."""
        families: dict[str, tuple[GaugeMetricFamily, list[str]]] = {}
        for controller in ALL:
            objects = self.cache.iter_objects(controller.kind.resource)
            for name, labels, value in _samples(controller, objects):
                if name not in families:
                    keys = sorted(labels)
                    families[name] = GaugeMetricFamily(name, FAMILIES[name], labels=keys), keys
                family, keys = families[name]
                family.add_metric([labels[key] for key in keys], value)
        for name, help_text in FAMILIES.items():
            yield families[name][0] if name in families else GaugeMetricFamily(name, help_text)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families, without reading the cache (prometheus_client calls this at
        registration)."""
        for name, help_text in FAMILIES.items():
            yield GaugeMetricFamily(name, help_text)
