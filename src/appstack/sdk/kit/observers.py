"""What a kind tells the tools that look at its objects from outside its reconciler, declared
on its :class:`~appstack.sdk.kit.registration.Registration` beside the controller (each
optional; none changes how an object is reconciled):

* its ready condition — the condition type whose ``True`` means an object is up
  (:attr:`Registration.ready_condition <appstack.sdk.kit.registration.Registration>`,
  default ``Ready``): what a per-object readiness gauge, a GitOps tool's health check or a
  status view reads;
* :class:`Gauges` — the kind's own metric families and the pure function from one cached
  object to its samples, for a Prometheus collector reading the cache at scrape time;
* :class:`StatusView` — how a command line shows one object and what was made for it, and
  optionally its dependency graph (:class:`~appstack.sdk.kit.graphs.StatusGraph`);
* dashboard panels (:data:`Panel`) over its own metrics, on its kind's dashboard
  (:func:`~appstack.sdk.kit.dashboards.operator_dashboards`);
* :class:`Alert` — Prometheus alerting rules over its metrics, generated into the
  operator's PrometheusRule (:func:`~appstack.sdk.kit.kind_metrics.alert_rules`).

The operator that registers the kind decides what it does with them (appstack: its
per-kind collector, ``appstack status``, its Grafana dashboards, alerts and Argo CD health
checks; a scaffolded project: its collector, ``config/grafana/`` and
``config/prometheus/alerts.yaml``); a
registration that declares none of them is a controller as before. Pure declarations:
nothing here reads a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from appstack.runtime.client import Client
from appstack.sdk.kit.graphs import StatusGraph

#: One gauge sample: the family's name, its labels, its value.
Sample = tuple[str, dict[str, str], float]

#: One dashboard panel: title, unit (e.g. ``short``, ``bytes``, ``s``), PromQL expressions.
Panel = tuple[str, str, list[str]]

#: The kind's panels, given the label matchers that select the objects a dashboard shows
#: (e.g. ``namespace=~"$namespace", name=~"$name"``).
Panels = Callable[[str], Sequence[Panel]]

#: What a status view gathers of one object: a JSON-able tree.
StatusTree = dict[str, Any]


@dataclass(frozen=True)
class Gauges:
    """A kind's own gauges: ``families`` (name → help text) and ``samples``, the pure
    function from one object as cached (a dict) and the labels naming it (``namespace``,
    ``name``) to its samples of those families. A collector calls ``samples`` for every
    cached object of the kind at each scrape, so it reads one object and keeps nothing."""

    families: Mapping[str, str]
    samples: Callable[[dict[str, Any], dict[str, str]], Iterable[Sample]]


@dataclass(frozen=True)
class StatusView:
    """How a command line shows one object of the kind: ``collect`` reads what was made for
    the object (already fetched, a dict) into a :data:`StatusTree` — printed as JSON or YAML
    as it is — and ``render`` draws that tree as text (pure). ``graph`` (optional, pure)
    makes of the tree a :class:`~appstack.sdk.kit.graphs.StatusGraph` — what depends on
    what, in which waves, who blocks whom — for ``appstack status --graph`` and ``-o
    dot|mermaid``."""

    collect: Callable[[Client, dict[str, Any]], Awaitable[StatusTree]]
    render: Callable[[StatusTree], str]
    graph: Callable[[StatusTree], StatusGraph] | None = None


#: What Prometheus accepts as an alert's name (a metric name) and as its ``for``.
ALERT_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
PROMETHEUS_DURATION = re.compile(r"(?=\d)(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?")


@dataclass(frozen=True)
class Alert:
    """A Prometheus alerting rule over the kind's metrics (its :class:`Gauges`' families,
    the runtime's): ``name`` (the rule's ``alert``), ``expr`` (PromQL, true while it fires),
    ``for_`` (how long it must hold first: a Prometheus duration, ``5m``), the ``severity``
    label and the ``summary`` and ``description`` annotations (Prometheus templates such as
    ``{{ $labels.name }}``). ``ValueError`` for a name or duration Prometheus refuses, or
    an empty expression or summary."""

    name: str
    expr: str
    summary: str
    for_: str = "5m"
    severity: str = "warning"
    description: str = ""

    def __post_init__(self) -> None:
        if not ALERT_NAME.fullmatch(self.name):
            raise ValueError(f"alert {self.name!r}: name: not a Prometheus metric name")
        if not PROMETHEUS_DURATION.fullmatch(self.for_):
            raise ValueError(f"alert {self.name}: for_: {self.for_!r} is not a duration (5m)")
        for field in ("expr", "summary", "severity"):
            if not getattr(self, field).strip():
                raise ValueError(f"alert {self.name}: {field}: empty")

    def rule(self) -> dict[str, Any]:
        """The rule as a PrometheusRule's group lists it."""
        annotations = {"summary": self.summary}
        if self.description:
            annotations["description"] = self.description
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": annotations,
        }
